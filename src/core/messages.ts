import type { ErrorObject } from 'ajv';

import { escapePointerSegment } from './json-source.js';

/** One broken rule, in plain words, at a JSON pointer inside a document. */
export interface RuleViolation {
  pointer: string;
  message: string;
  /** Upper-case rule code: REQUIRED, MIN_LENGTH, PATTERN, ENUM, TYPE, FORMAT, INVALID_RANGE, UNKNOWN_FIELD, ... */
  code: string;
}

const FORMAT_WORDS: Record<string, { message: string; code: string }> = {
  email: { message: 'must be an e-mail address', code: 'FORMAT' },
  'semver-range': { message: 'must be a valid version range such as ">=1.2.0 <2"', code: 'INVALID_RANGE' },
  regex: { message: 'must be a valid regular expression', code: 'INVALID_REGEX' },
  'date-time': { message: 'must be an ISO 8601 timestamp', code: 'FORMAT' },
  uri: { message: 'must be an absolute URL', code: 'FORMAT' },
};

function got(value: unknown): string {
  if (value === undefined) return '';
  const text = JSON.stringify(value);
  return ` (got ${text.length > 60 ? `${text.slice(0, 57)}...` : text})`;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function customMessage(error: ErrorObject): string | undefined {
  const parent = error.parentSchema as { 'x-messages'?: Record<string, string> } | undefined;
  return parent?.['x-messages']?.[error.keyword];
}

function describeError(error: ErrorObject): RuleViolation | undefined {
  const params = error.params as Record<string, unknown>;
  const value: unknown = error.data;
  const custom = customMessage(error);
  const at = error.instancePath;
  switch (error.keyword) {
    case 'required':
      return { pointer: `${at}/${escapePointerSegment(String(params.missingProperty))}`, message: 'is required', code: 'REQUIRED' };
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return {
        pointer: `${at}/${escapePointerSegment(String(params.additionalProperty ?? params.unevaluatedProperty))}`,
        message: 'is not a known field (check the spelling)',
        code: 'UNKNOWN_FIELD',
      };
    case 'minLength':
      return { pointer: at, message: `${custom ?? `must be at least ${String(params.limit)} characters long`}${got(value)}`, code: 'MIN_LENGTH' };
    case 'maxLength':
      return { pointer: at, message: `${custom ?? `must be at most ${String(params.limit)} characters long`}${got(value)}`, code: 'MAX_LENGTH' };
    case 'pattern':
      return { pointer: at, message: `${custom ?? `must match the pattern ${String(params.pattern)}`}${got(value)}`, code: 'PATTERN' };
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ');
      return { pointer: at, message: `${custom ?? `must be one of ${allowed}`}${got(value)}`, code: 'ENUM' };
    }
    case 'const':
      return { pointer: at, message: `${custom ?? `must be ${JSON.stringify(params.allowedValue)}`}${got(value)}`, code: 'ENUM' };
    case 'type': {
      const expected = String(params.type).split(',').map(article).join(' or ');
      return { pointer: at, message: `${custom ?? `must be ${expected}`} (got ${typeOf(value)})`, code: 'TYPE' };
    }
    case 'format': {
      const words = FORMAT_WORDS[String(params.format)] ?? { message: `must be a valid ${String(params.format)}`, code: 'FORMAT' };
      return { pointer: at, message: `${custom ?? words.message}${got(value)}`, code: words.code };
    }
    case 'minItems':
      return { pointer: at, message: custom ?? `must have at least ${String(params.limit)} item(s)`, code: 'MIN_ITEMS' };
    case 'maxItems':
      return { pointer: at, message: custom ?? `must have at most ${String(params.limit)} item(s)`, code: 'MAX_ITEMS' };
    case 'uniqueItems':
      return { pointer: at, message: custom ?? `must not repeat items (items ${String(params.j)} and ${String(params.i)} are equal)`, code: 'UNIQUE_ITEMS' };
    case 'minimum':
    case 'exclusiveMinimum':
      return { pointer: at, message: `${custom ?? `must be ${String(params.comparison)} ${String(params.limit)}`}${got(value)}`, code: 'MINIMUM' };
    case 'maximum':
    case 'exclusiveMaximum':
      return { pointer: at, message: `${custom ?? `must be ${String(params.comparison)} ${String(params.limit)}`}${got(value)}`, code: 'MAXIMUM' };
    case 'propertyNames':
      return undefined; // the nested error on the name itself says what is wrong
    case 'if':
      return undefined; // the nested `then` error says what is wrong
    default:
      return { pointer: at, message: custom ?? error.message ?? 'is invalid', code: error.keyword.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase() };
  }
}

/**
 * Turns ajv's errors into plain-words violations, one per pointer and rule.
 * Errors about a property name (from `propertyNames`) point at that property.
 */
export function describeSchemaErrors(errors: readonly ErrorObject[]): RuleViolation[] {
  const seen = new Set<string>();
  const result: RuleViolation[] = [];
  for (const error of errors) {
    const params = error.params as Record<string, unknown>;
    const described = describeError(error);
    if (!described) continue;
    if (typeof params.propertyName === 'string') {
      described.pointer = `${error.instancePath}/${escapePointerSegment(params.propertyName)}`;
      described.message = `name ${described.message}`;
    }
    const key = `${described.pointer}\u0000${described.code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    result.push(described);
  }
  return result;
}
