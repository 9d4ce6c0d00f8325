/**
 * A GitHub Actions OIDC provider on 127.0.0.1, for tests: its discovery document and JWKS (as
 * `https://token.actions.githubusercontent.com` serves them), ID tokens signed with jose (any
 * claims, header or key, for the negative cases), and the runner's ID-token endpoint that
 * `ACTIONS_ID_TOKEN_REQUEST_URL` / `ACTIONS_ID_TOKEN_REQUEST_TOKEN` point a job at (what
 * @actions/core's getIDToken asks: `<url>&audience=<audience>` with the bearer request token,
 * answered `{ "value": "<ID token>" }`). Closed after the test.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { afterEach } from 'vitest';

const running: FakeOidc[] = [];

afterEach(async () => {
  await Promise.all(running.splice(0).map((provider) => provider.close()));
});

/** The run a token describes: GitHub's claims are made from it. */
export interface RunClaims {
  repository: string;
  repositoryOwnerId: string;
  workflow: string;
  ref: string;
  sha: string;
  runId: string;
  runAttempt: string;
  environment?: string;
}

export const DEFAULT_RUN: RunClaims = {
  repository: 'acme/web-app',
  repositoryOwnerId: '4242',
  workflow: 'publish.yml',
  ref: 'refs/tags/v1.0.0',
  sha: '3f786850e387550fdab836ed7e6dc881de23001b',
  runId: '8123456789',
  runAttempt: '1',
};

export interface SignOptions {
  /** Header fields over `{ alg: 'RS256', kid: <the provider's> }`. */
  header?: Record<string, unknown>;
  /** Another private key (a key the JWKS does not hold). */
  key?: CryptoKey;
}

export interface FakeOidc {
  /** `http://127.0.0.1:<port>`: the `iss` of its tokens. */
  issuer: string;
  kid: string;
  /** The public key as SPKI PEM (what an HS256 forgery would use as its secret). */
  publicPem: string;
  /** GitHub's claims for a run, for `audience`, issued at `now` (seconds) and valid 5 minutes. */
  claims(audience: string, now: number, run?: Partial<RunClaims>): JWTPayload & Record<string, unknown>;
  /** Signs `claims` (RS256 with the provider's key, unless told otherwise). */
  sign(claims: Record<string, unknown>, options?: SignOptions): Promise<string>;
  /** A token with `alg: none` and no signature. */
  unsigned(claims: Record<string, unknown>): string;
  /** What a job's environment holds for its ID token requests. */
  runnerEnv: { ACTIONS_ID_TOKEN_REQUEST_URL: string; ACTIONS_ID_TOKEN_REQUEST_TOKEN: string };
  /** The run the ID-token endpoint's tokens describe, and the clock (seconds) they are issued by. */
  endpoint: { run: Partial<RunClaims>; now: () => number };
  /** The audiences the ID-token endpoint was asked for, in order. */
  requested: string[];
  /** Requests of the JWKS. */
  jwksFetches: number;
  close(): Promise<void>;
}

const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Starts a provider on a free port of 127.0.0.1, closed after the test (`keep`: by the caller, e.g. in an afterAll). */
export async function startFakeOidc(options: { keep?: boolean } = {}): Promise<FakeOidc> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `kid-${randomUUID().slice(0, 8)}`;
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const requestToken = `request-${randomUUID()}`;
  const holder: { server?: Server } = {};
  const provider: FakeOidc = {
    issuer: '',
    kid,
    publicPem: await exportSPKI(publicKey),
    claims(audience, now, run = {}) {
      const r = { ...DEFAULT_RUN, ...run };
      const workflowRef = `${r.repository}/.github/workflows/${r.workflow}@${r.ref}`;
      return {
        iss: provider.issuer,
        aud: audience,
        sub: `repo:${r.repository}:${r.environment ? `environment:${r.environment}` : `ref:${r.ref}`}`,
        jti: randomUUID(),
        iat: now,
        nbf: now,
        exp: now + 300,
        repository: r.repository,
        repository_owner: r.repository.split('/')[0],
        repository_owner_id: r.repositoryOwnerId,
        repository_id: '700001',
        ref: r.ref,
        ref_type: r.ref.startsWith('refs/tags/') ? 'tag' : 'branch',
        sha: r.sha,
        workflow: 'Publish',
        workflow_ref: workflowRef,
        job_workflow_ref: workflowRef,
        event_name: 'push',
        run_id: r.runId,
        run_number: '12',
        run_attempt: r.runAttempt,
        runner_environment: 'github-hosted',
        ...(r.environment ? { environment: r.environment } : {}),
      };
    },
    async sign(claims, options = {}) {
      return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT', ...options.header }).sign(options.key ?? privateKey);
    },
    unsigned(claims) {
      return `${base64url({ alg: 'none', typ: 'JWT', kid })}.${base64url(claims)}.`;
    },
    runnerEnv: { ACTIONS_ID_TOKEN_REQUEST_URL: '', ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken },
    endpoint: { run: {}, now: () => Math.floor(Date.now() / 1000) },
    requested: [],
    jwksFetches: 0,
    close: () =>
      new Promise<void>((resolve) => {
        if (!holder.server) return resolve();
        holder.server.closeAllConnections();
        holder.server.close(() => resolve());
      }),
  };
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', provider.issuer);
    const json = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, { issuer: provider.issuer, jwks_uri: `${provider.issuer}/.well-known/jwks`, id_token_signing_alg_values_supported: ['RS256'] });
    }
    if (url.pathname === '/.well-known/jwks') {
      provider.jwksFetches++;
      return json(200, { keys: [jwk] });
    }
    if (url.pathname === '/id-token') {
      if (request.headers.authorization !== `Bearer ${requestToken}`) return json(401, { message: 'bad request token' });
      const audience = url.searchParams.get('audience') ?? '';
      provider.requested.push(audience);
      void provider.sign(provider.claims(audience, provider.endpoint.now(), provider.endpoint.run)).then((value) => json(200, { count: 1, value }));
      return undefined;
    }
    return json(404, { message: 'not found' });
  });
  holder.server = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  provider.issuer = `http://127.0.0.1:${port}`;
  // As the runner gives it: a URL with a query, to which the audience is appended.
  provider.runnerEnv.ACTIONS_ID_TOKEN_REQUEST_URL = `${provider.issuer}/id-token?api-version=2.0`;
  if (!options.keep) running.push(provider);
  return provider;
}
