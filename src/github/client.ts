/**
 * The GitHub client every part of the project uses (the publish action's release, the registry
 * action's and `build-registry`'s releases source): Octokit with retries, rate-limit handling and
 * replayable request bodies.
 */
import { Readable } from 'node:stream';

import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';

/** Rate-limit retries per request (primary and secondary limits alike). */
const RATE_LIMIT_RETRIES = 2;

/** The request option (`request.openBody`) that makes a request body replayable, see below. */
export const OPEN_BODY = 'openBody';

/**
 * plugin-retry and plugin-throttling repeat a failed request with the same options, so a stream
 * body would be sent already consumed. A request that sets `request.openBody` (a function opening
 * a fresh stream) gets a new body on every attempt instead. Registered before the retry and
 * throttling plugins, this hook is inside them, i.e. runs once per attempt. (It must set `data` on
 * the options object itself: before-after-hook hands every layer the options it was first called
 * with, so passing a copy to `request` would be ignored.)
 */
function replayableBody(octokit: { hook: Octokit['hook'] }): void {
  octokit.hook.wrap('request', (request, options) => {
    const open: unknown = options.request?.[OPEN_BODY];
    if (typeof open === 'function') {
      const previous = options.data;
      if (previous instanceof Readable) previous.destroy();
      options.data = (open as () => Readable)();
    }
    return request(options);
  });
}

const GitHubOctokit = Octokit.plugin(replayableBody, retry, throttling);
/** An Octokit with the plugins above; callers need nothing beyond Octokit's own API. */
export type GitHubClient = Octokit;

export interface GitHubClientOptions {
  token: string;
  /** Defaults to `$GITHUB_API_URL` (set by GitHub Actions, also on GHES), then https://api.github.com. */
  baseUrl?: string;
  /** Prepended to Octokit's user agent. */
  userAgent?: string;
  /** Retries of a failed request (5xx, network errors) by plugin-retry; 4xx are never retried. */
  retries?: number;
  /** Receives warnings: rate limits and Octokit's own warnings. The token never appears in them. */
  log?: (message: string) => void;
  /** plugin-retry waits `retryAfterBaseValue * n²` ms before the n-th retry (default 1000). */
  retryAfterBaseValue?: number;
  /**
   * plugin-throttling settings. Beware that it spaces write requests at least 1 s apart (3 s for
   * creating releases); tests of write flows pass `{ enabled: false }` or test it on reads.
   */
  throttle?: { enabled?: boolean; retryAfterBaseValue?: number; fallbackSecondaryRateRetryAfter?: number; id?: string };
}

export function createGitHubClient(options: GitHubClientOptions): GitHubClient {
  const {
    token,
    baseUrl = process.env.GITHUB_API_URL || 'https://api.github.com',
    userAgent = 'template-registry',
    retries = 3,
    log = (message: string) => console.warn(message),
    retryAfterBaseValue,
    throttle = {},
  } = options;
  if (!token) throw new Error('A GitHub token is required to create the release');

  const onLimit =
    (kind: string) =>
    (retryAfter: number, request: { method: string; url: string }, _octokit: unknown, retryCount: number): boolean => {
      const what = `${request.method} ${request.url}`;
      if (retryCount < RATE_LIMIT_RETRIES) {
        log(`GitHub ${kind} hit by ${what}; retrying in ${retryAfter}s (retry ${retryCount + 1} of ${RATE_LIMIT_RETRIES})`);
        return true;
      }
      log(`GitHub ${kind} hit by ${what}; giving up after ${RATE_LIMIT_RETRIES} retries`);
      return false;
    };
  const noop = (): void => undefined;

  return new GitHubOctokit({
    auth: token,
    baseUrl: baseUrl.replace(/\/+$/, ''),
    userAgent,
    // Octokit warns (deprecations) and logs every failed request ("POST … - 500 with id … in 12ms"),
    // which shows retries in the job log.
    log: { debug: noop, info: noop, warn: log, error: log },
    retry: {
      doNotRetry: [400, 401, 403, 404, 422],
      retries,
      ...(retryAfterBaseValue === undefined ? {} : { retryAfterBaseValue }),
    },
    throttle: {
      ...throttle,
      onRateLimit: onLimit('rate limit'),
      onSecondaryRateLimit: onLimit('secondary rate limit'),
    },
  });
}

