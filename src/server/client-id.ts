import { createHash } from 'node:crypto';

import type { FastifyRequest } from 'fastify';

/**
 * An opaque id of the request's client address (after `trustProxy`), to count one download per
 * client per day without storing addresses.
 */
export function clientId(request: FastifyRequest): string {
  return createHash('sha256').update(`template-registry client ${request.ip}`).digest('base64url').slice(0, 22);
}
