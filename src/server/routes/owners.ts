/**
 * Owners of a template name (owner-only): `GET /templates/{id}/owners` lists them (public, like
 * npm's owners), `POST /templates/{id}/owners` `{ owner }` adds a co-owner and
 * `DELETE /templates/{id}/owners/{owner}` removes one, by an owner of the name or an admin. Every
 * owner publishes, deprecates and yanks like the first publisher; the last owner cannot be removed.
 * An owner may be named by the e-mail of an account: it stands for that account's owner.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import { NAME_PATTERN } from '../../core/versions.js';
import type { OwnerChange, TokenRecord } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope } from '../envelope.js';
import { TEMPLATE_ID_PARAM } from '../params.js';
import { READS } from '../rate-limit.js';

const NO_STORE = 'no-store';

const ID_PARAMS = { type: 'object', required: ['id'], properties: { id: { ...TEMPLATE_ID_PARAM, pattern: NAME_PATTERN.source } } } as const;
const OWNER_PARAMS = {
  type: 'object',
  required: ['id', 'owner'],
  properties: { id: { ...TEMPLATE_ID_PARAM, pattern: NAME_PATTERN.source }, owner: { type: 'string', minLength: 1, maxLength: 254 } },
} as const;
const OWNER_BODY = {
  type: 'object',
  required: ['owner'],
  additionalProperties: false,
  properties: { owner: { type: 'string', minLength: 1, maxLength: 254, pattern: '^\\S(.*\\S)?$' } },
} as const;

/** The answer's data: the owners in order, the first one the claimer. */
const ownersData = (id: string, owners: readonly string[]): { id: string; owners: { owner: string; claimer: boolean }[] } => ({
  id,
  owners: owners.map((owner, index) => ({ owner, claimer: index === 0 })),
});

export const ownerRoutes: FastifyPluginAsync<{ context: ServerContext }> = (app, { context }) => {
  const credential = app.requireToken();
  const tokens = context.storage.tokens;

  /** The owner a name given by the caller stands for: an account's owner for its e-mail, else the name itself. */
  async function ownerNamed(value: string): Promise<string> {
    if (!value.includes('@')) return value;
    return (await context.storage.accounts.findCredentials(value))?.user.owner ?? value;
  }

  async function ownersOr404(id: string): Promise<string[]> {
    const owners = await tokens.ownersOf(id);
    if (owners.length === 0) throw new ApiError(404, 'NOT_FOUND', `template ${id} not found (nobody has published it)`);
    return owners;
  }

  /** Owner-only: the caller must be an owner of `id`, or an admin. */
  async function checkOwner(token: TokenRecord | undefined, id: string): Promise<void> {
    await ownersOr404(id);
    if (!token) throw new ApiError(401, 'UNAUTHORIZED', 'a credential is required');
    // The rule that decides who may publish the name decides who may change its owners (a token
    // limited to other names may not, even when its owner owns this one; one minted for trusted
    // publishing never).
    const allowed = await tokens.canManage(token, id);
    if (!allowed.allowed) throw new ApiError(403, 'FORBIDDEN', `only an owner of ${id} (or an admin) may change its owners: ${allowed.reason}`);
  }

  const answer = (request: FastifyRequest, reply: FastifyReply, id: string, change: OwnerChange, status: number): FastifyReply => {
    if ('refused' in change) {
      if (change.refused === 'last-owner') throw new ApiError(409, 'LAST_OWNER', `cannot remove the last owner of ${id}: add another owner first`);
      if (change.refused === 'not-an-owner') throw new ApiError(404, 'NOT_FOUND', `that is not an owner of ${id}`);
      throw new ApiError(404, 'NOT_FOUND', `template ${id} not found (nobody has published it)`);
    }
    return reply.code(status).header('Cache-Control', NO_STORE).send(envelope(request, ownersData(id, change.owners)));
  };

  app.get<{ Params: { id: string } }>('/templates/:id/owners', { schema: { params: ID_PARAMS }, config: { rateLimit: READS, cache: 'dynamic' } }, async (request) => {
    const { id } = request.params;
    return envelope(request, ownersData(id, await ownersOr404(id)));
  });

  app.post<{ Params: { id: string }; Body: { owner: string } }>(
    '/templates/:id/owners',
    { preValidation: credential, schema: { params: ID_PARAMS, body: OWNER_BODY }, config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { owner }', invalid: 'the owner is invalid', root: 'body' } } },
    async (request, reply) => {
      const { id } = request.params;
      await checkOwner(request.token, id);
      const change = await tokens.addOwner(id, await ownerNamed(request.body.owner));
      return answer(request, reply, id, change, 'changed' in change && change.changed ? 201 : 200);
    },
  );

  app.delete<{ Params: { id: string; owner: string } }>('/templates/:id/owners/:owner', { preValidation: credential, schema: { params: OWNER_PARAMS }, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const { id, owner } = request.params;
    await checkOwner(request.token, id);
    const change = await tokens.removeOwner(id, await ownerNamed(owner));
    if ('refused' in change) return answer(request, reply, id, change, 200);
    return reply.code(204).header('Cache-Control', NO_STORE).send();
  });

  return Promise.resolve();
};
