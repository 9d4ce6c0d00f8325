/**
 * The `date-time` format of the schemas (ajv-formats' full one), answered first without a regular
 * expression for the form this project writes (`toISOString`: `2026-03-01T12:00:00.000Z`). A build
 * checks two such times per entry; ajv-formats splits each and runs two regular expressions, which at
 * 100,000 entries allocated some 150 MB. A time not in that form, or not plainly valid in it (a
 * leap second), gets ajv-formats' own answer, so the format accepts exactly what it did.
 */

/** The digit at `index` of `text` as a number, or -1. */
function digitAt(text: string, index: number): number {
  const code = text.charCodeAt(index) - 48;
  return code >= 0 && code <= 9 ? code : -1;
}

/** The number of `count` digits from `index`, or -1 when one is not a digit. */
function numberAt(text: string, index: number, count: number): number {
  let value = 0;
  for (let offset = 0; offset < count; offset++) {
    const digit = digitAt(text, index + offset);
    if (digit < 0) return -1;
    value = value * 10 + digit;
  }
  return value;
}

const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** True for `YYYY-MM-DDTHH:MM:SS[.fraction]Z` with a real day and a time within the day (no leap second). */
export function isPlainUtcDateTime(text: string): boolean {
  if (text.length < 20 || text.charCodeAt(text.length - 1) !== 90 /* Z */) return false;
  if (text[4] !== '-' || text[7] !== '-' || text[10] !== 'T' || text[13] !== ':' || text[16] !== ':') return false;
  const year = numberAt(text, 0, 4);
  const month = numberAt(text, 5, 2);
  const day = numberAt(text, 8, 2);
  const hour = numberAt(text, 11, 2);
  const minute = numberAt(text, 14, 2);
  const second = numberAt(text, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : (DAYS[month] as number))) return false;
  if (text.length === 20) return true;
  // A fraction: a dot and at least one digit before the Z.
  if (text[19] !== '.' || text.length < 22) return false;
  for (let index = 20; index < text.length - 1; index++) if (digitAt(text, index) < 0) return false;
  return true;
}

/** `full` (ajv-formats' date-time definition: a validate function and a compare), answering plain UTC times itself. */
export function withPlainUtcDateTime<T>(full: T): T {
  const definition = full as { validate?: unknown };
  if (typeof definition.validate !== 'function') throw new Error('ajv-formats\' date-time format has no validate function');
  const validate = (definition.validate as (value: string) => boolean).bind(definition);
  return { ...definition, validate: (value: string): boolean => isPlainUtcDateTime(value) || validate(value) } as T;
}
