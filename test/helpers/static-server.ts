/**
 * A plain static file server on 127.0.0.1, as an operator would put a built registry behind one:
 * `python3 -m http.server` when python3 is there, else a minimal node:http file server.
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
