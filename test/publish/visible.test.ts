/**
 * Waiting until a published version is visible at the registry's public URL:
 * its template file polled with `Cache-Control: no-cache` until it lists the version, within a
 * bounded wait; a time-out says which URL served what. The clock is a fake one: no real waits.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

import { afterEach, describe, expect, it } from 'vitest';

import { DEFAULT_VISIBLE_TIMEOUT_MS, notVisibleWarning, templateFileUrl, waitUntilVisible } from '../../src/publish/index.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A host answering `/reg/templates/api.json` with `answer(n)` for the n-th request. */
async function host(answer: (n: number) => { status: number; body?: unknown; headers?: Record<string, string> }): Promise<{ url: string; requests: { path: string; headers: IncomingHttpHeaders }[] }> {
  const requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    const { status, body, headers = {} } = answer(requests.length);
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body === undefined ? '' : JSON.stringify(body));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/reg`, requests };
}

const file = (...versions: string[]) => ({ id: 'api', versions: versions.map((version) => ({ id: 'api', version })) });

/** A fake clock: `sleep` moves it on at once and records each wait. */
function fakeClock() {
  let now = 1_000_000;
  const waits: number[] = [];
  return {
    waits,
    now: () => now,
    sleep: (ms: number) => {
      waits.push(ms);
      now += ms;
      return Promise.resolve();
    },
  };
}

describe('waiting until a version is visible', () => {
  it("polls the template file beside registry.json with no-cache until it lists the version, and says after how long", async () => {
    const registry = await host((n) => ({ status: 200, body: n < 3 ? file('1.0.0') : file('1.0.0', '1.1.0') }));
    const clock = fakeClock();
    const result = await waitUntilVisible({ registryUrl: `${registry.url}/registry.json`, id: 'api', version: '1.1.0', now: clock.now, sleep: clock.sleep });
    expect(result).toEqual({ visible: true, url: `${registry.url}/templates/api.json`, afterMs: 3000, attempts: 3, served: 'HTTP 200 listing 1.0.0, 1.1.0' });
    expect(clock.waits).toEqual([1000, 2000]);
    expect(registry.requests.map((r) => `${r.path} ${String(r.headers['cache-control'])}`)).toEqual(Array(3).fill('/reg/templates/api.json no-cache'));
  });

  it('times out after the bound (5 minutes by default), polls at most 10 s apart, and the warning names the URL and what it served', async () => {
    const registry = await host(() => ({ status: 200, body: file('1.0.0'), headers: { age: '42' } }));
    const clock = fakeClock();
    const result = await waitUntilVisible({ registryUrl: registry.url, id: 'api', version: '1.1.0', now: clock.now, sleep: clock.sleep });
    expect(result.visible).toBe(false);
    expect(result.afterMs).toBe(DEFAULT_VISIBLE_TIMEOUT_MS);
    expect(clock.waits.slice(0, 6)).toEqual([1000, 2000, 4000, 8000, 10_000, 10_000]);
    expect(clock.waits.reduce((sum, ms) => sum + ms, 0)).toBe(DEFAULT_VISIBLE_TIMEOUT_MS);
    expect(result.served).toBe('HTTP 200 listing 1.0.0 (Age: 42)');
    expect(notVisibleWarning(result, 'api', '1.1.0')).toBe(
      `api@1.1.0 is published, but ${registry.url}/templates/api.json did not list it within 300 s (${result.attempts} polls with Cache-Control: no-cache); it last served HTTP 200 listing 1.0.0 (Age: 42). A CDN in front of the registry serves its copy until it expires or is purged (see "Behind a CDN" in docs/registry-hosting.md).`,
    );
  });

  it('keeps polling through a 404 and an unreachable host, and reports them as what was served', async () => {
    const registry = await host((n) => (n === 1 ? { status: 404 } : { status: 200, body: { not: 'a template file' } }));
    const clock = fakeClock();
    const seen: string[] = [];
    const result = await waitUntilVisible({ registryUrl: registry.url, id: 'api', version: '1.0.0', timeoutMs: 5000, now: clock.now, sleep: clock.sleep, onPoll: ({ served }) => seen.push(served) });
    expect(result.visible).toBe(false);
    expect(seen.slice(0, 2)).toEqual(['HTTP 404', 'HTTP 200 with JSON that is not a template file']);
    const nowhere = await waitUntilVisible({ registryUrl: 'http://127.0.0.1:9', id: 'api', version: '1.0.0', timeoutMs: 1000, now: clock.now, sleep: clock.sleep });
    expect(nowhere.served).toMatch(/^no answer \(.+\)$/);
  });

  it('finds the template file of a registry given by its base URL or its registry.json', () => {
    expect(templateFileUrl('https://cdn.example/registry', 'api')).toBe('https://cdn.example/registry/templates/api.json');
    expect(templateFileUrl('https://cdn.example/registry/registry.json', 'api')).toBe('https://cdn.example/registry/templates/api.json');
  });
});
