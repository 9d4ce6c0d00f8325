/**
 * The signature of a delivery and its check by a receiver. The signature covers the body only, not
 * the timestamp header: it keeps GitHub's X-Hub-Signature-256 format (existing receivers and
 * GitHub-compatible libraries verify it as it is); the body carries its own signed `timestamp`.
 * The X-Webhook-Timestamp header lets a receiver refuse a late attempt (`toleranceSeconds`); since it
 * is not signed, it is a freshness check, not a proof against a replay. During a secret rotation's
 * overlap the replaced secret signs too (X-Webhook-Signature-Previous).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The timestamp tolerance `verifyWebhookSignature` applies when given a timestamp without one. */
export const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 300;

/**
 * `sha256=<hex HMAC-SHA256 of body, keyed by secret>`: the X-Webhook-Signature of a delivery (the
 * format of GitHub's X-Hub-Signature-256). Pass the body's exact bytes (a string is taken as UTF-8).
 */
export function signWebhookPayload(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** `signWebhookPayload` with the arguments the other way round (kept for existing callers). */
export function signWebhookBody(body: string | Buffer, secret: string): string {
  return signWebhookPayload(secret, body);
}

export interface VerifyWebhookOptions {
  /** The X-Webhook-Timestamp header (Unix seconds, as text or a number): refused when missing, unreadable or stale. */
  timestamp?: string | number | undefined;
  /** How far (either way) the timestamp may be from `now`; default 300 s. Only with `timestamp`. */
  toleranceSeconds?: number;
  /** The receiver's clock; default the current time. */
  now?: Date | number;
}

/**
 * For receivers: true when `header` (the X-Webhook-Signature value) is the signature of `body`
 * with `secret`. Pass the body exactly as received (the raw bytes, or their UTF-8 text), not a
 * re-serialized parse of it. The comparison takes the same time whatever the header holds.
 *
 * `header` may be a list: the X-Webhook-Signature and X-Webhook-Signature-Previous values (either
 * missing) during a secret rotation; true when one of them is the signature with `secret`.
 *
 * With `options` (`{ timestamp, toleranceSeconds, now }`), also false unless `timestamp` (the
 * X-Webhook-Timestamp header, Unix seconds) is within `toleranceSeconds` (default 300) of `now`.
 * The timestamp is not covered by the signature (see the top of this module): this refuses late or
 * stale deliveries; deduplicate on X-Webhook-Id to process each delivery once.
 */
export function verifyWebhookSignature(body: string | Buffer, header: string | readonly (string | undefined)[], secret: string, options?: VerifyWebhookOptions): boolean {
  if (typeof secret !== 'string') return false;
  const headers = typeof header === 'string' ? [header] : Array.isArray(header) ? (header as readonly unknown[]) : [];
  const expected = createHmac('sha256', secret).update(body).digest();
  // Every header compared (no early exit), so which one matched does not change the timing.
  let signed = false;
  for (const value of headers) {
    const match = typeof value === 'string' ? /^\s*sha256=([0-9a-fA-F]{64})\s*$/.exec(value) : null;
    const presented = Buffer.from(match?.[1] ?? '0'.repeat(64), 'hex');
    // Compare even for a malformed header, so its shape does not change the timing much.
    const same = timingSafeEqual(presented, expected);
    signed = (same && match !== null) || signed;
  }
  if (!signed || options === undefined) return signed;
  return timestampFresh(options);
}

function timestampFresh(options: VerifyWebhookOptions): boolean {
  const { timestamp } = options;
  const text = typeof timestamp === 'number' ? String(timestamp) : (timestamp ?? '').trim();
  if (!/^\d{1,15}$/.test(text)) return false;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TIMESTAMP_TOLERANCE_SECONDS;
  const now = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime();
  return Math.abs(now / 1000 - Number(text)) <= tolerance;
}

/**
 * The signature headers of one attempt: X-Webhook-Signature with `secret`, and while a rotation
 * overlaps (`previousSecret`), X-Webhook-Signature-Previous with the replaced one.
 */
export function signatureHeaders(body: Buffer, secret: string, previousSecret: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'X-Webhook-Signature': signWebhookPayload(secret, body) };
  if (previousSecret !== undefined) headers['X-Webhook-Signature-Previous'] = signWebhookPayload(previousSecret, body);
  return headers;
}
