import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import {
  assetUploadUrl,
  createGitHubClient,
  GitHubApiError,
  octokitReleaseApi,
  publishRelease,
  type GitHubClientOptions,
  type ReleaseApi,
  type ReleaseAssetFile,
} from '../../src/github/index.js';
import { startFakeGitHub, type FakeGitHub, type RecordedRequest } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';

// ---------------------------------------------------------------------------------------------
// The OpenAPI extract
// ---------------------------------------------------------------------------------------------

interface Operation {
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}
const openapi = JSON.parse(await readFile(path.resolve('test/fixtures/github-releases.openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
// OpenAPI 3.0's `nullable` is one of Ajv's own keywords; `example` and friends are ignored (strict: false).
const ajv = new Ajv({ strict: false, allErrors: true });
(addFormatsModule as unknown as (a: Ajv) => Ajv)(ajv);

function operation(route: string, method: string): Operation {
  const op = openapi.paths[route]?.[method];
  if (!op) throw new Error(`${method} ${route} is not in the extract`);
  return op;
}
const compiled = new Map<string, ValidateFunction>();
function validator(key: string, schema: object | undefined): ValidateFunction {
  if (!schema) throw new Error(`no schema for ${key}`);
  let validate = compiled.get(key);
  if (!validate) compiled.set(key, (validate = ajv.compile(schema)));
  return validate;
}
const requestSchema = (route: string, method: string): ValidateFunction =>
  validator(`${method} ${route} request`, operation(route, method).requestBody?.content['application/json']?.schema);
const responseSchema = (route: string, method: string, status: number): ValidateFunction =>
  validator(`${method} ${route} ${status}`, operation(route, method).responses[status]?.content?.['application/json']?.schema);

function expectValid(validate: ValidateFunction, value: unknown): void {
  const valid = validate(value);
  expect(valid ? [] : validate.errors).toEqual([]);
}

// ---------------------------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------------------------

const TOKEN = 'ghs_release_test_token_0123456789';
const OWNER = 'acme';
const REPO = 'templates';
const RELEASES = `/repos/${OWNER}/${REPO}/releases`;

let fake: FakeGitHub;
let logs: string[];

beforeEach(async () => {
  fake = await startFakeGitHub({ token: TOKEN, owner: OWNER, repo: REPO });
  logs = [];
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await fake.close();
});

function client(extra: Partial<GitHubClientOptions> = {}) {
  return createGitHubClient({
    token: TOKEN,
    baseUrl: fake.url,
    retryAfterBaseValue: 1,
    throttle: { enabled: false },
    log: (message) => logs.push(message),
    ...extra,
  });
}
const releaseApi = (extra: Partial<GitHubClientOptions> = {}): ReleaseApi => octokitReleaseApi(client(extra), OWNER, REPO);

async function assetFiles(): Promise<ReleaseAssetFile[]> {
  const dir = await tempDir('tr-release-');
  const archive = path.join(dir, 'demo-1.2.0.tgz');
  const manifest = path.join(dir, 'template.json');
  await writeFile(archive, randomBytes(300_000));
  await writeFile(manifest, JSON.stringify({ name: 'demo', version: '1.2.0' }));
  return [
    { name: 'demo-1.2.0.tgz', path: archive, contentType: 'application/gzip' },
    { name: 'template.json', path: manifest, contentType: 'application/json' },
  ];
}
const sha256 = async (file: string): Promise<string> => createHash('sha256').update(await readFile(file)).digest('hex');

/** `METHOD /path` with numeric ids replaced by `:id`. */
const callsOf = (requests: RecordedRequest[]): string[] => requests.map((r) => `${r.method} ${r.path.replace(/\/\d+(?=\/|$)/g, '/:id')}`);

const options = (assets: ReleaseAssetFile[], body = '### Added\n\n- Things.') => ({ tag: 'v1.2.0', name: 'demo 1.2.0', body, assets });

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe('publishRelease with the Octokit ReleaseApi', () => {
  it('creates a draft, uploads the assets, then publishes it', async () => {
    const assets = await assetFiles();
    const result = await publishRelease(releaseApi(), options(assets));

    expect(callsOf(fake.requests)).toEqual([
      `GET ${RELEASES}`,
      `POST ${RELEASES}`,
      `POST /upload${RELEASES}/:id/assets`,
      `POST /upload${RELEASES}/:id/assets`,
      `PATCH ${RELEASES}/:id`,
    ]);
    const [list, create, upload1, upload2, patch] = fake.requests;
    expect(list?.query).toMatchObject({ per_page: '100' });
    expect(create?.body).toEqual({ tag_name: 'v1.2.0', name: 'demo 1.2.0', body: '### Added\n\n- Things.', draft: true });
    expect(patch?.body).toEqual({ draft: false });
    expect(fake.requests.every((r) => r.headers.authorization === `token ${TOKEN}`)).toBe(true);
    expect(fake.requests.every((r) => r.status < 300)).toBe(true);

    // Uploads: the name in the query, the content type, a known length (no chunked encoding), the bytes.
    for (const [request, asset] of [
      [upload1, assets[0]],
      [upload2, assets[1]],
    ] as const) {
      const { size } = await readFile(asset!.path).then((b) => ({ size: b.length }));
      expect(request?.query).toEqual({ name: asset!.name });
      expect(request?.headers['content-type']).toBe(asset!.contentType);
      expect(request?.headers['content-length']).toBe(String(size));
      expect(request?.headers['transfer-encoding']).toBeUndefined();
      expect(request?.body).toEqual({ bytes: size, sha256: await sha256(asset!.path) });
    }

    expect(fake.releases.size).toBe(1);
    const release = [...fake.releases.values()][0]!;
    expect(release).toMatchObject({ tag_name: 'v1.2.0', name: 'demo 1.2.0', body: '### Added\n\n- Things.', draft: false });
    expect(release.published_at).not.toBeNull();
    expect(release.assets.map((a) => [a.name, a.sha256])).toEqual([
      ['demo-1.2.0.tgz', await sha256(assets[0]!.path)],
      ['template.json', await sha256(assets[1]!.path)],
    ]);
    expect(result).toEqual({
      id: release.id,
      url: `${fake.url}/${OWNER}/${REPO}/releases/tag/v1.2.0`,
      created: true,
      assets: release.assets.map((a) => ({
        id: a.id,
        name: a.name,
        browser_download_url: `${fake.url}/${OWNER}/${REPO}/releases/download/untagged-${release.id}/${a.name}`,
      })),
    });
  });

  it('updates the one release on a second run: new notes, assets replaced, not duplicated', async () => {
    const assets = await assetFiles();
    const first = await publishRelease(releaseApi(), options(assets));
    const firstAssetIds = [...fake.releases.values()][0]!.assets.map((a) => a.id);
    await writeFile(assets[0]!.path, randomBytes(1000));
    fake.requests.length = 0;

    const second = await publishRelease(releaseApi(), options(assets, 'Better notes.'));

    expect(callsOf(fake.requests)).toEqual([
      `GET ${RELEASES}`,
      `GET ${RELEASES}/:id/assets`,
      `DELETE ${RELEASES}/assets/:id`,
      `POST /upload${RELEASES}/:id/assets`,
      `DELETE ${RELEASES}/assets/:id`,
      `POST /upload${RELEASES}/:id/assets`,
      `PATCH ${RELEASES}/:id`,
    ]);
    expect(fake.requests.filter((r) => r.method === 'DELETE').map((r) => Number(r.path.split('/').at(-1)))).toEqual(firstAssetIds);
    expect(fake.requests.at(-1)?.body).toEqual({ name: 'demo 1.2.0', body: 'Better notes.', draft: false });

    expect(fake.releases.size).toBe(1);
    const release = [...fake.releases.values()][0]!;
    expect(release).toMatchObject({ body: 'Better notes.', draft: false });
    expect(release.assets.map((a) => a.name)).toEqual(['demo-1.2.0.tgz', 'template.json']);
    expect(release.assets[0]?.sha256).toBe(await sha256(assets[0]!.path));
    expect(second).toMatchObject({ id: first.id, url: first.url, created: false });
    expect(second.assets.map((a) => a.id)).not.toEqual(firstAssetIds);
  });

  it('finds and completes the draft left by a run that crashed half-way', async () => {
    const assets = await assetFiles();
    const api = releaseApi();
    let uploads = 0;
    const crashing: ReleaseApi = {
      ...api,
      uploadAsset: async (release, asset) => {
        if (++uploads === 2) throw new Error('the runner was stopped');
        return api.uploadAsset(release, asset);
      },
    };
    await expect(publishRelease(crashing, options(assets))).rejects.toThrow('the runner was stopped');
    const draft = [...fake.releases.values()][0]!;
    expect(draft).toMatchObject({ draft: true });
    expect(draft.assets.map((a) => a.name)).toEqual(['demo-1.2.0.tgz']);
    // The tag endpoint does not see drafts, which is why the release is looked up in the list.
    const byTag = await fetch(`${fake.url}${RELEASES}/tags/v1.2.0`, { headers: { authorization: `token ${TOKEN}` } });
    expect(byTag.status).toBe(404);
    fake.requests.length = 0;

    const result = await publishRelease(releaseApi(), options(assets));

    expect(callsOf(fake.requests)).not.toContain(`POST ${RELEASES}`);
    expect(result).toMatchObject({ id: draft.id, created: false });
    expect(fake.releases.size).toBe(1);
    expect(draft).toMatchObject({ draft: false, name: 'demo 1.2.0' });
    expect(draft.assets.map((a) => a.name)).toEqual(['demo-1.2.0.tgz', 'template.json']);
  });

  it('completes a seeded leftover draft with a stale asset', async () => {
    const assets = await assetFiles();
    const draft = fake.addRelease({ tag_name: 'v1.2.0', draft: true, name: 'old', assets: [{ name: 'template.json', content: '{}' }] });
    const result = await publishRelease(releaseApi(), options(assets));
    expect(result).toMatchObject({ id: draft.id, created: false });
    expect(fake.releases.size).toBe(1);
    expect(draft.assets.map((a) => [a.name, a.size])).toEqual([
      ['demo-1.2.0.tgz', 300_000],
      ['template.json', (await readFile(assets[1]!.path)).length],
    ]);
  });

  it('recovers from the leftover of a failed upload attempt (422 already_exists)', async () => {
    const assets = await assetFiles();
    const api = releaseApi();
    let failed = false;
    const flaky: ReleaseApi = {
      ...api,
      uploadAsset: async (release, asset) => {
        if (!failed) {
          failed = true;
          // What GitHub keeps of an interrupted upload, found by the retry of the attempt.
          fake.releases.get(release.id)!.assets.push({ ...fake.addRelease({ tag_name: 'x', assets: [{ name: asset.name, content: 'partial' }] }).assets[0]! });
          throw new GitHubApiError('GitHub API: uploading failed with 422: Validation Failed (name already_exists)', 422);
        }
        return api.uploadAsset(release, asset);
      },
    };
    const result = await publishRelease(flaky, options(assets));
    const release = fake.releases.get(result.id)!;
    expect(release.assets.map((a) => [a.name, a.size])).toEqual([
      ['demo-1.2.0.tgz', 300_000],
      ['template.json', (await readFile(assets[1]!.path)).length],
    ]);
  });

  it('refuses two assets with the same name before sending anything', async () => {
    const [a] = await assetFiles();
    await expect(publishRelease(releaseApi(), options([a!, { ...a! }]))).rejects.toThrow(/Two release assets are named demo-1\.2\.0\.tgz/);
    expect(fake.requests).toHaveLength(0);
  });

  it('sends request bodies valid against the OpenAPI requestBody schemas', async () => {
    const assets = await assetFiles();
    await publishRelease(releaseApi(), options(assets));
    await publishRelease(releaseApi(), options(assets, 'Again.'));
    const creates = fake.requests.filter((r) => r.method === 'POST' && r.path === RELEASES);
    const patches = fake.requests.filter((r) => r.method === 'PATCH');
    expect(creates).toHaveLength(1);
    expect(patches).toHaveLength(2);
    for (const r of creates) expectValid(requestSchema('/repos/{owner}/{repo}/releases', 'post'), r.body);
    for (const r of patches) expectValid(requestSchema('/repos/{owner}/{repo}/releases/{release_id}', 'patch'), r.body);
  });
});

describe('findReleaseByTag', () => {
  it('pages through the releases (per_page 100) to find a draft', async () => {
    const draft = fake.addRelease({ tag_name: 'v1.2.0', draft: true });
    for (let i = 0; i < 150; i++) fake.addRelease({ tag_name: `v0.0.${i}` });
    const found = await releaseApi().findReleaseByTag('v1.2.0');
    expect(found).toMatchObject({ id: draft.id, tag_name: 'v1.2.0', draft: true });
    expect(fake.requests.map((r) => r.query)).toEqual([{ per_page: '100' }, { per_page: '100', page: '2' }]);
  });

  it('prefers the published release, then the oldest draft, and ignores other tags', async () => {
    fake.addRelease({ tag_name: 'v1.2.0-rc.1' });
    const oldDraft = fake.addRelease({ tag_name: 'v1.2.0', draft: true });
    fake.addRelease({ tag_name: 'v1.2.0', draft: true });
    expect(await releaseApi().findReleaseByTag('v1.2.0')).toMatchObject({ id: oldDraft.id });
    const published = fake.addRelease({ tag_name: 'v1.2.0' });
    fake.addRelease({ tag_name: 'v1.2.0', draft: true });
    expect(await releaseApi().findReleaseByTag('v1.2.0')).toMatchObject({ id: published.id, draft: false });
    expect(await releaseApi().findReleaseByTag('v9.9.9')).toBeUndefined();
  });
});

describe('errors and retries', () => {
  it('retries a 500 on create (plugin-retry) and creates one release', async () => {
    const assets = await assetFiles();
    fake.fail([500], { method: 'POST', path: RELEASES });
    await publishRelease(releaseApi(), options(assets));
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path === RELEASES).map((r) => r.status)).toEqual([500, 201]);
    expect(fake.releases.size).toBe(1);
  });

  it('retries a failed upload with the whole file again', async () => {
    const assets = await assetFiles();
    fake.fail([500, 502], { method: 'POST', path: /^\/upload\// });
    await publishRelease(releaseApi(), options(assets));
    const uploads = fake.requests.filter((r) => r.path.startsWith('/upload/'));
    expect(uploads.map((r) => r.status)).toEqual([500, 502, 201, 201]);
    const digest = await sha256(assets[0]!.path);
    expect(uploads.slice(0, 3).map((r) => r.body)).toEqual(Array(3).fill({ bytes: 300_000, sha256: digest }));
    expect([...fake.releases.values()][0]?.assets[0]?.sha256).toBe(digest);
  });

  it('gives up after `retries` retries of a 5xx', async () => {
    fake.fail([503, 503, 503], { method: 'GET' });
    await expect(releaseApi({ retries: 2 }).findReleaseByTag('v1.2.0')).rejects.toMatchObject({ name: 'GitHubApiError', status: 503 });
    expect(fake.requests).toHaveLength(3);
  });

  it('does not retry a 422, and says what failed', async () => {
    const assets = await assetFiles();
    fake.fail(
      [{ status: 422, body: { message: 'Validation Failed', errors: [{ resource: 'Release', code: 'invalid', field: 'tag_name' }] } }],
      { method: 'POST', path: RELEASES },
    );
    const error = await publishRelease(releaseApi(), options(assets)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubApiError);
    expect(error).toMatchObject({
      status: 422,
      message: 'GitHub API: creating the release v1.2.0 in acme/templates failed with 422: Validation Failed (tag_name invalid)',
    });
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(fake.releases.size).toBe(0);
  });

  it('fails on a 401 with a clear error, without retrying and without the token', async () => {
    const wrong = 'ghs_wrong_token_987654321';
    const error = await publishRelease(releaseApi({ token: wrong }), options(await assetFiles())).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubApiError);
    const { message } = error as GitHubApiError;
    expect(message).toBe(
      'GitHub API: listing the releases of acme/templates failed with 401: Bad credentials (the token was rejected; check the token given to the action)',
    );
    expect(message).not.toContain(wrong);
    expect(fake.requests).toHaveLength(1);
    expect(logs.join('\n')).not.toContain(wrong);
  });

  it('retries on a rate limit up to twice, with a log line that does not show the token', async () => {
    const reset = String(Math.floor(Date.now() / 1000));
    const rateLimited = {
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset },
      body: { message: 'API rate limit exceeded for installation ID 1.', documentation_url: 'https://docs.github.com/rest' },
    };
    const throttled = () => releaseApi({ throttle: { id: randomUUID(), retryAfterBaseValue: 1 } });

    fake.fail([rateLimited, rateLimited], { method: 'GET' });
    expect(await throttled().findReleaseByTag('v1.2.0')).toBeUndefined();
    expect(fake.requests.map((r) => r.status)).toEqual([403, 403, 200]);
    const limitLines = () => logs.filter((l) => l.startsWith('GitHub '));
    expect(limitLines()).toHaveLength(2);
    // The wait is the reset time minus now, so 0 or 1 s depending on when the second turns.
    expect(limitLines()[0]).toMatch(/^GitHub rate limit hit by GET http:\/\/127\.0\.0\.1:\d+\/repos\/acme\/templates\/releases\?per_page=100; retrying in [01]s \(retry 1 of 2\)$/);
    expect(limitLines()[1]).toMatch(/\(retry 2 of 2\)$/);
    // Octokit's own line for each failed request.
    expect(logs.filter((l) => l.includes(' - 403 with id '))).toHaveLength(2);

    fake.requests.length = 0;
    logs.length = 0;
    fake.fail([rateLimited, rateLimited, rateLimited], { method: 'GET' });
    await expect(throttled().findReleaseByTag('v1.2.0')).rejects.toMatchObject({ status: 403, message: expect.stringMatching(/rate limit exceeded.*contents: write/) });
    expect(fake.requests).toHaveLength(3);
    expect(limitLines().at(-1)).toMatch(/giving up after 2 retries$/);
    expect(logs.join('\n')).not.toContain(TOKEN);
  });

  it('retries on a secondary rate limit', async () => {
    fake.fail(
      [{ status: 403, headers: { 'retry-after': '1' }, body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.' } }],
      { method: 'GET' },
    );
    const api = releaseApi({ throttle: { id: randomUUID(), retryAfterBaseValue: 1 } });
    expect(await api.findReleaseByTag('v1.2.0')).toBeUndefined();
    expect(fake.requests.map((r) => r.status)).toEqual([403, 200]);
    expect(logs.filter((l) => l.startsWith('GitHub '))).toEqual([
      `GitHub secondary rate limit hit by GET ${fake.url}${RELEASES}?per_page=100; retrying in 1s (retry 1 of 2)`,
    ]);
  });
});

describe('createGitHubClient', () => {
  it('defaults the base URL to $GITHUB_API_URL and sends the user agent and token', async () => {
    vi.stubEnv('GITHUB_API_URL', `${fake.url}/`);
    const octokit = createGitHubClient({ token: TOKEN, userAgent: 'publish-action/1.0', throttle: { enabled: false } });
    await octokitReleaseApi(octokit, OWNER, REPO).findReleaseByTag('v1.0.0');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]?.headers['user-agent']).toMatch(/^publish-action\/1\.0 octokit-rest\.js/);
    expect(fake.requests[0]?.headers.authorization).toBe(`token ${TOKEN}`);
  });

  it('requires a token', () => {
    expect(() => createGitHubClient({ token: '' })).toThrow(/token is required/);
  });

  it('builds the upload URL from the upload_url template', () => {
    expect(assetUploadUrl('https://uploads.github.com/repos/o/r/releases/1/assets{?name,label}', 'my file.tgz')).toBe(
      'https://uploads.github.com/repos/o/r/releases/1/assets?name=my%20file.tgz',
    );
    expect(assetUploadUrl('https://uploads.example/assets', 'a.json')).toBe('https://uploads.example/assets?name=a.json');
  });
});

describe('the fake GitHub', () => {
  const get = (p: string) => fetch(`${fake.url}${p}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const send = (method: string, p: string, body: unknown) =>
    fetch(`${fake.url}${p}`, { method, headers: { authorization: `token ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('answers with bodies valid against the OpenAPI response schemas', async () => {
    const created = await send('POST', RELEASES, { tag_name: 'v1.0.0', name: 'One', body: 'Notes', draft: true });
    expect(created.status).toBe(201);
    const draft = (await created.json()) as { id: number; upload_url: string };
    expectValid(responseSchema('/repos/{owner}/{repo}/releases', 'post', 201), draft);

    const uploaded = await fetch(assetUploadUrl(draft.upload_url, 'a.bin'), {
      method: 'POST',
      headers: { authorization: `token ${TOKEN}`, 'content-type': 'application/octet-stream' },
      body: Buffer.from('abc'),
    });
    expect(uploaded.status).toBe(201);
    const asset = (await uploaded.json()) as { id: number; digest: string };
    expectValid(responseSchema('/repos/{owner}/{repo}/releases/{release_id}/assets', 'post', 201), asset);
    expect(asset.digest).toBe(`sha256:${createHash('sha256').update('abc').digest('hex')}`);

    const list = await get(RELEASES);
    expectValid(responseSchema('/repos/{owner}/{repo}/releases', 'get', 200), await list.json());
    expectValid(responseSchema('/repos/{owner}/{repo}/releases/{release_id}', 'get', 200), await (await get(`${RELEASES}/${draft.id}`)).json());
    expectValid(responseSchema('/repos/{owner}/{repo}/releases/{release_id}/assets', 'get', 200), await (await get(`${RELEASES}/${draft.id}/assets`)).json());
    expectValid(responseSchema('/repos/{owner}/{repo}/releases/assets/{asset_id}', 'get', 200), await (await get(`${RELEASES}/assets/${asset.id}`)).json());

    const patched = await send('PATCH', `${RELEASES}/${draft.id}`, { draft: false });
    expect(patched.status).toBe(200);
    const published = await patched.json();
    expectValid(responseSchema('/repos/{owner}/{repo}/releases/{release_id}', 'patch', 200), published);
    expect(published).toMatchObject({ draft: false, published_at: expect.any(String), tarball_url: expect.any(String) });
    expectValid(responseSchema('/repos/{owner}/{repo}/releases/tags/{tag}', 'get', 200), await (await get(`${RELEASES}/tags/v1.0.0`)).json());

    expect((await fetch(`${fake.url}${RELEASES}/assets/${asset.id}`, { method: 'DELETE', headers: { authorization: `token ${TOKEN}` } })).status).toBe(204);
  });

  it('behaves like GitHub on tags, names, lengths and credentials', async () => {
    // Drafts may share a tag; a second published release for a tag may not.
    expect((await send('POST', RELEASES, { tag_name: 'v1.0.0', draft: true })).status).toBe(201);
    expect((await send('POST', RELEASES, { tag_name: 'v1.0.0', draft: true })).status).toBe(201);
    expect((await send('POST', RELEASES, { tag_name: 'v1.0.0' })).status).toBe(201);
    const duplicate = await send('POST', RELEASES, { tag_name: 'v1.0.0' });
    expect(duplicate.status).toBe(422);
    expect(await duplicate.json()).toMatchObject({ errors: [{ code: 'already_exists', field: 'tag_name' }] });
    const [firstDraft] = fake.releasesByTag('v1.0.0');
    expect((await send('PATCH', `${RELEASES}/${firstDraft!.id}`, { draft: false })).status).toBe(422);
    expect((await send('POST', RELEASES, { name: 'no tag' })).status).toBe(422);

    const upload = (body: Buffer | ReadableStream, headers: Record<string, string> = {}) =>
      fetch(`${fake.url}/upload${RELEASES}/${firstDraft!.id}/assets?name=a.txt`, {
        method: 'POST',
        headers: { authorization: `token ${TOKEN}`, 'content-type': 'text/plain', ...headers },
        body,
        duplex: 'half',
      });
    expect((await upload(Buffer.from('x'))).status).toBe(201);
    expect((await upload(Buffer.from('y'))).status).toBe(422);
    expect((await upload(new Blob(['z']).stream())).status).toBe(411);

    expect((await fetch(`${fake.url}${RELEASES}`)).status).toBe(401);
    expect((await fetch(`${fake.url}${RELEASES}`, { headers: { authorization: 'token nope' } })).status).toBe(401);
    expect((await get('/repos/other/repo/releases')).status).toBe(404);
  });
});
