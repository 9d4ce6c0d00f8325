/**
 * A plain static file server on 127.0.0.1, as an operator would put a built registry behind one:
 * `python3 -m http.server` when python3 is there, else a minimal node:http file server
 * (`startStaticServer`); or a node:http one under a path prefix, with content types (`serveFolder`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';

import { freePort } from './registry-server.js';

export interface StaticServer {
  url: string;
  close(): Promise<void>;
}

const hasPython = (): boolean => spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0;

async function pythonServer(root: string, port: number): Promise<StaticServer> {
  const child: ChildProcess = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', root], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 100; attempt++) {
    if (await fetch(`${url}/`).then(() => true, () => false)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

async function nodeServer(root: string, port: number): Promise<StaticServer> {
  const server: Server = createServer((req, res) => {
    const relative = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = path.join(root, path.normalize(relative));
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    stat(file).then(
      (info) => {
        if (!info.isFile()) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-length': info.size });
        createReadStream(file).pipe(res);
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Serves the files below `root`. */
export async function startStaticServer(root: string): Promise<StaticServer> {
  const port = await freePort();
  return hasPython() ? pythonServer(root, port) : nodeServer(root, port);
}

/** The content types of the files a static registry holds (others are served as bytes). */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
  '.tgz': 'application/gzip',
  '.gz': 'application/gzip',
};

export interface FolderServer extends StaticServer {
  /** The URL of the folder's root, under the prefix, ending with `/`. */
  url: string;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Every path asked for (with its query), in order. */
  requests: string[];
  /** The paths asked for with If-None-Match, in order. */
  conditional: string[];
}

export interface ServeFolderOptions {
  /** URL path the folder is served under, e.g. `/some/prefix/` (default `/`); anything outside it is a 404. */
  prefix?: string;
  /** Send an ETag (size and modification time) with each file and answer a matching If-None-Match with 304. */
  etags?: boolean;
}

/**
 * Serves the files below `root` under `prefix` on 127.0.0.1 with node:http, as a static host (GitHub
 * Pages, S3 + a CDN) would: a content type by extension, `index.html` for a folder, a redirect from a
 * folder without its final `/`, 404 for anything missing or outside the prefix. GET and HEAD only.
 */
export async function serveFolder(root: string, options: ServeFolderOptions = {}): Promise<FolderServer> {
  const prefix = `/${(options.prefix ?? '/').replace(/^\/+|\/+$/g, '')}/`.replace(/^\/\/$/, '/');
  const base = path.resolve(root);
  const requests: string[] = [];
  const conditional: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.headers['if-none-match'] !== undefined) conditional.push(req.url ?? '');
    const notFound = () => void res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      return notFound();
    }
    if (`${pathname}/` === prefix) return void res.writeHead(301, { location: prefix }).end();
    if (!pathname.startsWith(prefix) || pathname.includes('\0')) return notFound();
    const file = path.resolve(base, `.${path.posix.normalize(`/${pathname.slice(prefix.length)}`)}`);
    if (file !== base && !file.startsWith(`${base}${path.sep}`)) return notFound();
    stat(file).then(
      async (info) => {
        if (info.isDirectory()) {
          if (!pathname.endsWith('/')) return void res.writeHead(301, { location: `${pathname}/` }).end();
          const index = path.join(file, 'index.html');
          const indexInfo = await stat(index).catch(() => undefined);
          return indexInfo?.isFile() ? send(index, indexInfo.size) : notFound();
        }
        if (!info.isFile()) return notFound();
        const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
        if (options.etags && req.headers['if-none-match'] === etag) return void res.writeHead(304, { etag }).end();
        return send(file, info.size, options.etags ? { etag } : {});
      },
      notFound,
    );
    function send(file: string, size: number, extra: Record<string, string> = {}): void {
      res.writeHead(200, { 'content-type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream', 'content-length': size, 'cache-control': 'no-cache', ...extra });
      if (req.method === 'HEAD') return void res.end();
      createReadStream(file).pipe(res);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const origin = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url: `${origin}${prefix}`,
    origin,
    requests,
    conditional,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
