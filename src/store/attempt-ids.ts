/**
 * The external id of a webhook delivery attempt: `X-Webhook-Delivery`, and `id` in
 * `GET /webhooks/{id}/deliveries`. The log's row numbers stay inside the store: they count every
 * attempt of every webhook, so showing them would tell a client how much the registry sends.
 *
 * The id is a UUID version 7 (RFC 9562): the attempt's Unix milliseconds, then a 12-bit sequence,
 * then random bits. It tells no more than `attemptedAt` (listed beside it), and its text sorts as
 * the attempts were made, so `sort=id` stays a meaningful order (a text sort of row numbers put
 * "10" before "9"). Both backends make ids here, the running store and the migration of older rows.
 */
import { randomBytes, randomInt } from 'node:crypto';

/** Sequences are 12 bits; a new millisecond starts below half of them, so an id leaves no count behind. */
const SEQUENCE_MAX = 0xfff;
const SEQUENCE_START_MAX = 0x800;

/** What a generator gave last: later ids sort after it. */
export interface IdClock {
  ms: number;
  sequence: number;
}

/**
 * The UUID version 7 text of `ms` (Unix milliseconds, 48 bits), a 12-bit `sequence` and `random`
 * (at least 8 bytes, 62 bits used). Lower-case hex of fixed width: text order is (ms, sequence) order.
 */
export function uuidV7(ms: number, sequence: number, random: Uint8Array): string {
  if (random.length < 8) throw new RangeError('uuidV7 needs 8 random bytes');
  const time = Math.min(Math.max(0, Math.floor(ms)), 2 ** 48 - 1);
  const variant = 0x8000 | (((random[0]! << 8) | random[1]!) & 0x3fff);
  const hex = time.toString(16).padStart(12, '0') + (0x7000 | (sequence & SEQUENCE_MAX)).toString(16) + variant.toString(16) + Buffer.from(random.subarray(2, 8)).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The (ms, sequence) of the id after `last` for a time of `ms`: a later millisecond starts at `start`;
 * the same or an earlier one (a clock that stepped back, or several ids in one millisecond) takes the
 * next sequence of `last`, so every id sorts after the ones before it.
 */
export function nextClock(last: IdClock | undefined, ms: number, start: number): IdClock {
  if (last === undefined || ms > last.ms) return { ms, sequence: start };
  if (last.sequence < SEQUENCE_MAX) return { ms: last.ms, sequence: last.sequence + 1 };
  return { ms: last.ms + 1, sequence: 0 };
}

/** A generator of attempt ids, each sorting after the ones it gave before. */
export function attemptIdGenerator(): (at: Date) => string {
  let last: IdClock | undefined;
  return (at) => {
    // An unreadable time (a damaged row) still gets an id, after the ones before it.
    const ms = Number.isFinite(at.getTime()) ? at.getTime() : 0;
    last = nextClock(last, ms, randomInt(SEQUENCE_START_MAX));
    return uuidV7(last.ms, last.sequence, randomBytes(8));
  };
}

/** The process's generator: the ids of this process's attempts sort as they were made. */
export const newAttemptId = attemptIdGenerator();
