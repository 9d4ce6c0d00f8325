/**
 * Delivers the webhook outbox. Events are written to a durable outbox in the storage, one delivery
 * per active webhook subscribed to the event, in the transaction of the change that raised them; the
 * dispatcher delivers due rows in the background and keeps their state in the outbox, so a delivery
 * survives a receiver that is down and a server restart.
 *
 * Every attempt is recorded in the webhook store's log: started before the request, and its outcome
 * written together with the delivery's new state (`recordAttemptOutcome`, one transaction), so an
 * attempt logged as delivered is never sent again. A process that dies during the request leaves the
 * delivery leased: it is sent again when the lease ends (at least once).
 *
 * Order: a webhook gets its deliveries one at a time, in the order their events were written (the
 * store only lets the oldest pending delivery of a webhook be claimed); a delivery being retried
 * holds back the later ones of its webhook only.
 */
import type { AddressInfo } from 'node:net';

import { retryDelay } from '../../core/retry.js';
import { previousSecretAt } from '../../store/records.js';
import type { OutboxDelivery, StoredWebhook, WebhookStore } from '../../store/types.js';
import { attemptResult, post, stateAfter, type AttemptResult } from './attempt.js';
import type { WebhookEvent } from './payloads.js';
import { signatureHeaders } from './signing.js';
import { pointsAtSelf, WebhookTargets, type WebhookTargetOptions } from './targets.js';
import { parseHttpUrl } from '../../core/http-url.js';

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
/** Deliveries attempted at once, at most. */
const BATCH = 32;

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

    const target = parseHttpUrl(webhook.url);
    if (!target) {
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
        ...signatureHeaders(body, webhook.secret, previousSecretAt(webhook, now)),
      };
      const outcome = await post(this.targets.request, target, headers, body, this.timeoutMs, this.cancel.signal);
      if (outcome.detail !== undefined) this.logger?.warn({ webhook: webhook.id, delivery: delivery.id, detail: outcome.detail }, 'webhook receiver gave no HTTP answer');
      result = attemptResult(outcome, this.cancel.signal.aborted);
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
