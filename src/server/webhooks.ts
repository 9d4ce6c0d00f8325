/**
 * Outgoing webhooks (the spec's "Webhook delivery pattern"): when a version is published, the
 * server POSTs `{ event, timestamp, data }` as JSON to every active webhook subscribed to the
 * event, signed with the webhook's secret:
 *
 *     X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the exact body bytes, keyed by the secret>
 *
 * Deliveries run in the background (the request that caused the event never waits for them), at
 * most `retryDelaysMs.length + 1` attempts each (default 3: at once, after 1 s, after 4 s more),
 * retried on network errors, time-outs (10 s per attempt) and non-2xx answers; redirects are not
 * followed (a 3xx counts as a failure). Every attempt is recorded in the webhook store's log.
 * Deliveries are sent with `fetch`, the project's one style of outgoing request.
 * Receivers check the signature with `verifyWebhookSignature`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import { errorMessage } from '../core/errors.js';
import type { DeliveryRecord, StoredWebhook, WebhookStore } from '../store/types.js';

/** The events this registry sends. */
export const WEBHOOK_EVENTS = ['template.published'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const WEBHOOK_USER_AGENT = 'template-registry';
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [1000, 4000];
export const DEFAULT_TIMEOUT_MS = 10_000;
/** How long closing the server waits for attempts in flight before cancelling them. */
export const DEFAULT_CLOSE_GRACE_MS = 2000;
/** Attempts kept per webhook in the delivery log; older ones are removed. */
export const DELIVERIES_KEPT = 200;
/** A receiver's answer body is read (and thrown away) up to this size. */
const MAX_RESPONSE_BYTES = 64 * 1024;

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
  id: string;
  event: string;
  status: number | null;
  attemptedAt: string;
  error: string | null;
}

export function publicWebhook(webhook: StoredWebhook): WebhookView {
  return { id: webhook.id, url: webhook.url, events: [...webhook.events], active: webhook.active, createdAt: webhook.createdAt };
}

export function publicDelivery(delivery: DeliveryRecord): DeliveryView {
  return { id: delivery.id, event: delivery.event, status: delivery.status, attemptedAt: delivery.attemptedAt, error: delivery.error };
}

// ---------------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------------

/** `sha256=<hex HMAC-SHA256 of body with secret>`: the X-Webhook-Signature of a delivery. */
export function signWebhookBody(body: string | Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * For receivers: true when `header` (the X-Webhook-Signature value) is the signature of `body`
 * with `secret`. Pass the body exactly as received (the raw bytes, or their UTF-8 text), not a
 * re-serialized parse of it. The comparison takes the same time whatever the header holds.
 */
export function verifyWebhookSignature(body: string | Buffer, header: string, secret: string): boolean {
  if (typeof header !== 'string' || typeof secret !== 'string') return false;
  const match = /^\s*sha256=([0-9a-fA-F]{64})\s*$/.exec(header);
  const presented = Buffer.from(match?.[1] ?? '0'.repeat(64), 'hex');
  const expected = createHmac('sha256', secret).update(body).digest();
  // Compare even for a malformed header, so its shape does not change the timing much.
  return timingSafeEqual(presented, expected) && match !== null;
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
  error?: string;
}

function networkError(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (error as NodeJS.ErrnoException).code;
  const message = cause instanceof Error ? cause.message : errorMessage(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
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

/** POSTs `body` once, without following redirects, within `timeoutMs`; `cancel` aborts it. */
async function post(url: URL, headers: Record<string, string>, body: Buffer, timeoutMs: number, cancel: AbortSignal): Promise<AttemptOutcome> {
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.any([timeout, cancel]) });
    await discardBody(response);
    return { status: response.status };
  } catch (error) {
    if (cancel.aborted) return { error: 'cancelled: the registry server is closing' };
    if (timeout.aborted) return { error: `timed out after ${timeoutMs} ms` };
    return { error: networkError(error) };
  }
}

// ---------------------------------------------------------------------------------------------
// The dispatcher
// ---------------------------------------------------------------------------------------------

export interface WebhookLogger {
  warn(details: object, message: string): void;
}

export interface WebhookDispatcherOptions {
  store: WebhookStore;
  /** The server's public URL: webhooks pointing at it are never called. */
  publicUrl: string;
  /** The addresses the server listens on (fastify's `app.addresses()`), for the same guard. */
  selfAddresses?: () => readonly (AddressInfo | string)[];
  /** Waits before the second, third, ... attempt; default [1000, 4000] (3 attempts). */
  retryDelaysMs?: readonly number[];
  /** Time limit of one attempt, in ms; default 10 000. */
  timeoutMs?: number;
  /** How long `close()` lets attempts in flight finish before cancelling them; default 2000 ms. */
  closeGraceMs?: number;
  logger?: WebhookLogger;
  now?: () => Date;
}

/**
 * Sends events to the registered webhooks in the background. `dispatch` never throws and never
 * needs awaiting; `close` stops new deliveries and retries, lets attempts in flight finish for a
 * short grace period, then cancels them (each cancelled attempt is recorded).
 */
export class WebhookDispatcher {
  private readonly store: WebhookStore;
  private readonly publicUrl: string;
  private readonly selfAddresses: () => readonly (AddressInfo | string)[];
  private readonly retryDelaysMs: readonly number[];
  private readonly timeoutMs: number;
  private readonly closeGraceMs: number;
  private readonly logger: WebhookLogger | undefined;
  private readonly now: () => Date;

  private closing = false;
  private closed: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly sleepers = new Set<() => void>();
  private readonly cancel = new AbortController();

  constructor(options: WebhookDispatcherOptions) {
    this.store = options.store;
    this.publicUrl = options.publicUrl;
    this.selfAddresses = options.selfAddresses ?? (() => []);
    this.retryDelaysMs = [...(options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS)];
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.closeGraceMs = options.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS;
    this.logger = options.logger;
    this.now = options.now ?? (() => new Date());
  }

  /** Events whose deliveries are still running, retries included. */
  get pending(): number {
    return this.inFlight.size;
  }

  /**
   * Starts delivering `event` to every active webhook subscribed to it. The promise settles when
   * those deliveries are over (it never rejects); callers on a request path must not await it.
   */
  dispatch(event: WebhookEvent, data: unknown): Promise<void> {
    if (this.closing) {
      this.logger?.warn({ event }, 'webhook event not delivered: the server is closing');
      return Promise.resolve();
    }
    const payload: WebhookPayload = { event, timestamp: this.now().toISOString(), data };
    return this.track(this.deliverAll(event, Buffer.from(JSON.stringify(payload), 'utf8')));
  }

  private async deliverAll(event: string, body: Buffer): Promise<void> {
    const targets = await this.store.webhooksFor(event);
    await Promise.all(targets.map((webhook) => this.deliver(webhook.id, event, body)));
  }

  /** Settles when every delivery running now (and any it retries) is over. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Stops deliveries: no new ones or retries; attempts in flight get the grace period, then are cancelled. */
  close(): Promise<void> {
    this.closed ??= this.shutdown();
    return this.closed;
  }

  private async shutdown(): Promise<void> {
    this.closing = true;
    for (const wake of [...this.sleepers]) wake();
    if (this.inFlight.size === 0) return;
    const all = Promise.allSettled([...this.inFlight]);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.closeGraceMs);
    });
    await Promise.race([all, grace]);
    clearTimeout(timer);
    this.cancel.abort();
    await all;
  }

  private track(task: Promise<void>): Promise<void> {
    const tracked: Promise<void> = task
      .catch((error: unknown) => this.logger?.warn({ err: error }, 'webhook delivery failed'))
      .finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
    return tracked;
  }

  /** Waits `ms`; false when `close()` cut the wait short. */
  private sleep(ms: number): Promise<boolean> {
    if (this.closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = (completed: boolean): void => {
        clearTimeout(timer);
        this.sleepers.delete(interrupt);
        resolve(completed);
      };
      const interrupt = (): void => wake(false);
      const timer = setTimeout(() => wake(true), ms);
      this.sleepers.add(interrupt);
    });
  }

  private async deliver(webhookId: string, event: string, body: Buffer): Promise<void> {
    const attempts = this.retryDelaysMs.length + 1;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      if (attempt > 1 && !(await this.sleep(this.retryDelaysMs[attempt - 2] ?? 0))) return;
      // Deleted or switched off in the meantime: stop.
      const webhook = await this.store.getWebhook(webhookId);
      if (!webhook?.active) return;
      if (await this.attempt(webhook, event, body)) return;
    }
  }

  /** One recorded attempt; true when it is final (delivered, refused or cancelled). */
  private async attempt(webhook: StoredWebhook, event: string, body: Buffer): Promise<boolean> {
    const deliveryId = await this.store.startDelivery(webhook.id, event, this.now());
    let status: number | null = null;
    let error: string | null = null;
    let final: boolean;

    let target: URL | undefined;
    try {
      target = new URL(webhook.url);
    } catch {
      target = undefined;
    }
    if (!target || (target.protocol !== 'http:' && target.protocol !== 'https:')) {
      error = 'refused: the URL is not an http or https URL';
      final = true;
    } else if (pointsAtSelf(target, this.publicUrl, this.safeSelfAddresses())) {
      error = 'refused: the URL points at this registry server';
      final = true;
    } else {
      const headers: Record<string, string> = {
        'Content-Type': 'application/json',
        'User-Agent': WEBHOOK_USER_AGENT,
        'X-Webhook-Event': event,
        'X-Webhook-Delivery': deliveryId,
        'X-Webhook-Signature': signWebhookBody(body, webhook.secret),
      };
      const outcome = await post(target, headers, body, this.timeoutMs, this.cancel.signal);
      status = outcome.status ?? null;
      final = status !== null && status >= 200 && status < 300;
      if (outcome.error !== undefined) error = outcome.error;
      else if (status !== null && status >= 300 && status < 400) error = `HTTP ${status}: redirects are not followed`;
      else if (!final) error = `HTTP ${String(status)}`;
      if (this.cancel.signal.aborted) final = true;
    }
    await this.store.finishDelivery(deliveryId, status, error);
    await this.store.pruneDeliveries(webhook.id, DELIVERIES_KEPT);
    if (error !== null) this.logger?.warn({ webhook: webhook.id, delivery: deliveryId, event, status }, `webhook delivery attempt failed: ${error}`);
    return final;
  }

  private safeSelfAddresses(): readonly (AddressInfo | string)[] {
    try {
      return this.selfAddresses();
    } catch {
      return [];
    }
  }
}
