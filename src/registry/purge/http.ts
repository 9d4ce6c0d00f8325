/**
 * A cache that forgets a URL on an HTTP `PURGE` of it: Varnish (a `vcl_recv` that answers PURGE
 * with `return (purge)`) or nginx with the cache-purge module (`proxy_cache_purge PURGE from ...`).
 * One request per URL, sent to the cache's address (the target) with the URL's path and the public
 * URL's `Host`, so that it names the object clients' requests cached. 200 and 204 are a purge; 404
 * is one too (nginx's answer when the URL was not cached).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

import { oneLine, PURGE_REQUEST_TIMEOUT_MS, PurgeError, type PurgeCallOptions, type PurgeTarget } from './target.js';

export interface HttpPurgeSettings {
  /** The cache's address: `http://127.0.0.1:6081`. */
  url: string;
  /** A request takes at most this long (default 30 s). */
  timeoutMs?: number;
}

/** Most bytes of an answer read for a message. */
const MAX_ANSWER_BYTES = 16 * 1024;

export class HttpPurge implements PurgeTarget {
  readonly spec: string;
  readonly batchSize = 1;
  readonly #cache: URL;
  readonly #timeoutMs: number;

  constructor(settings: HttpPurgeSettings) {
    this.#cache = new URL(settings.url);
    this.spec = this.#cache.origin;
    this.#timeoutMs = settings.timeoutMs ?? PURGE_REQUEST_TIMEOUT_MS;
  }

  async purge(urls: readonly string[], options: PurgeCallOptions): Promise<void> {
    for (const url of urls) await this.#purgeOne(new URL(url), options.signal);
  }

  #purgeOne(url: URL, cancel: AbortSignal | undefined): Promise<void> {
    const path = `${url.pathname}${url.search}`;
    const send = this.#cache.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<void>((resolve, reject) => {
      const fail = (message: string, status?: number): void => reject(new PurgeError(`${this.spec}: PURGE ${url.href} ${message}`, status));
      const req = send(
        this.#cache,
        { method: 'PURGE', path, headers: { host: url.host, 'user-agent': 'template-registry' }, timeout: this.#timeoutMs, ...(cancel ? { signal: cancel } : {}) },
        (response: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            if (size < MAX_ANSWER_BYTES) chunks.push(chunk);
            size += chunk.length;
          });
          response.on('error', (error) => fail(`failed: ${error.message}`));
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            if (status === 200 || status === 204 || status === 404) return resolve();
            fail(`was refused (HTTP ${status}): ${oneLine(Buffer.concat(chunks).toString('utf8').replace(/<[^>]*>/g, ' ')) || 'no details'}`, status);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.#timeoutMs} ms`)));
      req.on('error', (error) => fail(`got no answer: ${error.message}`));
      req.end();
    });
  }
}
