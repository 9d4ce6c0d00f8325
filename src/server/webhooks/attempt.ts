/**
 * One HTTP attempt of a delivery and what it comes to: a 2xx answer delivers; a 410 Gone disables the
 * webhook and fails the delivery; anything else (no answer, a time-out, 3xx since redirects are not
 * followed, other statuses) is retried with backoff until the attempts run out. An attempt without an
 * HTTP answer is logged with one error whatever happened (`noAnswerError`): the log never tells a
 * closed port from an open one.
 */
import { errorMessage } from '../../core/errors.js';
import { EgressRefusedError, type GuardedRequest } from '../../core/egress.js';
import { parseRetryAfter } from '../../core/retry.js';
import type { OutboxUpdate } from '../../store/types.js';
import { readBodyHead } from '../../core/response-body.js';

/** A receiver's answer body is read (and thrown away) up to this size. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface AttemptOutcome {
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
  // The status is what counts; a body cut short changes nothing.
  await readBodyHead(response, MAX_RESPONSE_BYTES, { partialOnError: true });
}

/** POSTs `body` once through `send` (which connects only to allowed addresses), without following redirects, within `timeoutMs`; `cancel` aborts it. */
export async function post(send: GuardedRequest, url: URL, headers: Record<string, string>, body: Buffer, timeoutMs: number, cancel: AbortSignal): Promise<AttemptOutcome> {
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

/** What one attempt came to. */
export interface AttemptResult {
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
export function stateAfter(result: AttemptResult, attempts: number, maxAttempts: number, now: Date, retryWait: (retry: number, retryAfterMs: number | undefined) => number): OutboxUpdate {
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

/** What an attempt's outcome comes to; `cancelled`: the server was closing while it ran. */
export function attemptResult(outcome: AttemptOutcome, cancelled: boolean): AttemptResult {
  const status = outcome.status ?? null;
  const retryAfter = outcome.retryAfterMs === undefined ? {} : { retryAfterMs: outcome.retryAfterMs };
  if (outcome.refused) return { kind: 'refused', status: null, error: outcome.error ?? 'refused' };
  if (cancelled && status === null) return { kind: 'cancelled', status, error: outcome.error ?? 'cancelled: the registry server is closing' };
  if (outcome.error !== undefined) return { kind: 'retry', status, error: outcome.error };
  if (status !== null && status >= 200 && status < 300) return { kind: 'delivered', status, error: null };
  if (status === 410) return { kind: 'gone', status, error: 'HTTP 410: the receiver is gone; the webhook was switched off' };
  if (status !== null && status >= 300 && status < 400) return { kind: 'retry', status, error: `HTTP ${status}: redirects are not followed`, ...retryAfter };
  return { kind: 'retry', status, error: `HTTP ${String(status)}`, ...retryAfter };
}
