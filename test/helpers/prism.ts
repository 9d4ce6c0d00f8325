/**
 * Stoplight Prism's validating proxy (`prism proxy`, @stoplight/prism-cli) in front of a server, as a
 * child process on 127.0.0.1, and requests through it. Prism forwards each request, validates the
 * request and the answer against the OpenAPI document, and names what it found in the
 * `sl-violations` header of the answer (location `request...` or `response...`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import path from 'node:path';

const PRISM = path.resolve('node_modules/@stoplight/prism-cli/dist/index.js');

export interface PrismProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** What Prism has printed so far (its log: one line per request and per violation). */
  output: () => string;
  close: () => Promise<void>;
}

/** One finding of Prism's validation (the `sl-violations` header holds a JSON array of them). */
export interface PrismViolation {
  location: string[];
  severity: string;
  code?: string | number;
  message: string;
}

/**
 * Starts `prism proxy <document> <upstream>` on a free port of 127.0.0.1 and resolves once it
 * listens; rejects (and kills it) when it has not after `startMs`.
 */
export async function startPrismProxy(document: string, upstream: string, { startMs = 90_000 } = {}): Promise<PrismProxy> {
  // Port 0: Prism says where it listens.
  const child = spawn(process.execPath, [PRISM, 'proxy', document, upstream, '--host', '127.0.0.1', '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  let text = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`prism did not start in ${startMs} ms: ${text}`));
    }, startMs);
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      const listening = /Prism is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (listening) {
        clearTimeout(timer);
        resolve(listening[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`prism exited with ${String(code)}: ${text}`));
    });
  });
  return { url, output: () => text, close: () => stop(child) };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

export interface HttpAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  rawPayload: Buffer;
  payload: string;
  body: string;
  json: () => unknown;
}

/**
 * One request over HTTP (node:http: no header of its own beyond Host and Content-Length, no
 * decompression), bounded by `timeoutMs`.
 */
export function sendHttp(base: string, options: { method?: string; url: string; headers?: Record<string, string>; payload?: string | Buffer }, timeoutMs = 30_000): Promise<HttpAnswer> {
  const payload = options.payload === undefined ? undefined : Buffer.from(options.payload);
  const headers: Record<string, string> = { ...options.headers };
  if (payload !== undefined) headers['content-length'] = String(payload.length);
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(options.url, base), { method: options.method ?? 'GET', headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const rawPayload = Buffer.concat(chunks);
        const text = rawPayload.toString('utf8');
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, rawPayload, payload: text, body: text, json: (): unknown => JSON.parse(text) });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${options.method ?? 'GET'} ${options.url}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** The violations Prism reported for an answer (none when it sent no `sl-violations`). */
export function violationsOf(answer: Pick<HttpAnswer, 'headers'>): PrismViolation[] {
  const header = answer.headers['sl-violations'];
  if (header === undefined) return [];
  const text = Array.isArray(header) ? header.join(',') : header;
  // Prism cuts a header over ~8 KiB and prefixes it: keep it readable as one violation.
  if (!text.startsWith('[')) return [{ location: ['unknown'], severity: 'Error', message: text.slice(0, 2000) }];
  return JSON.parse(text) as PrismViolation[];
}
