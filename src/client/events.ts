/**
 * The analytics events client: posts one event to a registry server's events route.
 *
 * Analytics never stop a user's work, so sending never throws: a registry that is down, slow,
 * answers an error, or has no events route at all (a static registry) only makes the outcome say
 * the event was not delivered.
 */
import type { AnalyticsEvent } from '../core/schema-types.js';
import { errorMessage } from '../core/errors.js';

/** How long one event may take before it is given up: 3 s. */
export const DEFAULT_EVENT_TIMEOUT_MS = 3000;

export interface SendEventOptions {
  /**
   * The user asked not to be tracked (the CLI passes `DO_NOT_TRACK=1` here): nothing is sent.
   * Read from the caller's environment, never from this module's process.
   */
  doNotTrack?: boolean;
  /** Most milliseconds the request may take; DEFAULT_EVENT_TIMEOUT_MS unless given. */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

/** What became of one event. */
export type EventDelivery =
  /** The registry accepted it (a 2xx answer). */
  | { delivered: true; status: number }
  /** Not sent (`doNotTrack`), refused (`status`), or lost (`reason`: network, time limit). */
  | { delivered: false; skipped?: true; status?: number; reason?: string };

/** Where a registry server takes events: beside its document (`.../registry.json` -> `.../events`). */
export function eventsUrl(registryUrl: string): string {
  const base = registryUrl.replace(/\/registry\.json(\?.*)?$/, '').replace(/\/+$/, '');
  return `${base}/events`;
}

/** Whether an environment asks not to be tracked (`DO_NOT_TRACK=1`, consoledonottrack.com). */
export function doNotTrackFrom(env: Readonly<Record<string, string | undefined>>): boolean {
  return env.DO_NOT_TRACK === '1';
}

/**
 * Posts `event` as JSON to the events route of the registry whose document is at `registryUrl`.
 * Resolves, never rejects, with what became of it.
 */
export async function sendAnalyticsEvent(registryUrl: string, event: AnalyticsEvent, options: SendEventOptions = {}): Promise<EventDelivery> {
  if (options.doNotTrack) return { delivered: false, skipped: true };
  const timeoutMs = options.timeoutMs ?? DEFAULT_EVENT_TIMEOUT_MS;
  // A timer rather than AbortSignal.timeout: tests drive it with fake timers instead of waiting.
  const limit = new AbortController();
  const timer = setTimeout(() => limit.abort(new DOMException(`the registry did not answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  timer.unref?.();
  try {
    const response = await (options.fetch ?? globalThis.fetch)(eventsUrl(registryUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
      signal: limit.signal,
    });
    // The answer's body is of no use; reading it to the end frees the connection.
    await response.arrayBuffer().catch(() => undefined);
    return response.ok ? { delivered: true, status: response.status } : { delivered: false, status: response.status };
  } catch (error) {
    return { delivered: false, reason: errorMessage(error) };
  } finally {
    clearTimeout(timer);
  }
}
