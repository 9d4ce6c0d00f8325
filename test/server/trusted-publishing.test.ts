/**
 * Trusted publishing on a running server: trusted publishers of a name (saved by its owners, or
 * pending on an unclaimed name), the exchange of a GitHub Actions ID token (signed here with jose by
 * a loopback issuer) for a 15-minute publisher token limited to the matching templates, and every
 * refusal of the exchange naming the claim at fault.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { packTemplate, type PackResult } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { createServer } from '../../src/server/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startFakeOidc, type FakeOidc, type RunClaims } from '../helpers/fake-oidc.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { publishableManifest, writePublishableTemplate } from '../publish/publishable-template.js';

interface Answer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- envelopes are read field by field below
  body: any;
}

async function call(server: TestServer, method: string, route: string, options: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

const packs = new Map<string, Promise<PackResult>>();
/** Where the archives of the file are packed, once (tempDir's folders go after each test). */
const packDir = mkdtemp(path.join(tmpdir(), 'tr-tp-pack-'));
afterAll(async () => {
  await rm(await packDir, { recursive: true, force: true });
});
/** `name` packed at `version` (once per file). */
function packed(name: string, version = '1.0.0'): Promise<PackResult> {
  const key = `${name}@${version}`;
  let pack = packs.get(key);
  if (!pack) {
    pack = (async () => {
      const dir = await writePublishableTemplate({ 'template.json': { ...publishableManifest, name, version } });
      return packTemplate(dir, { outDir: path.join(await packDir, key), version });
    })();
    packs.set(key, pack);
  }
  return pack;
}

async function publish(server: TestServer, token: string, name: string, version = '1.0.0'): Promise<unknown> {
  const pack = await packed(name, version);
  return publishTemplate({ registryUrl: server.url, token, archive: pack.file, manifest: pack.manifest, retries: 0 });
}

interface World {
  server: TestServer;
  oidc: FakeOidc;
  audience: string;
  /** Moves the server's clock. */
  advance(ms: number): void;
  /** The server's clock, in seconds. */
  seconds(): number;
  /** Signs GitHub's claims of a run (over the default one) for the registry, now, with `changes` laid over them. */
  token(run?: Partial<RunClaims>, changes?: Record<string, unknown>): Promise<string>;
  exchange(idToken: string): Promise<Answer>;
}

async function world(options: { githubApiUrl?: string } = {}): Promise<World> {
  const oidc = await startFakeOidc();
  let offset = 0;
  const clock = (): Date => new Date(Date.now() + offset);
  const server = await startRegistryServer({ oidcIssuers: [oidc.issuer], clock, ...options });
  const audience = `template-registry:${new URL(server.url).host}`;
  const seconds = (): number => Math.floor(clock().getTime() / 1000);
  return {
    server,
    oidc,
    audience,
    advance: (ms) => {
      offset += ms;
    },
    seconds,
    token: async (run = {}, changes = {}) => {
      const claims: Record<string, unknown> = { ...oidc.claims(audience, seconds(), run), ...changes };
      for (const [name, value] of Object.entries(changes)) if (value === undefined) delete claims[name];
      return oidc.sign(claims);
    },
    exchange: (idToken) => call(server, 'POST', '/api/oidc/token', { body: { token: idToken } }),
  };
}

/** Saves a trusted publisher of `template` for the default run's repository with `server.token` (or `token`). */
async function trust(w: World, template: string, body: Record<string, unknown> = {}, token = w.server.token): Promise<Answer> {
  return call(w.server, 'POST', `/templates/${template}/trusted-publishers`, {
    token,
    body: { issuer: w.oidc.issuer, repository: 'acme/web-app', repositoryOwnerId: '4242', workflow: 'publish.yml', ...body },
  });
}

/** Expects a 400 naming `claim` as the field of its detail (and the message saying so). */
function expectRefused(answer: Answer, claim: string, why: RegExp): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  expect(schemaErrors('error-envelope', answer.body)).toEqual([]);
  expect(answer.body.error.code).toBe('INVALID_ID_TOKEN');
  expect(answer.body.error.details[0]).toMatchObject({ field: claim });
  expect(answer.body.error.details[0].message).toMatch(why);
}

describe('trusted publishing: the exchange of an ID token', () => {
  it('lets the first publish through a pending trusted publisher claim a new name, the version showing the run', async () => {
    const w = await world();
    const saved = await trust(w, 'fresh-app', { environment: 'release', ref: 'refs/tags/v*' });
    expect(saved.status).toBe(201);
    expect(saved.body.data).toMatchObject({ template: 'fresh-app', repository: 'acme/web-app', repositoryOwnerId: '4242', workflow: 'publish.yml', environment: 'release', ref: 'refs/tags/v*', pending: true });
    const minter = (await w.server.store.tokens.listTokens())[0]!;

    const exchanged = await w.exchange(await w.token({ environment: 'Release' }));
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(201);
    const { token, expiresAt, templates, publisher } = exchanged.body.data;
    expect(templates).toEqual(['fresh-app']);
    expect(Date.parse(expiresAt) - w.seconds() * 1000).toBeGreaterThan(14 * 60_000);
    expect(Date.parse(expiresAt) - w.seconds() * 1000).toBeLessThanOrEqual(15 * 60_000 + 1000);
    expect(publisher).toMatchObject({ repository: 'acme/web-app', workflow: 'publish.yml', sha: '3f786850e387550fdab836ed7e6dc881de23001b', runId: '8123456789', environment: 'Release' });

    expect(await publish(w.server, token, 'fresh-app')).toMatchObject({ uploaded: true, status: 201 });
    // Claimed for whoever saved the pending publisher, which is an ordinary one now.
    expect(await w.server.store.tokens.ownersOf('fresh-app')).toEqual([minter.owner]);
    expect((await call(w.server, 'GET', '/templates/fresh-app/trusted-publishers', { token: w.server.token })).body.data.trustedPublishers[0].pending).toBe(false);
    const version = await call(w.server, 'GET', '/templates/fresh-app/versions/1.0.0');
    expect(version.body.data.publisher).toMatchObject({
      issuer: w.oidc.issuer,
      repository: 'acme/web-app',
      workflow: 'publish.yml',
      ref: 'refs/tags/v1.0.0',
      sha: '3f786850e387550fdab836ed7e6dc881de23001b',
      runId: '8123456789',
      runAttempt: '1',
    });
    // A version published with a stored token shows none.
    expect(await publish(w.server, w.server.token, 'fresh-app', '1.1.0')).toMatchObject({ status: 201 });
    expect((await call(w.server, 'GET', '/templates/fresh-app/versions/1.1.0')).body.data).not.toHaveProperty('publisher');
  });

  it('publishes a claimed name through its owner\'s trusted publisher, and only the names that trust the run', async () => {
    const w = await world();
    await publish(w.server, w.server.token, 'web-app');
    await publish(w.server, w.server.token, 'other-app');
    expect((await trust(w, 'web-app')).status).toBe(201);
    const exchanged = await w.exchange(await w.token());
    expect(exchanged.body.data.templates).toEqual(['web-app']);
    const token = exchanged.body.data.token as string;
    expect(await publish(w.server, token, 'web-app', '1.1.0')).toMatchObject({ status: 201 });
    // A token for template A used on B.
    const refused = await publish(w.server, token, 'other-app', '1.1.0').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PublishError);
    expect(refused).toMatchObject({ status: 403 });
    expect((refused as Error).message).toMatch(/this token may publish only web-app/);
    // It may only publish: no owners, trusted publishers or lifecycle.
    expect((await trust(w, 'web-app', { workflow: 'evil.yml' }, token)).status).toBe(403);
    expect((await call(w.server, 'POST', '/templates/web-app/owners', { token, body: { owner: 'mallory' } })).status).toBe(403);
    expect((await call(w.server, 'DELETE', '/templates/web-app/versions/1.0.0', { token })).status).toBe(403);
  });

  it('refuses a token after its 15 minutes, and after DELETE /api/oidc/token revoked it', async () => {
    const w = await world();
    await trust(w, 'fresh-app');
    const expiring = (await w.exchange(await w.token())).body.data.token as string;
    const revoked = (await w.exchange(await w.token())).body.data.token as string;

    expect((await call(w.server, 'DELETE', '/api/oidc/token', { token: revoked })).status).toBe(204);
    expect(await publish(w.server, revoked, 'fresh-app').catch((error: unknown) => error)).toMatchObject({ status: 401, code: 'UNAUTHORIZED', message: expect.stringMatching(/revoked/) });
    // Only a minted token is revoked there.
    expect((await call(w.server, 'DELETE', '/api/oidc/token', { token: w.server.token })).status).toBe(403);
    expect((await call(w.server, 'DELETE', '/api/oidc/token')).status).toBe(401);

    w.advance(15 * 60_000 + 1000);
    expect(await publish(w.server, expiring, 'fresh-app').catch((error: unknown) => error)).toMatchObject({ status: 401, message: expect.stringMatching(/expired/) });
    expect(await w.server.store.versions.listVersions()).toEqual([]);
  });

  it('stops a minted token at once when its trusted publisher is removed', async () => {
    const w = await world();
    await publish(w.server, w.server.token, 'web-app');
    const saved = await trust(w, 'web-app');
    const token = (await w.exchange(await w.token())).body.data.token as string;
    expect((await call(w.server, 'DELETE', `/templates/web-app/trusted-publishers/${String(saved.body.data.id)}`, { token: w.server.token })).status).toBe(204);
    expect(await publish(w.server, token, 'web-app', '1.1.0').catch((error: unknown) => error)).toMatchObject({ status: 403, message: expect.stringMatching(/no trusted publisher of web-app matches/) });
  });

  describe('refuses, naming the claim at fault', () => {
    it('an audience that is not the registry\'s alone: another, none, or a list holding it', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      expectRefused(await w.exchange(await w.token({}, { aud: 'template-registry:registry.example.com' })), 'aud', /audience is not "template-registry:127\.0\.0\.1:\d+"/);
      expectRefused(await w.exchange(await w.token({}, { aud: undefined })), 'aud', /no audience/);
      expectRefused(await w.exchange(await w.token({}, { aud: [w.audience, 'sigstore'] })), 'aud', /alone, not a list/);
    });

    it('an issuer that is not configured, however alike', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      for (const iss of [`${w.oidc.issuer}.evil.example`, `${w.oidc.issuer}/evil`, 'https://token.actions.githubusercontent.com.evil.example', 'https://token.actions.githubusercontent.co']) {
        expectRefused(await w.exchange(await w.token({}, { iss })), 'iss', /is not one this registry trusts/);
      }
    });

    it('a token expired past the tolerance, issued in the future, not valid yet, or without jti', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      const now = w.seconds();
      expectRefused(await w.exchange(await w.token({}, { iat: now - 600, nbf: now - 600, exp: now - 61 })), 'exp', /expired/);
      // jose 6 alone would take this one.
      expectRefused(await w.exchange(await w.token({}, { iat: now + 120, nbf: now - 10, exp: now + 400 })), 'iat', /issued in the future/);
      expectRefused(await w.exchange(await w.token({}, { nbf: now + 120 })), 'nbf', /not valid yet/);
      expectRefused(await w.exchange(await w.token({}, { jti: undefined })), 'jti', /no jti claim/);
      // Within the 60 s of tolerance it is taken.
      expect((await w.exchange(await w.token({}, { iat: now - 400, nbf: now - 400, exp: now - 30 }))).status).toBe(201);
    });

    it('a replay of a token already exchanged', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      const idToken = await w.token();
      expect((await w.exchange(idToken)).status).toBe(201);
      expectRefused(await w.exchange(idToken), 'jti', /already used/);
    });

    it('a signature by a key the issuer does not have, an unknown kid, alg none, and HS256 keyed with the public key', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      const claims = w.oidc.claims(w.audience, w.seconds());
      const stranger = await generateKeyPair('RS256');
      expectRefused(await w.exchange(await w.oidc.sign({ ...claims, jti: 'k1' }, { key: stranger.privateKey })), 'signature', /does not verify/);
      expectRefused(await w.exchange(await w.oidc.sign({ ...claims, jti: 'k2' }, { header: { kid: 'unknown-kid' } })), 'kid', /kid/);
      expectRefused(await w.exchange(w.oidc.unsigned({ ...claims, jti: 'k3' })), 'alg', /"none"; only RS256/);
      const forged = await new SignJWT({ ...claims, jti: 'k4' }).setProtectedHeader({ alg: 'HS256', kid: w.oidc.kid }).sign(new TextEncoder().encode(w.oidc.publicPem));
      expectRefused(await w.exchange(forged), 'alg', /"HS256"; only RS256/);
      expectRefused(await w.exchange('not.a.jwt'), 'token', /not a JWT/);
      // None of them was taken as used: the genuine token still exchanges.
      expect((await w.exchange(await w.oidc.sign({ ...claims, jti: 'k1' }))).status).toBe(201);
    });

    it('a repository owner id other than the pinned one, another workflow, a tricky job_workflow_ref, a missing environment, another ref', async () => {
      const w = await world();
      await trust(w, 'fresh-app', { workflow: 'evil.yml' });
      await trust(w, 'env-app', { environment: 'release' });
      await trust(w, 'tag-app', { ref: 'refs/tags/v*' });
      expectRefused(await w.exchange(await w.token({ repositoryOwnerId: '666' })), 'repository_owner_id', /not the one pinned/);

      const mismatches = (await w.exchange(await w.token({ ref: 'refs/heads/main' }))).body.error.details as { field: string; message: string }[];
      expect(mismatches).toEqual([
        { field: 'environment', code: 'CLAIM_MISMATCH', message: 'env-app: the job runs in no environment; the trusted publisher requires release' },
        { field: 'job_workflow_ref', code: 'CLAIM_MISMATCH', message: 'fresh-app: the job runs workflow publish.yml, not evil.yml' },
        { field: 'ref', code: 'CLAIM_MISMATCH', message: 'tag-app: the run\'s ref refs/heads/main does not match refs/tags/v*' },
      ]);

      // The file nested@evil.yml is neither nested nor evil.yml.
      const tricky = await w.token({ ref: 'refs/heads/main' }, { job_workflow_ref: 'acme/web-app/.github/workflows/nested@evil.yml@refs/heads/main' });
      const answer = await w.exchange(tricky);
      expect(answer.status).toBe(400);
      expect(answer.body.error.details).toContainEqual({ field: 'job_workflow_ref', code: 'CLAIM_MISMATCH', message: 'fresh-app: the job runs workflow nested@evil.yml, not evil.yml' });
      // Another repository's (reusable) workflow, or another ref than the run's, names no workflow of this one.
      for (const job_workflow_ref of ['evil-org/tools/.github/workflows/evil.yml@refs/heads/main', 'acme/web-app/.github/workflows/evil.yml@refs/heads/other']) {
        const other = await w.exchange(await w.token({ ref: 'refs/heads/main' }, { job_workflow_ref }));
        expect(other.body.error.details).toContainEqual(expect.objectContaining({ field: 'job_workflow_ref', message: expect.stringMatching(/^fresh-app: job_workflow_ref .* is not a workflow file of acme\/web-app/) }));
      }
      // The right run gets exactly the names it matches.
      const right = await w.exchange(await w.token({ environment: 'release' }));
      expect(right.body.data.templates).toEqual(['env-app', 'tag-app']);
    });

    it('a token of a repository no template trusts', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      expectRefused(await w.exchange(await w.token({ repository: 'acme/other' })), 'repository', /no template trusts repository acme\/other/);
    });

    it('a token without the claims trusted publishing reads', async () => {
      const w = await world();
      await trust(w, 'fresh-app');
      for (const claim of ['repository', 'repository_owner_id', 'job_workflow_ref', 'sha', 'run_id']) {
        expectRefused(await w.exchange(await w.token({}, { [claim]: undefined })), claim, new RegExp(`no ${claim} claim`));
      }
    });
  });

  it('answers 503 when the issuer\'s keys cannot be read (its discovery fails)', async () => {
    const down = createHttpServer((_request, response) => response.writeHead(500).end());
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    try {
      const issuer = `http://127.0.0.1:${(down.address() as AddressInfo).port}`;
      const oidc = await startFakeOidc();
      const server = await startRegistryServer({ oidcIssuers: [issuer, oidc.issuer] });
      const audience = `template-registry:${new URL(server.url).host}`;
      const answer = await call(server, 'POST', '/api/oidc/token', { body: { token: await oidc.sign({ ...oidc.claims(audience, Math.floor(Date.now() / 1000)), iss: issuer }) } });
      expect(answer.status).toBe(503);
      expect(answer.body.error.code).toBe('ISSUER_UNAVAILABLE');
    } finally {
      down.closeAllConnections();
      await new Promise((resolve) => down.close(resolve));
    }
  });
});

describe('trusted publishing: the trusted publishers of a name', () => {
  it('are kept by the owners of the name: others are refused, pending ones are their saver\'s', async () => {
    const w = await world();
    const { token: other } = await w.server.store.tokens.createToken({ role: 'publisher', owner: 'other' });
    const { token: admin } = await w.server.store.tokens.createToken({ role: 'admin' });
    // Pending: each saver sees its own.
    expect((await trust(w, 'web-app', {}, other)).status).toBe(201);
    expect((await trust(w, 'web-app')).status).toBe(201);
    expect((await call(w.server, 'GET', '/templates/web-app/trusted-publishers', { token: other })).body.data.trustedPublishers).toHaveLength(1);
    expect((await call(w.server, 'GET', '/templates/web-app/trusted-publishers', { token: admin })).body.data.trustedPublishers).toHaveLength(2);
    // Two savers of a pending publisher for one repository: neither's claims the name through it.
    expectRefused(await w.exchange(await w.token()), 'repository', /several publishers saved a pending trusted publisher of web-app/);
    // The claim keeps the claimer's only.
    await publish(w.server, w.server.token, 'web-app');
    expect((await w.exchange(await w.token())).body.data.templates).toEqual(['web-app']);
    expect((await call(w.server, 'GET', '/templates/web-app/trusted-publishers', { token: w.server.token })).body.data.trustedPublishers).toHaveLength(1);
    expect((await call(w.server, 'GET', '/templates/web-app/trusted-publishers', { token: other })).status).toBe(403);
    expect((await trust(w, 'web-app', { workflow: 'mine.yml' }, other)).status).toBe(403);
    expect((await call(w.server, 'GET', '/templates/web-app/trusted-publishers')).status).toBe(401);
    // The same one again changes nothing (the owner id given as a number, as GitHub's REST API gives it).
    const again = await trust(w, 'web-app', { repository: 'ACME/Web-App', repositoryOwnerId: 4242 });
    expect(again.status).toBe(200);
    expect(again.body.data.repositoryOwnerId).toBe('4242');
    // Removed by its repository and workflow (query or body), or by id.
    expect((await call(w.server, 'DELETE', '/templates/web-app/trusted-publishers?repository=acme/web-app&workflow=other.yml', { token: w.server.token })).status).toBe(404);
    expect((await call(w.server, 'DELETE', '/templates/web-app/trusted-publishers', { token: w.server.token, body: { repository: 'acme/web-app', workflow: 'publish.yml' } })).status).toBe(204);
    expect((await call(w.server, 'GET', '/templates/web-app/trusted-publishers', { token: w.server.token })).body.data.trustedPublishers).toEqual([]);
    expect((await call(w.server, 'DELETE', '/templates/web-app/trusted-publishers', { token: w.server.token })).body.error.details.map((d: { field: string }) => d.field)).toEqual(['repository', 'workflow']);
  });

  it('refuses what could never match: an unknown issuer, a workflow path, a bad repository or ref', async () => {
    const w = await world();
    const issuer = await trust(w, 'web-app', { issuer: 'https://ghes.example.com/_services/token' });
    expect(issuer.status).toBe(422);
    expect(issuer.body.error.details[0]).toMatchObject({ field: 'issuer', code: 'UNKNOWN_ISSUER' });
    for (const [body, field] of [
      [{ workflow: '.github/workflows/publish.yml' }, 'workflow'],
      [{ workflow: 'publish' }, 'workflow'],
      [{ repository: 'acme' }, 'repository'],
      [{ ref: 'v*' }, 'ref'],
      [{ repositoryOwnerId: 'acme' }, 'repositoryOwnerId'],
    ] as const) {
      const answer = await trust(w, 'web-app', body);
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(answer.body.error.details[0].field).toContain(field);
    }
    // Another issuer than github.com's needs the owner id given: missing, a 400.
    const ghes = await call(w.server, 'POST', '/templates/web-app/trusted-publishers', { token: w.server.token, body: { issuer: w.oidc.issuer, repository: 'acme/web-app', workflow: 'publish.yml' } });
    expect(ghes.status).toBe(400);
    expect(ghes.body.error.details[0]).toMatchObject({ field: 'repositoryOwnerId', code: 'REQUIRED' });
  });

  it("pins the repository owner's id read from GitHub when none is given", async () => {
    const asked: string[] = [];
    const github = createHttpServer((request, response) => {
      asked.push(request.url ?? '');
      if (request.url === '/users/acme') response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ login: 'acme', id: 4242, type: 'Organization' }));
      else response.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
    });
    await new Promise<void>((resolve) => github.listen(0, '127.0.0.1', resolve));
    try {
      const w = await world({ githubApiUrl: `http://127.0.0.1:${(github.address() as AddressInfo).port}` });
      const body = { repository: 'acme/web-app', workflow: 'publish.yml' };
      const saved = await call(w.server, 'POST', '/templates/web-app/trusted-publishers', { token: w.server.token, body });
      expect(saved.status).toBe(201);
      expect(saved.body.data).toMatchObject({ issuer: 'https://token.actions.githubusercontent.com', repositoryOwnerId: '4242' });
      const unknown = await call(w.server, 'POST', '/templates/web-app/trusted-publishers', { token: w.server.token, body: { ...body, repository: 'nobody-here/web-app' } });
      expect(unknown.status).toBe(422);
      expect(unknown.body.error.details[0]).toMatchObject({ field: 'repository', code: 'UNKNOWN_OWNER' });
      expect(asked).toEqual(['/users/acme', '/users/nobody-here']);
    } finally {
      github.closeAllConnections();
      await new Promise((resolve) => github.close(resolve));
    }
  });

  it('refuses a server configuration with an issuer that is not https (http only on loopback)', async () => {
    const store = await tempDir('tr-issuer-');
    for (const issuer of ['http://token.example.com', 'ftp://127.0.0.1', 'https://token.example.com/?x=1', 'not a url']) {
      await expect(createServer({ store, publicUrl: 'http://127.0.0.1:1', oidcIssuers: [issuer] })).rejects.toThrow(/OIDC issuer/);
    }
  });
});
