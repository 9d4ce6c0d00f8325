import { compareText } from './listing.js';

/**
 * JSON with object keys sorted (arrays keep their order): equal content gives equal text whatever
 * the key order of the value, so it can be compared or hashed.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => compareText(a, b)))
      : v,
  );
}
