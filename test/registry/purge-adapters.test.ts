/**
 * The CDN purge adapters against local fakes of the vendors' APIs: the exact requests each sends
 * (method, path, headers with the credential, body), how a refusal is reported, and which URLs a
 * build's changes purge. Nothing leaves the machine: every API URL points at 127.0.0.1.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

import {
  createPurgeTarget,
  parsePurgeSpec,
  PurgeConfigError,
  purgeInBatches,
  purgeTargetsOf,
  purgeUrlsOf,
  purgeWithRetries,
  type PurgeTarget,
} from '../../src/registry/purge/index.js';
import { cloudflareOk, cloudFrontCreated, cloudFrontTooMany, fastlyOk, startFakeApi } from '../helpers/fake-cdn.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the URLs a change purges', () => {
  it('are the URLs clients fetch: variants folded into their file, the catalog also as the folder, sorted once each', () => {
    const written = ['archives/api/1.1.0.tgz', 'templates/api.json', 'index.html.gz', 'index.html.br', 'index.html', 'index.json.gz', 'index.json.br', 'index.json', 'registry.json.gz', 'registry.json.br', 'registry.json', '_headers'];
    expect(purgeUrlsOf('https://cdn.example/registry/', [...written, 'templates/gone.json'])).toEqual([
      'https://cdn.example/registry/',
      'https://cdn.example/registry/archives/api/1.1.0.tgz',
      'https://cdn.example/registry/index.html',
      'https://cdn.example/registry/index.json',
      'https://cdn.example/registry/registry.json',
      'https://cdn.example/registry/templates/api.json',
      'https://cdn.example/registry/templates/gone.json',
    ]);
  });
});

describe('--purge targets', () => {
  it('reads the vendor forms and a cache address', () => {
    expect(parsePurgeSpec('cloudfront:E2QWRUHAPOMQZL')).toEqual({ kind: 'cloudfront', distributionId: 'E2QWRUHAPOMQZL' });
    expect(parsePurgeSpec('cloudflare:023e105f4ecef8ad9ca31a8372d0c353')).toEqual({ kind: 'cloudflare', zoneId: '023e105f4ecef8ad9ca31a8372d0c353' });
    expect(parsePurgeSpec('fastly:SU1Z0isxPaozGVKXdv0eY')).toEqual({ kind: 'fastly', serviceId: 'SU1Z0isxPaozGVKXdv0eY' });
    expect(parsePurgeSpec('http://127.0.0.1:6081/')).toEqual({ kind: 'http', url: 'http://127.0.0.1:6081' });
  });

  it.each([
    ['akamai:123', 'unknown purge target'],
    ['cloudfront:', 'may only hold'],
    ['cloudflare:a/b', 'may only hold'],
    ['http://user:secret@cache:6081', 'must not hold credentials'],
    ['http://cache:6081/registry', 'its address only'],
  ])('refuses %s, naming the flag and the rule', (value, rule) => {
    expect(() => parsePurgeSpec(value, '--purge')).toThrow(PurgeConfigError);
    expect(() => parsePurgeSpec(value, '--purge')).toThrow(new RegExp(`--purge: .*${rule}`));
  });

  it('needs the vendor token from the environment, and says which variable', () => {
    expect(() => purgeTargetsOf(['cloudflare:abc'], { env: {} })).toThrow(/CLOUDFLARE_API_TOKEN/);
    expect(() => purgeTargetsOf(['fastly:svc'], { env: {} })).toThrow(/FASTLY_API_TOKEN/);
  });
});

describe('CloudFront', () => {
  it('creates one invalidation of the paths, signed with the AWS credentials, at AWS_ENDPOINT_URL_CLOUDFRONT', async () => {
    const api = await startFakeApi(cloudFrontCreated);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY');
    vi.stubEnv('AWS_SESSION_TOKEN', '');
    const target = createPurgeTarget(parsePurgeSpec('cloudfront:E2QWRUHAPOMQZL'), { env: { AWS_ENDPOINT_URL_CLOUDFRONT: api.url } });
    try {
      await target.purge(['https://cdn.example/index.json', 'https://cdn.example/templates/api.json'], { reference: 'job-42' });
    } finally {
      target.close?.();
    }
    expect(api.requests).toHaveLength(1);
    const [request] = api.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/2020-05-31/distribution/E2QWRUHAPOMQZL/invalidation');
    expect(String(request?.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/cloudfront\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/);
    expect(request?.headers['content-type']).toBe('application/xml');
    expect(request?.body).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><InvalidationBatch xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"><Paths><Quantity>2</Quantity><Items><Path>/index.json</Path><Path>/templates/api.json</Path></Items></Paths><CallerReference>job-42</CallerReference></InvalidationBatch>',
    );
  });

  it('reports TooManyInvalidationsInProgress as a failed purge, once (the outbox retries, not the SDK)', async () => {
    const api = await startFakeApi(() => cloudFrontTooMany());
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret');
    const target = createPurgeTarget(parsePurgeSpec('cloudfront:E1'), { env: { AWS_ENDPOINT_URL_CLOUDFRONT: api.url } });
    try {
      await expect(target.purge(['https://cdn.example/index.json'], { reference: 'r' })).rejects.toThrow(/cloudfront:E1: CreateInvalidation failed: TooManyInvalidationsInProgress.*HTTP 400/);
    } finally {
      target.close?.();
    }
    expect(api.requests).toHaveLength(1);
  });

  it('splits more than 1,000 paths into invalidations of 1,000, each with its own reference', async () => {
    const api = await startFakeApi(cloudFrontCreated);
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDEXAMPLE');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret');
    const target = createPurgeTarget(parsePurgeSpec('cloudfront:E1'), { env: { AWS_ENDPOINT_URL_CLOUDFRONT: api.url } });
    const urls = Array.from({ length: 1001 }, (_, n) => `https://cdn.example/templates/t${n}.json`);
    try {
      await purgeInBatches(target, urls, { reference: 'big' });
    } finally {
      target.close?.();
    }
    expect(api.requests.map((r) => /<Quantity>(\d+)<\/Quantity>/.exec(r.body)?.[1])).toEqual(['1000', '1']);
    expect(api.requests.map((r) => /<CallerReference>([^<]+)</.exec(r.body)?.[1])).toEqual(['big-0', 'big-1']);
  });
});

describe('Cloudflare', () => {
  it('purges the URLs by file with the API token, at most 30 per request, at the API base URL', async () => {
    const api = await startFakeApi(() => cloudflareOk());
    const target = createPurgeTarget(parsePurgeSpec('cloudflare:023e105f4ecef8ad9ca31a8372d0c353'), { env: { CLOUDFLARE_API_TOKEN: 'cf-token-1', CLOUDFLARE_API_BASE_URL: `${api.url}/client/v4` } });
    const urls = Array.from({ length: 31 }, (_, n) => `https://cdn.example/templates/t${String(n).padStart(2, '0')}.json`);
    await purgeInBatches(target, urls, { reference: 'r' });
    expect(api.requests.map(({ method, path }) => `${method} ${path}`)).toEqual([
      'POST /client/v4/zones/023e105f4ecef8ad9ca31a8372d0c353/purge_cache',
      'POST /client/v4/zones/023e105f4ecef8ad9ca31a8372d0c353/purge_cache',
    ]);
    for (const request of api.requests) {
      expect(request.headers.authorization).toBe('Bearer cf-token-1');
      expect(request.headers['content-type']).toBe('application/json');
    }
    expect(JSON.parse(api.requests[0]?.body ?? '')).toEqual({ files: urls.slice(0, 30) });
    expect(JSON.parse(api.requests[1]?.body ?? '')).toEqual({ files: urls.slice(30) });
  });

  it('takes the base URL option before the environment', async () => {
    const api = await startFakeApi(() => cloudflareOk());
    const target = createPurgeTarget(parsePurgeSpec('cloudflare:zone1'), { cloudflareApiUrl: `${api.url}/cf`, env: { CLOUDFLARE_API_TOKEN: 't', CLOUDFLARE_API_BASE_URL: 'http://127.0.0.1:9/unused' } });
    await target.purge(['https://cdn.example/index.json'], { reference: 'r' });
    expect(api.requests.map((r) => r.path)).toEqual(['/cf/zones/zone1/purge_cache']);
  });

  it("reports Cloudflare's errors and Retry-After, never the token", async () => {
    const api = await startFakeApi(() => ({
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '7' },
      body: JSON.stringify({ success: false, errors: [{ code: 971, message: 'Please wait and consider throttling your request speed' }] }),
    }));
    const target = createPurgeTarget(parsePurgeSpec('cloudflare:zone1'), { env: { CLOUDFLARE_API_TOKEN: 'cf-secret-token', CLOUDFLARE_API_BASE_URL: api.url } });
    const failure = await target.purge(['https://cdn.example/index.json'], { reference: 'r' }).catch((error: unknown) => error as Error & { retryAfterMs?: number; status?: number });
    expect(failure?.message).toBe('cloudflare:zone1: Cloudflare refused the purge (HTTP 429): 971 Please wait and consider throttling your request speed');
    expect(failure?.status).toBe(429);
    expect(failure?.retryAfterMs).toBe(7000);
    expect(failure?.message).not.toContain('cf-secret-token');
  });

  it('takes a 200 without "success": true for a refusal', async () => {
    const api = await startFakeApi(() => ({ status: 200, body: JSON.stringify({ success: false, errors: [{ code: 1012, message: 'Request must contain one of "purge_everything", "files", "tags", "hosts" or "prefixes"' }] }) }));
    const target = createPurgeTarget(parsePurgeSpec('cloudflare:zone1'), { env: { CLOUDFLARE_API_TOKEN: 't', CLOUDFLARE_API_BASE_URL: api.url } });
    await expect(target.purge(['https://cdn.example/index.json'], { reference: 'r' })).rejects.toThrow(/HTTP 200\): 1012 Request must contain/);
  });
});

describe('Fastly', () => {
  it("purges each URL through Fastly's URL purge with the Fastly-Key", async () => {
    const api = await startFakeApi(() => fastlyOk());
    const target = createPurgeTarget(parsePurgeSpec('fastly:SU1Z0isxPaozGVKXdv0eY'), { env: { FASTLY_API_TOKEN: 'fastly-token-1', FASTLY_API_BASE_URL: api.url } });
    await purgeInBatches(target, ['https://cdn.example/index.json', 'https://cdn.example/templates/api.json'], { reference: 'r' });
    expect(api.requests.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: 'POST', path: '/purge/cdn.example/index.json', body: '' },
      { method: 'POST', path: '/purge/cdn.example/templates/api.json', body: '' },
    ]);
    for (const request of api.requests) {
      expect(request.headers['fastly-key']).toBe('fastly-token-1');
      // A hard purge: a soft one leaves the stale copy answering.
      expect(request.headers['fastly-soft-purge']).toBeUndefined();
    }
  });

  it('takes the base URL option and reports a refusal with its status', async () => {
    const api = await startFakeApi(() => ({ status: 401, body: '{"msg":"Provided credentials are missing or invalid"}' }));
    const target = createPurgeTarget(parsePurgeSpec('fastly:svc'), { fastlyApiUrl: api.url, env: { FASTLY_API_TOKEN: 'bad' } });
    await expect(target.purge(['https://cdn.example/index.json'], { reference: 'r' })).rejects.toThrow(
      'fastly:svc: Fastly refused the purge of https://cdn.example/index.json (HTTP 401): {"msg":"Provided credentials are missing or invalid"}',
    );
  });
});

describe('a cache taking HTTP PURGE', () => {
  it("sends PURGE of each URL's path to the cache's address with the public host", async () => {
    const cache = await startFakeApi(() => ({ status: 200, body: 'Purged' }));
    const target = createPurgeTarget(parsePurgeSpec(cache.url));
    await purgeInBatches(target, ['https://registry.example/index.json', 'https://registry.example/templates/api.json'], { reference: 'r' });
    expect(cache.requests.map(({ method, path, headers }) => `${method} ${path} Host: ${String(headers.host)}`)).toEqual([
      'PURGE /index.json Host: registry.example',
      'PURGE /templates/api.json Host: registry.example',
    ]);
  });

  it("takes nginx's 404 (the URL was not cached) for done, and a 405 for a refusal", async () => {
    const notCached = await startFakeApi(() => ({ status: 404 }));
    await expect(createPurgeTarget(parsePurgeSpec(notCached.url)).purge(['https://registry.example/index.json'], { reference: 'r' })).resolves.toBeUndefined();
    const refusing = await startFakeApi(() => ({ status: 405, body: '<html><body><h1>Method Not Allowed</h1></body></html>' }));
    await expect(createPurgeTarget(parsePurgeSpec(refusing.url)).purge(['https://registry.example/index.json'], { reference: 'r' })).rejects.toThrow(
      `${refusing.url}: PURGE https://registry.example/index.json was refused (HTTP 405): Method Not Allowed`,
    );
  });
});

describe('a purge run with retries (build-registry)', () => {
  const flaky = (failures: number): PurgeTarget & { calls: number } => {
    const target = {
      spec: 'http://cache',
      batchSize: 10,
      calls: 0,
      purge: () => {
        target.calls++;
        return target.calls <= failures ? Promise.reject(new Error(`down ${target.calls}`)) : Promise.resolve();
      },
    };
    return target;
  };

  it('retries a failed target with growing waits, and reports what still failed after every attempt', async () => {
    const waits: number[] = [];
    const sleep = (ms: number): Promise<void> => {
      waits.push(ms);
      return Promise.resolve();
    };
    const recovers = flaky(2);
    const stays = { ...flaky(99), spec: 'cloudflare:z' };
    const result = await purgeWithRetries([recovers, stays], ['https://cdn.example/index.json'], { reference: 'r', attempts: 3, sleep, random: () => 0.5 });
    expect(result).toEqual({ purged: ['http://cache'], failed: [{ target: 'cloudflare:z', error: 'down 3' }] });
    expect(recovers.calls).toBe(3);
    expect(waits).toEqual([1000, 2000, 1000, 2000]);
  });
});
