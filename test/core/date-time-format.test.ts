import { fullFormats } from 'ajv-formats/dist/formats.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { isPlainUtcDateTime, withPlainUtcDateTime } from '../../src/core/date-time-format.js';

const full = fullFormats['date-time'] as { validate: (value: string) => boolean };
const fast = withPlainUtcDateTime(full);

describe('the date-time format', () => {
  it('answers as ajv-formats does for times near the form toISOString writes, one character changed or not', () => {
    const time = fc.date({ min: new Date(-62_000_000_000_000), max: new Date(250_000_000_000_000), noInvalidDate: true }).map((date) => date.toISOString());
    const changed = fc.tuple(time, fc.nat(), fc.constantFrom('0', '1', '2', '3', '5', '9', '-', ':', '.', 'T', 't', 'Z', 'z', ' ', '+', 'x', '60', '29', '31', '00', '')).map(([text, at, by]) => {
      const index = at % text.length;
      return `${text.slice(0, index)}${by}${text.slice(index + 1)}`;
    });
    fc.assert(
      fc.property(fc.oneof(time, changed, fc.string({ maxLength: 30 })), (text) => {
        expect(fast.validate(text)).toBe(full.validate(text));
      }),
      { numRuns: 20_000 },
    );
  });

  it('knows leap years and the days of each month, and leaves leap seconds, offsets and lower case to ajv-formats', () => {
    const cases = [
      '2024-02-29T00:00:00.000Z',
      '2023-02-29T00:00:00.000Z',
      '2000-02-29T12:00:00Z',
      '1900-02-29T12:00:00Z',
      '2026-04-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-00-10T00:00:00Z',
      '2026-12-31T23:59:60Z',
      '2026-12-31T24:00:00Z',
      '2026-03-01t12:00:00z',
      '2026-03-01T12:00:00+01:00',
      '2026-03-01T12:00:00.Z',
      '2026-03-01T12:00:00.123456789Z',
      '2026-03-01T12:00:00',
      '2026-03-01',
    ];
    for (const text of cases) expect({ text, valid: fast.validate(text) }).toEqual({ text, valid: full.validate(text) });
    expect(isPlainUtcDateTime('2024-02-29T00:00:00.000Z')).toBe(true);
    expect(isPlainUtcDateTime('2026-12-31T23:59:60Z')).toBe(false);
    expect(fast.validate('2026-12-31T23:59:60Z')).toBe(true);
  });
});
