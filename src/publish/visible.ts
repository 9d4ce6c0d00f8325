/**
 * Waiting until a published version is visible where clients read the registry: the public URL of
 * the template's file (`templates/<id>.json` beside registry.json, what a sparse client reads) is
 * asked for with `Cache-Control: no-cache` until it lists the version, within a bounded wait. A CDN
 * that honours `no-cache` answers from the origin; one that does not answers from its copy until it
 * is purged or expires, and the wait sees that.
 *
 * Polls 1 s apart at first, doubling to 10 s apart; each poll within 30 s (or what is left of the
 * wait, but at least 5 s, so the wait ends at most 5 s past its bound). A time-out is not a failure of the publish (the
 * version is stored): the caller warns with `notVisibleWarning`, which names the URL and what it
 * served last.
 */
import { registryDocumentUrl } from '../core/registry-url.js';
import { readBodyCapped } from '../core/response-body.js';

/** The default bound of the wait: 5 minutes. */
export const DEFAULT_VISIBLE_TIMEOUT_MS = 300_000;
const FIRST_POLL_DELAY_MS = 1000;
const MAX_POLL_DELAY_MS = 10_000;
/** One poll takes at most this long, or what is left of the wait but never less than the floor (the last poll at the deadline gets its answer). */
const POLL_TIMEOUT_MS = 30_000;
const POLL_TIMEOUT_FLOOR_MS = 5000;
/** The most of a template file read (one template's versions; far below any real one). */
const MAX_FILE_BYTES = 32 * 1024 * 1024;

export interface WaitUntilVisibleOptions {
  /** The registry's public URL: its base or its registry.json (`core/registry-url.ts`). */
  registryUrl: string;
  id: string;
  version: string;
  /** How long to wait in all (default 5 minutes). */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  /** Clock in ms and the wait between polls (tests pass a fake clock's). */
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Told after each poll that did not see the version. */
  onPoll?: (poll: { attempt: number; served: string; elapsedMs: number }) => void;
}

export interface VisibleResult {
  visible: boolean;
  /** The template file's URL that was polled. */
  url: string;
  /** From the start of the wait to the answer that listed the version (or to the time-out). */
  afterMs: number;
  attempts: number;
  /** What the last answer was, in words: `HTTP 200 listing 1.0.0, 1.1.0 (Age: 42)`, `HTTP 404`, `no answer: ...`. */
  served: string;
}

/** The public URL of a template's file in the registry at `registryUrl`. */
export function templateFileUrl(registryUrl: string, id: string): string {
  return new URL(`templates/${encodeURIComponent(id)}.json`, registryDocumentUrl(registryUrl)).href;
}

/** The warning a caller gives when the wait timed out. */
export function notVisibleWarning(result: VisibleResult, id: string, version: string): string {
  return `${id}@${version} is published, but ${result.url} did not list it within ${Math.round(result.afterMs / 1000)} s (${result.attempts} polls with Cache-Control: no-cache); it last served ${result.served}. A CDN in front of the registry serves its copy until it expires or is purged (see "Behind a CDN" in docs/registry-hosting.md).`;
}

/** The versions a template file lists, or why the body is not one. */
function versionsListed(text: string, id: string): string[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'a body that is not JSON';
  }
  const versions = (parsed as { id?: unknown; versions?: unknown } | null)?.versions;
  if (!Array.isArray(versions)) return 'JSON that is not a template file';
  return versions.filter((entry): entry is { id: string; version: string } => typeof (entry as { version?: unknown } | null)?.version === 'string' && (entry as { id?: unknown }).id === id).map((entry) => entry.version);
}

/** The answer's text; undefined past MAX_FILE_BYTES (refused by its Content-Length, or once that much was read) or when it cannot be read. */
async function readText(response: Response): Promise<string | undefined> {
  const bytes = await readBodyCapped(response, MAX_FILE_BYTES, () => new Error(`more than ${MAX_FILE_BYTES} bytes`)).catch(() => undefined);
  return bytes?.toString('utf8');
}

/** One poll: whether the file lists `version`, and what it served. */
async function poll(fetch: typeof globalThis.fetch, url: string, id: string, version: string, timeoutMs: number): Promise<{ listed: boolean; served: string }> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/json', 'cache-control': 'no-cache' }, signal: AbortSignal.timeout(Math.max(1, timeoutMs)) });
  } catch (error) {
    const cause = (error as { cause?: { message?: unknown } }).cause;
    return { listed: false, served: `no answer (${typeof cause?.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error)})` };
  }
  const age = response.headers.get('age');
  const from = age !== null && /^\d+$/.test(age) ? ` (Age: ${age})` : '';
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    return { listed: false, served: `HTTP ${response.status}${from}` };
  }
  const text = await readText(response);
  if (text === undefined) return { listed: false, served: `HTTP ${response.status} with a body that could not be read${from}` };
  const versions = versionsListed(text, id);
  if (typeof versions === 'string') return { listed: false, served: `HTTP ${response.status} with ${versions}${from}` };
  const shown = versions.length > 8 ? [...versions.slice(0, 3), '…', ...versions.slice(-4)] : versions;
  return { listed: versions.includes(version), served: `HTTP ${response.status} listing ${versions.length === 0 ? 'no version' : shown.join(', ')}${from}` };
}

const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls the template's file until it lists `version` or the wait is over; see the module comment. */
export async function waitUntilVisible(options: WaitUntilVisibleOptions): Promise<VisibleResult> {
  const fetch = options.fetch ?? globalThis.fetch;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const timeoutMs = options.timeoutMs ?? DEFAULT_VISIBLE_TIMEOUT_MS;
  const url = templateFileUrl(options.registryUrl, options.id);
  const start = now();
  let attempts = 0;
  let delay = FIRST_POLL_DELAY_MS;
  for (;;) {
    attempts++;
    const left = timeoutMs - (now() - start);
    const answer = await poll(fetch, url, options.id, options.version, Math.min(POLL_TIMEOUT_MS, Math.max(POLL_TIMEOUT_FLOOR_MS, left)));
    const elapsedMs = now() - start;
    if (answer.listed) return { visible: true, url, afterMs: elapsedMs, attempts, served: answer.served };
    options.onPoll?.({ attempt: attempts, served: answer.served, elapsedMs });
    const remaining = timeoutMs - elapsedMs;
    if (remaining <= 0) return { visible: false, url, afterMs: elapsedMs, attempts, served: answer.served };
    await sleep(Math.min(delay, remaining));
    delay = Math.min(MAX_POLL_DELAY_MS, delay * 2);
  }
}
