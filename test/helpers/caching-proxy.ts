/**
 * A real caching proxy in front of an origin, for the tests of what a CDN serves: Varnish 7
 * (`varnishd`, Debian's `varnish`) or nginx's proxy cache (Debian's `nginx`), started as a child
 * process on a free 127.0.0.1 port with a temp working folder, waited for (bounded), and killed
 * after the test. Both cache every 200 for an hour whatever the origin says (a CDN set to cache
 * long), and honour a client's `Cache-Control: no-cache` (revalidating with the origin and storing
 * the answer) only when asked to: CloudFront and Cloudflare ignore it by default.
 *
 * Both answer `PURGE` from 127.0.0.1: Varnish by forgetting the URL (the VCL of
 * docs/registry-hosting.md), nginx by fetching it again from the origin in place of its copy (a
 * GET to itself that `proxy_cache_bypass` sends to the origin, the answer stored). nginx's own purge is a third-party
 * module, and Debian 12's (`libnginx-mod-http-cache-purge` 2.3) crashes its worker on every purge
 * (SIGSEGV in ngx_http_file_cache_create_key), so it is not used.
 * `PROXIES` says which are installed; the tests skip the others with a notice (.ci/run installs both).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';

import { afterEach } from 'vitest';

import { tempDir } from './fixtures.js';
import { freePort } from './registry-server.js';

export const VARNISHD = ['/usr/sbin/varnishd', '/usr/bin/varnishd'].find((file) => existsSync(file));
export const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((file) => existsSync(file));

export interface CachingProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** What the process printed (for a failed start). */
  output(): string;
  stop(): Promise<void>;
}

export interface ProxyOptions {
  /** The origin's `http://127.0.0.1:<port>`. */
  origin: string;
  /** Revalidate with the origin when a client sends `Cache-Control: no-cache` (default false). */
  honourNoCache?: boolean;
}

const running: CachingProxy[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((proxy) => proxy.stop()));
});

/** Resolves once `port` accepts a connection; rejects after `timeoutMs`. */
async function listening(port: number, child: ChildProcess, output: () => string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the proxy exited (${child.exitCode}) before listening:\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`the proxy did not listen on ${port} within ${timeoutMs} ms:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function started(child: ChildProcess, port: number): CachingProxy {
  let printed = '';
  child.stdout?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  let stopped: Promise<void> | undefined;
  const proxy: CachingProxy = {
    url: `http://127.0.0.1:${port}`,
    output: () => printed,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      })),
  };
  running.push(proxy);
  return proxy;
}

function hostPort(origin: string): { host: string; port: string } {
  const url = new URL(origin);
  return { host: url.hostname, port: url.port || '80' };
}

/** The VCL of the tests: docs/registry-hosting.md's ("Behind a CDN"), with the TTL forced to an hour. */
export function testVcl(options: ProxyOptions): string {
  const { host, port } = hostPort(options.origin);
  return `vcl 4.1;

backend origin { .host = "${host}"; .port = "${port}"; }

acl purgers { "127.0.0.1"; }

sub vcl_recv {
  if (req.method == "PURGE") {
    if (client.ip !~ purgers) { return (synth(405, "Not allowed")); }
    return (purge);
  }
${options.honourNoCache ? '  if (req.http.Cache-Control ~ "no-cache") { set req.hash_always_miss = true; }\n' : ''}}

sub vcl_backend_response {
  # Cached for an hour whatever the origin says (return: past the built-in rules, which would not
  # store an answer that says no-cache), as a CDN set to cache long does.
  if (beresp.status == 200) {
    set beresp.ttl = 1h;
    return (deliver);
  }
}

sub vcl_deliver {
  if (obj.hits > 0) { set resp.http.X-Cache = "HIT"; } else { set resp.http.X-Cache = "MISS"; }
}
`;
}

/** Varnish in front of `origin`. */
export async function startVarnish(options: ProxyOptions): Promise<CachingProxy> {
  if (!VARNISHD) throw new Error('varnishd is not installed');
  const dir = await tempDir('tr-varnish-');
  const vcl = path.join(dir, 'registry.vcl');
  await writeFile(vcl, testVcl(options));
  const port = await freePort();
  // `-j none`: no privilege separation (root would otherwise switch to the varnish user, which cannot read a temp folder).
  const child = spawn(VARNISHD, ['-F', '-a', `127.0.0.1:${port}`, '-n', path.join(dir, 'work'), '-f', vcl, '-s', 'malloc,32m', '-j', 'none'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const proxy = started(child, port);
  try {
    await listening(port, child, () => proxy.output());
  } catch (error) {
    await proxy.stop();
    throw error;
  }
  return proxy;
}

/** The nginx configuration of the tests, under `prefix`: docs/registry-hosting.md's ("Behind a CDN"), with the TTL forced to an hour. */
export function testNginxConf(options: ProxyOptions & { prefix: string; port: number }): string {
  const { prefix } = options;
  return `daemon off;
${process.getuid?.() === 0 ? 'user root;\n' : ''}pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${prefix}/temp/body;
  proxy_temp_path ${prefix}/temp/proxy;
  fastcgi_temp_path ${prefix}/temp/fastcgi;
  uwsgi_temp_path ${prefix}/temp/uwsgi;
  scgi_temp_path ${prefix}/temp/scgi;
  proxy_cache_path ${prefix}/cache levels=1:2 keys_zone=registry:1m;
  # A refresh: a GET from this machine with X-Refresh: 1 goes to the origin and its answer replaces the copy.
  map "$remote_addr $http_x_refresh" $refresh { "127.0.0.1 1" 1; default 0; }
  map $http_cache_control $revalidate { default 0; ${options.honourNoCache ? '"~*no-cache" 1;' : ''} }
  server {
    listen 127.0.0.1:${options.port};
    # PURGE (from 127.0.0.1 only) is turned into a refresh of the URL.
    if ($request_method = PURGE) { rewrite ^ /.refresh$uri last; }
    location / {
      proxy_pass ${options.origin};
      proxy_cache registry;
      proxy_cache_key $uri;
      proxy_cache_valid 200 1h;
      proxy_cache_valid 404 1m;
      proxy_ignore_headers Cache-Control Expires;
      proxy_cache_bypass $refresh $revalidate;
      add_header X-Cache $upstream_cache_status always;
    }
    location /.refresh/ {
      internal;
      allow 127.0.0.1;
      deny all;
      proxy_pass http://127.0.0.1:${options.port}/;
      proxy_method GET;
      proxy_set_header X-Refresh 1;
    }
  }
}
`;
}

/** nginx's proxy cache in front of `origin`, taking PURGE from 127.0.0.1 (see testNginxConf). */
export async function startNginx(options: ProxyOptions): Promise<CachingProxy> {
  if (!NGINX) throw new Error('nginx is not installed');
  const prefix = await tempDir('tr-nginx-');
  for (const folder of ['cache', 'temp']) await mkdir(path.join(prefix, folder));
  const port = await freePort();
  const conf = path.join(prefix, 'nginx.conf');
  await writeFile(conf, testNginxConf({ ...options, prefix, port }));
  // -e: the error log of the start-up, before the configuration is read (else /var/log/nginx).
  const child = spawn(NGINX, ['-p', prefix, '-e', path.join(prefix, 'error.log'), '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  const proxy = started(child, port);
  try {
    await listening(port, child, () => proxy.output());
  } catch (error) {
    await proxy.stop();
    throw error;
  }
  return proxy;
}

export interface ProxyKind {
  name: string;
  start: (options: ProxyOptions) => Promise<CachingProxy>;
  /** Why it cannot run here (a missing binary or module); undefined when it can. */
  missing?: string;
}

/** The caching proxies the tests run behind, each with what is missing for it on this machine. */
export const PROXIES: readonly ProxyKind[] = [
  { name: 'Varnish', start: startVarnish, ...(VARNISHD ? {} : { missing: 'varnishd is not installed (Debian: apt-get install varnish)' }) },
  {
    name: 'nginx',
    start: startNginx,
    ...(NGINX ? {} : { missing: 'nginx is not installed (Debian: apt-get install nginx)' }),
  },
];
