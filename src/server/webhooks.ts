/**
 * Outgoing webhooks (the spec's "Webhook delivery pattern"). Events (`WEBHOOK_EVENTS`) are written
 * to a durable outbox in the storage, one delivery per active webhook subscribed to the event, in
 * the transaction of the change that raised them (a version's commit for `template.published`); the
 * dispatcher delivers due rows in the background and keeps their state in the outbox, so a
 * delivery survives a receiver that is down and a server restart (on start it resumes due rows).
 *
 * Each attempt POSTs the delivery's body `{ event, timestamp, data }` (the same bytes on every
 * attempt) as JSON with:
 *
 *     X-Webhook-Id: <the delivery's external id, a UUID, the same on every attempt: deduplicate on it>
 *     X-Webhook-Timestamp: <Unix seconds when this attempt was sent>
 *     X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes, keyed by the secret>
 *     X-Webhook-Event: <the event>
 *     X-Webhook-Delivery: <this attempt's external id in the log: a UUID version 7, time-ordered>
 *     X-Webhook-Signature-Previous: <while a rotated secret overlaps: the same, keyed by the replaced secret>
 *
 * A secret rotation (`PUT`/`PATCH /webhooks/{id}` with a new `secret`) signs with the new secret at
 * once, and for the overlap it asks for (default one day) with the replaced one too, in
 * X-Webhook-Signature-Previous: a receiver still holding the old secret checks that header
 * (`verifyWebhookSignature` takes both headers), so the receiver's secret can be changed at any
 * time within the overlap without a delivery failing its check.
 *
 * The signature covers the body only, not the timestamp header: it keeps GitHub's
 * X-Hub-Signature-256 format (existing receivers and GitHub-compatible libraries verify it as it
 * is); the body carries its own signed `timestamp` (when the event happened). The timestamp header
 * lets a receiver refuse a late attempt (`verifyWebhookSignature`'s `toleranceSeconds`); since it is
 * not signed, it is a freshness check, not a proof against a replay by someone who captured a
 * delivery.
 *
 * Attempts: a 2xx answer delivers; a 410 Gone disables the webhook (active=false) and fails the
 * delivery; anything else (network error, time-out of 10 s, 3xx since redirects are not followed,
 * other statuses) is retried with exponential backoff and jitter (core/retry.ts, `Retry-After`
 * honoured): by default 10 attempts, the first retry after about 10 s, doubling to at most 1 h
 * between attempts (about 1.5 h in all), after which the delivery is marked failed. Every attempt is
 * recorded in the webhook store's log: started before the request, and its outcome written together
 * with the delivery's new state (`recordAttemptOutcome`, one transaction), so an attempt logged as
 * delivered is never sent again. A process that dies during the request leaves the delivery leased:
 * it is sent again when the lease ends (at least once). Receivers check the signature with
 * `verifyWebhookSignature`.
 *
 * Where: a delivery goes only to addresses `webhook-targets.ts` allows (public ones, and the
 * operator's allowlist), the host resolved and checked at every attempt and the connection made to
 * a checked address. An attempt without an HTTP answer is logged with one error whatever happened
 * (`noAnswerError`): the log never tells a closed port from an open one.
 *
 * Order: a webhook gets its deliveries one at a time, in the order their events were written to the
 * outbox (the store only lets the oldest pending delivery of a webhook be claimed). A delivery being
 * retried holds back the later ones of its webhook until it is delivered, failed or cancelled; other
 * webhooks are not held back.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import { errorMessage } from '../core/errors.js';
import { EgressRefusedError, type GuardedRequest } from '../core/egress.js';
import { parseRetryAfter, retryDelay } from '../core/retry.js';
import { previousSecretAt } from '../store/records.js';
import type { DeliveryRecord, OutboxDelivery, OutboxUpdate, StoredWebhook, WebhookEventRecord, WebhookStore } from '../store/types.js';
import { WebhookTargets, type WebhookTargetOptions } from './webhook-targets.js';

/** The events this registry sends. */
export const WEBHOOK_EVENTS = ['template.published', 'template.deprecated', 'template.yanked', 'registry.updated'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const WEBHOOK_USER_AGENT = 'template-registry';
/** Attempts of one delivery before it is marked failed. */
export const DEFAULT_MAX_ATTEMPTS = 10;
/** The wait before the first retry (then doubled each time, ±25% jitter). */
export const DEFAULT_MIN_RETRY_DELAY_MS = 10_000;
/** No wait between two attempts is longer (a `Retry-After` included). */
export const DEFAULT_MAX_RETRY_DELAY_MS = 3_600_000;
export const DEFAULT_TIMEOUT_MS = 10_000;
/** How long closing the server waits for attempts in flight before cancelling them. */
export const DEFAULT_CLOSE_GRACE_MS = 2000;
/** How often the outbox is looked at when nothing is due sooner (rows written by another process). */
export const DEFAULT_POLL_INTERVAL_MS = 30_000;
/** Attempts kept per webhook in the delivery log; older ones are removed. */
export const DELIVERIES_KEPT = 200;
/** The timestamp tolerance `verifyWebhookSignature` applies when given a timestamp without one. */
export const DEFAULT_TIMESTAMP_TOLERANCE_SECONDS = 300;
/** A receiver's answer body is read (and thrown away) up to this size. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Deliveries attempted at once, at most. */
const BATCH = 32;

/** The body of a delivery. */
export interface WebhookPayload<T = unknown> {
  event: string;
  timestamp: string;
  data: T;
}

/** A webhook as clients see it: without its secret. */
export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  active: boolean;
  createdAt: string;
}

/** A delivery attempt as clients see it. */
export interface DeliveryView {
  /** The attempt's external id (X-Webhook-Delivery): a UUID version 7, so its text sorts as the attempts were made. */
  id: string;
  /** The external id of the delivery the attempt belongs to (X-Webhook-Id); null for attempts logged before the outbox. */
  deliveryId: string | null;
  event: string;
  status: number | null;
  attemptedAt: string;
  error: string | null;
}

export function publicWebhook(webhook: StoredWebhook): WebhookView {
  return { id: webhook.id, url: webhook.url, events: [...webhook.events], active: webhook.active, createdAt: webhook.createdAt };
}

export function publicDelivery(delivery: DeliveryRecord): DeliveryView {
  return {
    id: delivery.id,
    deliveryId: delivery.deliveryId,
    event: delivery.event,
    status: delivery.status,
    attemptedAt: delivery.attemptedAt,
    error: delivery.error,
  };
}

// ---------------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Not delivering to the server itself
// ---------------------------------------------------------------------------------------------

function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function isLoopback(host: string): boolean {
  return (
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '::1' ||
    /^127\.\d+\.\d+\.\d+$/.test(host) ||
    /^::ffff:(127\.|7f[0-9a-f]{2}:)/.test(host)
  );
}

const UNSPECIFIED = new Set(['0.0.0.0', '::', '']);

/**
 * True when `target` names this registry server: the origin of its public URL, or an address it
 * listens on (a loopback name for a loopback or wildcard binding on the same port). Host names
 * are not resolved, so this is a guard against mistakes, not a network policy.
 */
export function pointsAtSelf(target: URL, publicUrl: string, listening: readonly (AddressInfo | string)[] = []): boolean {
  const host = normalizeHost(target.hostname);
  const port = portOf(target);
  try {
    const self = new URL(publicUrl);
    if (normalizeHost(self.hostname) === host && portOf(self) === port) return true;
  } catch {
    // no usable public URL
  }
  for (const address of listening) {
    if (typeof address === 'string' || address.port !== port) continue;
    const bound = normalizeHost(address.address);
    if (bound === host) return true;
    if ((UNSPECIFIED.has(bound) || isLoopback(bound)) && (isLoopback(host) || UNSPECIFIED.has(host))) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// One HTTP attempt
// ---------------------------------------------------------------------------------------------

interface AttemptOutcome {
  /** HTTP status of the answer; undefined when there was none. */
  status?: number;
  /** The answer's Retry-After, in ms. */
  retryAfterMs?: number;
  error?: string;
  /** The address rule refused the host: never sent, not retried. */
  refused?: boolean;
  /** What the network said, for the server's log only (the delivery log never tells a closed port from an open one). */
  detail?: string;
}

function networkError(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (error as NodeJS.ErrnoException).code;
  const message = cause instanceof Error ? cause.message : errorMessage(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * The delivery log's one error for an attempt that got no HTTP answer, whatever the reason: a
 * refused connection, a reset, a name that does not resolve, a time-out. Telling them apart would
 * let whoever registers webhooks map which ports of a network are open.
 */
export function noAnswerError(timeoutMs: number): string {
  return `no HTTP answer: the receiver could not be reached or did not answer within ${timeoutMs} ms`;
}

/** Reads and drops an answer body, at most `MAX_RESPONSE_BYTES` of it. */
async function discardBody(response: Response): Promise<void> {
  if (!response.body) return;
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let received = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      received += value.byteLength;
      if (received > MAX_RESPONSE_BYTES) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    // the status is what counts; a body cut short changes nothing
  }
}

/** POSTs `body` once through `send` (which connects only to allowed addresses), without following redirects, within `timeoutMs`; `cancel` aborts it. */
async function post(send: GuardedRequest, url: URL, headers: Record<string, string>, body: Buffer, timeoutMs: number, cancel: AbortSignal): Promise<AttemptOutcome> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const response = await send(url, { method: 'POST', headers, body, signal: AbortSignal.any([timeout, cancel]) });
    await discardBody(response);
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after') ?? undefined);
    return { status: response.status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  } catch (error) {
    if (error instanceof EgressRefusedError) return { refused: true, error: `refused: ${error.message}` };
    if (cancel.aborted) return { error: 'cancelled: the registry server is closing' };
    return { error: noAnswerError(timeoutMs), detail: timeout.aborted ? `timed out after ${timeoutMs} ms` : networkError(error) };
  }
}

// ---------------------------------------------------------------------------------------------
// The dispatcher
// ---------------------------------------------------------------------------------------------

export interface WebhookLogger {
  warn(details: object, message: string): void;
}

export interface WebhookDispatcherOptions extends WebhookTargetOptions {
  store: WebhookStore;
  /** The server's public URL: webhooks pointing at it are never called. */
  publicUrl: string;
  /** The addresses the server listens on (fastify's `app.addresses()`), for the same guard. */
  selfAddresses?: () => readonly (AddressInfo | string)[];
  /** Attempts of one delivery before it is marked failed; default 10. */
  maxAttempts?: number;
  /** The wait before the first retry, doubled for each next one (±25% jitter); default 10 000 ms. */
  minRetryDelayMs?: number;
  /** The longest wait between two attempts; default 1 h. */
  maxRetryDelayMs?: number;
  /**
   * Exact waits before the second, third, ... attempt, in place of the backoff (and of
   * `maxAttempts`: `retryDelaysMs.length + 1` attempts). For tests.
   */
  retryDelaysMs?: readonly number[];
  /** Time limit of one attempt, in ms; default 10 000. */
  timeoutMs?: number;
  /** How long `close()` lets attempts in flight finish before cancelling them; default 2000 ms. */
  closeGraceMs?: number;
  /** How often the outbox is read when nothing is due sooner; default 30 s. */
  pollIntervalMs?: number;
  logger?: WebhookLogger;
  now?: () => Date;
  /** The jitter's random source (tests). */
  random?: () => number;
}

/** What one attempt came to. */
interface AttemptResult {
  status: number | null;
  error: string | null;
  retryAfterMs?: number;
  /** delivered (2xx), refused (never to be sent), gone (410), cancelled (the server is closing), retry. */
  kind: 'delivered' | 'refused' | 'gone' | 'cancelled' | 'retry';
}

/**
 * The state of a delivery after its attempt number `attempts` came to `result` at `now`;
 * `retryWait(n, retryAfterMs)` is the wait before retry n.
 */
function stateAfter(result: AttemptResult, attempts: number, maxAttempts: number, now: Date, retryWait: (retry: number, retryAfterMs: number | undefined) => number): OutboxUpdate {
  const outcome = { attempts, status: result.status, error: result.error };
  switch (result.kind) {
    case 'delivered':
      return { ...outcome, state: 'delivered' };
    case 'refused':
    case 'gone':
      return { ...outcome, state: 'failed' };
    case 'cancelled':
      // The server is closing: the next start sends it again.
      return { ...outcome, state: 'pending', nextAttemptAt: now };
    case 'retry':
      if (attempts >= maxAttempts) return { ...outcome, state: 'failed' };
      return { ...outcome, state: 'pending', nextAttemptAt: new Date(now.getTime() + retryWait(attempts, result.retryAfterMs)) };
  }
}

/**
 * Delivers the webhook outbox in the background. `start()` resumes due deliveries (those a previous
 * run left included) and keeps an eye on the outbox; `enqueue` writes an event to it and `kick`
 * wakes the loop after deliveries were written elsewhere (in a store transaction). `close` stops new
 * attempts and retries, lets attempts in flight finish for a short grace period, then cancels them
 * (each cancelled attempt is recorded, and its delivery stays pending for the next start).
 */
export class WebhookDispatcher {
  private readonly store: WebhookStore;
  private readonly publicUrl: string;
  private readonly selfAddresses: () => readonly (AddressInfo | string)[];
  private readonly retryDelaysMs: readonly number[] | undefined;
  private readonly maxAttempts: number;
  private readonly minRetryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly timeoutMs: number;
  private readonly closeGraceMs: number;
  private readonly pollIntervalMs: number;
  private readonly logger: WebhookLogger | undefined;
  /** The dispatcher's clock: what a delivery's time, and a secret rotation's overlap, are counted on. */
  readonly now: () => Date;
  private readonly random: () => number;
  /** Where deliveries may go: the rule registration applies too (`POST /webhooks`). */
  readonly targets: WebhookTargets;

  private started = false;
  private closing = false;
  private closed: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private again = false;
  /** Attempts running, by delivery id. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly cancel = new AbortController();

  constructor(options: WebhookDispatcherOptions) {
    this.store = options.store;
    this.publicUrl = options.publicUrl;
    this.selfAddresses = options.selfAddresses ?? (() => []);
    this.retryDelaysMs = options.retryDelaysMs ? [...options.retryDelaysMs] : undefined;
    this.maxAttempts = this.retryDelaysMs ? this.retryDelaysMs.length + 1 : Math.max(1, options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS);
    this.minRetryDelayMs = options.minRetryDelayMs ?? DEFAULT_MIN_RETRY_DELAY_MS;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? DEFAULT_MAX_RETRY_DELAY_MS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.closeGraceMs = options.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.logger = options.logger;
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? Math.random;
    this.targets = new WebhookTargets({
      ...(options.allowPrivate ? { allowPrivate: options.allowPrivate } : {}),
      ...(options.resolve ? { resolve: options.resolve } : {}),
    });
  }

  /** Attempts running now. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Starts delivering: the due deliveries of the outbox at once (a previous run's too), later ones when due. */
  start(): void {
    if (this.started || this.closing) return;
    this.started = true;
    this.kick();
  }

  /**
   * Writes `event` with `data` to the outbox, one delivery per active webhook subscribed to it, and
   * delivers them in the background. Never throws (a failure to write is logged); resolves with the
   * deliveries written. The way to raise an event outside a store transaction (the lifecycle routes:
   * `context.webhooks.enqueue('template.deprecated', entry)`). A change stored in a transaction writes
   * its deliveries in it (`commitVersion`'s `webhookEvents`) and then calls `kick()`.
   */
  async enqueue(event: WebhookEvent, data: unknown): Promise<OutboxDelivery[]> {
    try {
      const now = this.now();
      const written = await this.store.enqueueEvent({ event, data, timestamp: now.toISOString() }, now);
      if (written.length > 0) this.kick();
      return written;
    } catch (error) {
      this.logger?.warn({ err: error, event }, 'webhook event not written to the outbox');
      return [];
    }
  }

  /** Looks at the outbox now: call after writing deliveries to it. */
  kick(): void {
    if (!this.started || this.closing) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.passing = this.pass()
      .catch((error: unknown) => this.logger?.warn({ err: error }, 'reading the webhook outbox failed'))
      .finally(() => {
        this.passing = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Settles when no attempt runs and no delivery is pending (retries included), or the dispatcher is closing. */
  async settled(): Promise<void> {
    for (;;) {
      if (this.inFlight.size > 0) {
        await Promise.allSettled([...this.inFlight.values()]);
        continue;
      }
      if (this.passing) {
        await this.passing;
        continue;
      }
      if (this.closing || !this.started || (await this.store.countPendingDeliveries()) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Stops deliveries: no new attempts or retries; attempts in flight get the grace period, then are cancelled. */
  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  private async shutdown(): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.passing) await this.passing;
    if (this.inFlight.size === 0) return;
    const all = Promise.allSettled([...this.inFlight.values()]);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.closeGraceMs);
    });
    await Promise.race([all, grace]);
    clearTimeout(timer);
    this.cancel.abort();
    await all;
  }

  /** Claims the due deliveries (as many as may run), starts them, and sets the timer for the next due one. */
  private async pass(): Promise<void> {
    const room = BATCH - this.inFlight.size;
    if (room > 0) {
      const now = this.now();
      const due = await this.store.claimDueDeliveries(now, room, this.timeoutMs + 30_000);
      for (const delivery of due) {
        if (this.inFlight.has(delivery.id)) continue;
        if (this.closing) {
          // Claimed as the server closes: due again at once, for the next start.
          await this.store.updateOutboxDelivery(delivery.id, { state: 'pending', attempts: delivery.attempts, nextAttemptAt: now, status: delivery.lastStatus, error: delivery.lastError }, now);
          continue;
        }
        this.track(delivery.id, this.deliver(delivery));
      }
    }
    if (this.closing) return;
    const next = await this.store.nextDueAt();
    let wait = this.pollIntervalMs;
    if (next && this.inFlight.size < BATCH) wait = Math.min(wait, Math.max(0, next.getTime() - this.now().getTime()));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), wait);
    this.timer.unref();
  }

  private track(id: string, task: Promise<void>): void {
    const tracked: Promise<void> = task
      .catch((error: unknown) => this.logger?.warn({ err: error, delivery: id }, 'webhook delivery failed'))
      .finally(() => {
        this.inFlight.delete(id);
        this.kick();
      });
    this.inFlight.set(id, tracked);
  }

  /** The wait before retry number `retry` (1-based). */
  private retryWait(retry: number, retryAfterMs: number | undefined): number {
    if (this.retryDelaysMs) {
      const fixed = this.retryDelaysMs[retry - 1] ?? this.retryDelaysMs.at(-1) ?? 0;
      return retryAfterMs === undefined ? fixed : Math.min(this.maxRetryDelayMs, Math.max(fixed, retryAfterMs));
    }
    return retryDelay(retry, { minDelayMs: this.minRetryDelayMs, maxDelayMs: this.maxRetryDelayMs }, retryAfterMs, this.random);
  }

  /** One attempt of a claimed delivery, and its new state in the outbox. */
  private async deliver(delivery: OutboxDelivery): Promise<void> {
    const webhook = await this.store.getWebhook(delivery.webhookId);
    if (!webhook?.active) {
      // Deleted or switched off since the event: never sent.
      const error = webhook ? 'cancelled: the webhook is switched off' : 'cancelled: the webhook was removed';
      await this.store.updateOutboxDelivery(delivery.id, { state: 'cancelled', attempts: delivery.attempts, status: null, error }, this.now());
      return;
    }
    const attempts = delivery.attempts + 1;
    const { attemptId, result } = await this.attempt(webhook, delivery);
    const now = this.now();
    const update = stateAfter(result, attempts, this.maxAttempts, now, (retry, retryAfterMs) => this.retryWait(retry, retryAfterMs));
    // The attempt's outcome and the delivery's state in one write: logged as delivered, never sent again.
    await this.store.recordAttemptOutcome({ ...update, attemptId, deliveryId: delivery.id, disableWebhook: result.kind === 'gone' }, now);
    await this.store.pruneDeliveries(webhook.id, DELIVERIES_KEPT);
    const details = { webhook: webhook.id, delivery: delivery.id, attempt: attempts, event: delivery.event, status: result.status };
    if (result.error !== null) this.logger?.warn(details, `webhook delivery attempt failed: ${result.error}`);
    if (result.kind === 'gone') this.logger?.warn({ webhook: webhook.id }, 'webhook switched off: its receiver answered 410 Gone');
    if (update.state === 'failed' && result.kind === 'retry') this.logger?.warn(details, `webhook delivery failed after ${attempts} attempts`);
  }

  /** One attempt, its start recorded in the log (its outcome is recorded by `deliver`, with the delivery's state). */
  private async attempt(webhook: StoredWebhook, delivery: OutboxDelivery): Promise<{ attemptId: string; result: AttemptResult }> {
    const now = this.now();
    const attemptId = await this.store.startDelivery(webhook.id, delivery.event, now, delivery.id);
    const body = Buffer.from(delivery.body, 'utf8');
    let result: AttemptResult;

    let target: URL | undefined;
    try {
      target = new URL(webhook.url);
    } catch {
      target = undefined;
    }
    if (!target || (target.protocol !== 'http:' && target.protocol !== 'https:')) {
      result = { kind: 'refused', status: null, error: 'refused: the URL is not an http or https URL' };
    } else if (pointsAtSelf(target, this.publicUrl, this.safeSelfAddresses())) {
      result = { kind: 'refused', status: null, error: 'refused: the URL points at this registry server' };
    } else {
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'User-Agent': WEBHOOK_USER_AGENT,
        'X-Webhook-Event': delivery.event,
        'X-Webhook-Id': delivery.id,
        'X-Webhook-Timestamp': String(Math.floor(now.getTime() / 1000)),
        'X-Webhook-Delivery': attemptId,
        'X-Webhook-Signature': signWebhookPayload(webhook.secret, body),
      };
      const previous = previousSecretAt(webhook, now);
      if (previous !== undefined) headers['X-Webhook-Signature-Previous'] = signWebhookPayload(previous, body);
      const outcome = await post(this.targets.request, target, headers, body, this.timeoutMs, this.cancel.signal);
      const status = outcome.status ?? null;
      const retryAfter = outcome.retryAfterMs === undefined ? {} : { retryAfterMs: outcome.retryAfterMs };
      if (outcome.detail !== undefined) this.logger?.warn({ webhook: webhook.id, delivery: delivery.id, detail: outcome.detail }, 'webhook receiver gave no HTTP answer');
      if (outcome.refused) {
        result = { kind: 'refused', status: null, error: outcome.error ?? 'refused' };
      } else if (this.cancel.signal.aborted && status === null) {
        result = { kind: 'cancelled', status, error: outcome.error ?? 'cancelled: the registry server is closing' };
      } else if (outcome.error !== undefined) {
        result = { kind: 'retry', status, error: outcome.error };
      } else if (status !== null && status >= 200 && status < 300) {
        result = { kind: 'delivered', status, error: null };
      } else if (status === 410) {
        result = { kind: 'gone', status, error: 'HTTP 410: the receiver is gone; the webhook was switched off' };
      } else if (status !== null && status >= 300 && status < 400) {
        result = { kind: 'retry', status, error: `HTTP ${status}: redirects are not followed`, ...retryAfter };
      } else {
        result = { kind: 'retry', status, error: `HTTP ${String(status)}`, ...retryAfter };
      }
    }
    return { attemptId, result };
  }

  private safeSelfAddresses(): readonly (AddressInfo | string)[] {
    try {
      return this.selfAddresses();
    } catch {
      return [];
    }
  }
}

/** The data of `registry.updated`: where registry.json is, its ETag, when it was updated and how many entries it lists. */
export function registryUpdatedData(publicUrl: string, document: { lastUpdated: string; templates: readonly unknown[] }, etag: string): Record<string, unknown> {
  return { url: `${publicUrl}/registry.json`, etag, lastUpdated: document.lastUpdated, templates: document.templates.length };
}

/** A webhook event record for a store transaction (`commitVersion`'s `webhookEvents`), timestamped now. */
export function webhookEvent(event: WebhookEvent, data: unknown, now: Date = new Date()): WebhookEventRecord {
  return { event, data, timestamp: now.toISOString() };
}
