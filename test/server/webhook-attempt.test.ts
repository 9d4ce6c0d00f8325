/**
 * What one webhook attempt comes to, and the signature headers it carries, without a server
 * (server/webhooks/attempt.ts, server/webhooks/signing.ts).
 */
import { describe, expect, it } from 'vitest';

import { attemptResult, stateAfter } from '../../src/server/webhooks/attempt.js';
import { signatureHeaders, verifyWebhookSignature } from '../../src/server/webhooks/signing.js';

describe('a webhook attempt', () => {
  it.each([
    [{ status: 204 }, false, { kind: 'delivered', status: 204, error: null }],
    [{ status: 410 }, false, { kind: 'gone', status: 410, error: 'HTTP 410: the receiver is gone; the webhook was switched off' }],
    [{ status: 302 }, false, { kind: 'retry', status: 302, error: 'HTTP 302: redirects are not followed' }],
    [{ status: 503, retryAfterMs: 120_000 }, false, { kind: 'retry', status: 503, error: 'HTTP 503', retryAfterMs: 120_000 }],
    [{ error: 'no HTTP answer' }, false, { kind: 'retry', status: null, error: 'no HTTP answer' }],
    [{ error: 'cancelled: the registry server is closing' }, true, { kind: 'cancelled', status: null, error: 'cancelled: the registry server is closing' }],
    [{ refused: true, error: 'refused: 127.0.0.1 is a loopback address' }, false, { kind: 'refused', status: null, error: 'refused: 127.0.0.1 is a loopback address' }],
  ] as const)('%o (closing: %s) comes to %o', (outcome, closing, expected) => {
    expect(attemptResult(outcome, closing)).toEqual(expected);
  });

  it('is retried until the attempts run out, then failed; a closing server leaves it due at once', () => {
    const now = new Date('2026-05-01T12:00:00Z');
    const wait = (retry: number) => retry * 10_000;
    const retry = attemptResult({ status: 500 }, false);
    expect(stateAfter(retry, 2, 3, now, wait)).toEqual({ attempts: 2, status: 500, error: 'HTTP 500', state: 'pending', nextAttemptAt: new Date('2026-05-01T12:00:20Z') });
    expect(stateAfter(retry, 3, 3, now, wait)).toMatchObject({ state: 'failed', attempts: 3 });
    expect(stateAfter(attemptResult({ error: 'cancelled' }, true), 1, 3, now, wait)).toMatchObject({ state: 'pending', nextAttemptAt: now });
  });
});

describe('the signature headers', () => {
  const body = Buffer.from('{"event":"template.published"}');

  it('sign with the secret, and with the replaced one only while a rotation overlaps', () => {
    const rotating = signatureHeaders(body, 'new-secret', 'old-secret');
    expect(verifyWebhookSignature(body, rotating['X-Webhook-Signature'] ?? '', 'new-secret')).toBe(true);
    expect(verifyWebhookSignature(body, rotating['X-Webhook-Signature-Previous'] ?? '', 'old-secret')).toBe(true);
    expect(Object.keys(signatureHeaders(body, 'new-secret', undefined))).toEqual(['X-Webhook-Signature']);
  });
});
