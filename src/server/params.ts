/**
 * The path parameters every template route shares, so that a route cannot take an id or version
 * the manifest rules would never allow (a 400 in the envelope, not a 414 or a lookup).
 */
import { MAX_NAME_LENGTH, VERSION_PATTERN, VERSION_RULE } from '../core/versions.js';

/** A template id as a path parameter: at most as long as a manifest name may be. */
export const TEMPLATE_ID_PARAM = { type: 'string', minLength: 1, maxLength: MAX_NAME_LENGTH } as const;
/** A version as a path parameter: one the version rule allows (`01.0.0` is a 400, never a lookup); an unknown one is a 404. */
export const VERSION_PARAM = { type: 'string', minLength: 1, maxLength: 256, pattern: VERSION_PATTERN.source, 'x-messages': { pattern: VERSION_RULE } } as const;

export const TEMPLATE_PARAMS = { type: 'object', required: ['id'], properties: { id: TEMPLATE_ID_PARAM } } as const;
export const VERSION_PARAMS = { type: 'object', required: ['id', 'version'], properties: { id: TEMPLATE_ID_PARAM, version: VERSION_PARAM } } as const;

/** The longest path parameter the router hands on (fastify's default of 100 answers 414 to a valid 214-character id). */
export const MAX_PARAM_LENGTH = 1024;
