/**
 * The trusted-publishing exchange:
 * - `POST /api/oidc/token` `{ token }` (`jwt` accepted too) takes a CI run's OIDC ID token,
 *   verified (oidc.ts), used once (its `jti` is recorded until it expires: a replay is 400), and
 *   matched against the trusted publishers of its repository (trusted-publishing.ts); it answers 201
 *   with a publisher token limited to the matching templates, valid 15 minutes, carrying the run
 *   (repository, workflow, ref, sha, run id) that every version it publishes keeps. A refusal is
 *   400 naming the claim that did not match (`details[].field`); an issuer whose keys cannot be read, 503.
 * - `DELETE /api/oidc/token` revokes the token presented (one minted here only): 204.
 */
import type { FastifyPluginAsync } from 'fastify';

import { CREDENTIAL_CACHE_CONTROL } from '../caching.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, type ErrorDetail } from '../envelope.js';
import { CLOCK_TOLERANCE_SECONDS, IdTokenRefusal, IssuerUnavailable, MAX_ID_TOKEN_LENGTH, type IdTokenVerifier, type VerifiedIdToken } from '../oidc.js';
import { EXCHANGED_TOKEN_LIFETIME_MS, grantOf } from '../trusted-publishing.js';
import { READS } from '../rate-limit.js';

const NO_STORE = 'no-store';

const ID_TOKEN = { type: 'string', minLength: 1, maxLength: MAX_ID_TOKEN_LENGTH } as const;
const EXCHANGE_BODY = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 1,
  properties: { token: ID_TOKEN, jwt: ID_TOKEN },
} as const;

/** A 400 naming the claims at fault. */
function refused(message: string, details: ErrorDetail[]): ApiError {
  return new ApiError(400, 'INVALID_ID_TOKEN', message, details, { 'Cache-Control': NO_STORE });
}

export const oidcRoutes: FastifyPluginAsync<{ context: ServerContext; verifier: IdTokenVerifier }> = (app, { context, verifier }) => {
  const { tokens, trustedPublishers } = context.storage;
  const now = (): Date => context.clock?.() ?? new Date();

  app.post<{ Body: { token?: string; jwt?: string } }>(
    '/api/oidc/token',
    { schema: { body: EXCHANGE_BODY }, config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { token: <the OIDC ID token> }', invalid: 'the exchange request is invalid', root: 'body' } } },
    async (request, reply) => {
      const idToken = request.body.token ?? request.body.jwt ?? '';
      let verified: VerifiedIdToken;
      try {
        verified = await verifier.verify(idToken);
      } catch (error) {
        if (error instanceof IdTokenRefusal) throw refused(`the ID token was refused: ${error.message}`, [{ field: error.claim, code: 'CLAIM_INVALID', message: error.message }]);
        if (error instanceof IssuerUnavailable) {
          request.log.warn({ issuer: error.issuer }, error.message);
          throw new ApiError(503, 'ISSUER_UNAVAILABLE', `the keys of issuer ${error.issuer} could not be read; retry in a moment`, [], { 'Retry-After': '30' });
        }
        throw error;
      }
      const candidates = await trustedPublishers.trustedPublishersOf(verified.issuer, verified.repository);
      const owners = new Map<string, string[]>();
      for (const template of new Set(candidates.map((record) => record.template))) owners.set(template, await tokens.ownersOf(template));
      const grant = grantOf(verified, candidates, owners);
      if ('refused' in grant) {
        const [first] = grant.refused;
        throw refused(`no trusted publisher matches the ID token: ${first?.message ?? ''}`, grant.refused.map((m) => ({ field: m.claim, code: 'CLAIM_MISMATCH', message: m.message })));
      }
      const at = now();
      // Once: recorded until the token could no longer be accepted (its exp, plus the tolerance).
      const first = await trustedPublishers.useIdToken(verified.issuer, verified.jti, new Date(verified.expiresAt.getTime() + CLOCK_TOLERANCE_SECONDS * 1000), at);
      if (!first) throw refused('the ID token was already exchanged: request a new one', [{ field: 'jti', code: 'TOKEN_REPLAYED', message: `jti ${verified.jti} was already used` }]);
      const minted = await tokens.createToken({
        role: 'publisher',
        templates: grant.templates,
        owner: grant.owner,
        expiresAt: new Date(at.getTime() + EXCHANGED_TOKEN_LIFETIME_MS),
        now: at,
        publisher: grant.run,
      });
      request.log.info({ tokenId: minted.record.id, templates: grant.templates, repository: grant.run.repository, workflow: grant.run.workflow, runId: grant.run.runId }, 'trusted publishing: token minted');
      return reply
        .code(201)
        .header('Cache-Control', CREDENTIAL_CACHE_CONTROL)
        .send(
          envelope(request, {
            token: minted.token,
            id: minted.record.id,
            expiresAt: minted.record.expiresAt,
            templates: grant.templates,
            publisher: grant.run,
          }),
        );
    },
  );

  app.delete('/api/oidc/token', { preValidation: app.requireToken(), config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const token = request.token;
    if (!token?.publisher) throw new ApiError(403, 'FORBIDDEN', 'only a token minted by POST /api/oidc/token is revoked here (revoke other tokens with template-registry token revoke)');
    await tokens.revokeToken(token.id, now());
    return reply.code(204).header('Cache-Control', NO_STORE).send();
  });

  return Promise.resolve();
};
