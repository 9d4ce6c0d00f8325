/**
 * Trusted publishers of a template name (trusted publishing), kept by its owners:
 * - `GET /templates/{id}/trusted-publishers` lists them (an owner or an admin; on an unclaimed name,
 *   the caller's own pending ones);
 * - `POST /templates/{id}/trusted-publishers` `{ repository, workflow, environment?, ref?, issuer?,
 *   repositoryOwnerId? }` saves one (201; 200 when the same one is there). On an unclaimed name it
 *   is pending: the first publish through it claims the name for the caller. The repository owner's
 *   numeric id is pinned now: read from GitHub when not given (github.com's issuer only);
 * - `DELETE /templates/{id}/trusted-publishers` (the repository and workflow, optionally environment
 *   and issuer, in the query or a JSON body) and `DELETE /templates/{id}/trusted-publishers/{publisherId}`
 *   remove them (204).
 * A token minted for trusted publishing may do none of this (it only publishes).
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

import { NAME_PATTERN } from '../../core/versions.js';
import { selectsTrustedPublisher } from '../../store/records.js';
import type { TokenRecord, TrustedPublisher, TrustedPublisherSelector } from '../../store/types.js';
import { MAX_TRUSTED_PUBLISHERS } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { ApiError, envelope, invalidInput } from '../envelope.js';
import { githubAccountId, OwnerLookupError } from '../github-accounts.js';
import { GITHUB_ACTIONS_ISSUER } from '../oidc.js';
import { TEMPLATE_ID_PARAM } from '../params.js';
import { REF_PATTERN, REPOSITORY_PATTERN, WORKFLOW_PATTERN } from '../trusted-publishing.js';
import { READS } from '../rate-limit.js';

const NO_STORE = 'no-store';

export interface TrustedPublisherSettings {
  /** The issuers the server trusts (`trustedIssuers`). */
  issuers: readonly string[];
  /** The GitHub REST API asked for an owner's id (`DEFAULT_GITHUB_API_URL`). */
  githubApiUrl: string;
}

const ID = { ...TEMPLATE_ID_PARAM, pattern: NAME_PATTERN.source } as const;
const ID_PARAMS = { type: 'object', required: ['id'], properties: { id: ID } } as const;
const ONE_PARAMS = { type: 'object', required: ['id', 'publisherId'], properties: { id: ID, publisherId: { type: 'string', pattern: '^tp_[0-9a-f]{12}$' } } } as const;

const REPOSITORY = { type: 'string', maxLength: 140, pattern: REPOSITORY_PATTERN.source } as const;
const WORKFLOW = { type: 'string', maxLength: 260, pattern: WORKFLOW_PATTERN.source } as const;
const ENVIRONMENT = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\s,;\'"`<>]([^,;\'"`<>]*[^\\s,;\'"`<>])?$' } as const;
const ISSUER = { type: 'string', minLength: 1, maxLength: 512, format: 'uri' } as const;

const ADD_BODY = {
  type: 'object',
  required: ['repository', 'workflow'],
  additionalProperties: false,
  properties: {
    issuer: ISSUER,
    repository: REPOSITORY,
    // GitHub's claim is text; a number is taken too (the REST API gives ids as numbers).
    repositoryOwnerId: { anyOf: [{ type: 'string', pattern: '^[1-9][0-9]{0,19}$' }, { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }] },
    workflow: WORKFLOW,
    environment: ENVIRONMENT,
    ref: { type: 'string', maxLength: 255, pattern: REF_PATTERN.source },
  },
} as const;

const REMOVE_FIELDS = { issuer: ISSUER, repository: REPOSITORY, workflow: WORKFLOW, environment: ENVIRONMENT } as const;
const REMOVE_QUERY = { type: 'object', additionalProperties: false, properties: REMOVE_FIELDS } as const;
const REMOVE_BODY = { type: ['object', 'null'], additionalProperties: false, properties: REMOVE_FIELDS } as const;

interface AddBody {
  issuer?: string;
  repository: string;
  repositoryOwnerId?: string | number;
  workflow: string;
  environment?: string;
  ref?: string;
}

type RemoveFields = Partial<Record<keyof typeof REMOVE_FIELDS, string>>;

/** What the API shows of a trusted publisher: the record, but whether it is pending rather than for whom (that stays the store's). */
export type TrustedPublisherView = Omit<TrustedPublisher, 'pendingOwner'> & { pending: boolean };

/** The API's view of a trusted publisher (`TrustedPublisherView`). */
export function trustedPublisherView(record: TrustedPublisher): TrustedPublisherView {
  return {
    id: record.id,
    template: record.template,
    issuer: record.issuer,
    repository: record.repository,
    repositoryOwnerId: record.repositoryOwnerId,
    workflow: record.workflow,
    ...(record.environment !== undefined ? { environment: record.environment } : {}),
    ...(record.ref !== undefined ? { ref: record.ref } : {}),
    pending: record.pendingOwner !== undefined,
    createdBy: record.createdBy,
    createdAt: record.createdAt,
  };
}

export const trustedPublisherRoutes: FastifyPluginAsync<{ context: ServerContext; settings: TrustedPublisherSettings }> = (app, { context, settings }) => {
  const credential = app.requireToken();
  const { tokens, trustedPublishers } = context.storage;
  const path = (id: string): string => `/templates/${id}/trusted-publishers`;

  /** The caller may manage `id`'s trusted publishers (403 otherwise); returns the name's owners (empty: unclaimed). */
  async function checkManager(token: TokenRecord | undefined, id: string): Promise<{ token: TokenRecord; owners: string[] }> {
    if (!token) throw new ApiError(401, 'UNAUTHORIZED', 'a credential is required');
    const allowed = await tokens.canManage(token, id);
    if (!allowed.allowed) throw new ApiError(403, 'FORBIDDEN', `only an owner of ${id} (or an admin) may manage its trusted publishers: ${allowed.reason}`);
    return { token, owners: await tokens.ownersOf(id) };
  }

  /** The trusted publishers of `id` the caller sees: all of a claimed name's; on an unclaimed one its own pending ones (an admin: all). */
  const visible = (records: TrustedPublisher[], token: TokenRecord, owners: readonly string[]): TrustedPublisher[] =>
    owners.length > 0 || token.role === 'admin' ? records : records.filter((record) => record.pendingOwner === token.owner);

  /** The repository owner's id to pin: given, or read from GitHub (github.com's issuer only). */
  async function ownerIdOf(body: AddBody, issuer: string): Promise<string> {
    if (body.repositoryOwnerId !== undefined) return String(body.repositoryOwnerId);
    if (issuer !== GITHUB_ACTIONS_ISSUER) {
      throw invalidInput('the trusted publisher is invalid', [
        { field: 'repositoryOwnerId', code: 'REQUIRED', message: `give the numeric id of the repository's owner: it is read from GitHub only for ${GITHUB_ACTIONS_ISSUER}` },
      ]);
    }
    const login = body.repository.split('/')[0] ?? '';
    let id: string | undefined;
    try {
      id = await githubAccountId(settings.githubApiUrl, login);
    } catch (error) {
      const message = error instanceof OwnerLookupError ? error.message : String(error);
      throw new ApiError(502, 'OWNER_LOOKUP_FAILED', `could not read the id of GitHub account ${login} (${message}): retry, or give repositoryOwnerId`, [], { 'Retry-After': '30' });
    }
    if (id === undefined) {
      throw new ApiError(422, 'VALIDATION_ERROR', 'the trusted publisher is invalid', [{ field: 'repository', code: 'UNKNOWN_OWNER', message: `GitHub has no account ${login}` }]);
    }
    return id;
  }

  const list = (request: FastifyRequest, id: string, records: TrustedPublisher[]): unknown => envelope(request, { id, trustedPublishers: records.map(trustedPublisherView) });

  app.get<{ Params: { id: string } }>(path(':id'), { preValidation: credential, schema: { params: ID_PARAMS }, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const { id } = request.params;
    const { token, owners } = await checkManager(request.token, id);
    const records = visible(await trustedPublishers.listTrustedPublishers(id), token, owners);
    return reply.header('Cache-Control', NO_STORE).send(list(request, id, records));
  });

  app.post<{ Params: { id: string }; Body: AddBody }>(
    path(':id'),
    {
      preValidation: credential,
      schema: { params: ID_PARAMS, body: ADD_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { repository, workflow, environment?, ref?, issuer?, repositoryOwnerId? }', invalid: 'the trusted publisher is invalid', root: 'body' } },
    },
    async (request, reply) => {
      const { id } = request.params;
      const { token } = await checkManager(request.token, id);
      const body = request.body;
      const issuer = (body.issuer ?? GITHUB_ACTIONS_ISSUER).replace(/\/+$/, '');
      if (!settings.issuers.includes(issuer)) {
        throw new ApiError(422, 'VALIDATION_ERROR', 'the trusted publisher is invalid', [
          { field: 'issuer', code: 'UNKNOWN_ISSUER', message: `this registry trusts ID tokens of ${settings.issuers.join(', ')} only (serve --oidc-issuer adds one)` },
        ]);
      }
      const repositoryOwnerId = await ownerIdOf(body, issuer);
      const outcome = await trustedPublishers.addTrustedPublisher(
        {
          template: id,
          issuer,
          repository: body.repository,
          repositoryOwnerId,
          workflow: body.workflow,
          ...(body.environment !== undefined ? { environment: body.environment } : {}),
          ...(body.ref !== undefined ? { ref: body.ref } : {}),
          ...(context.clock ? { now: context.clock() } : {}),
        },
        token,
      );
      if ('forbidden' in outcome) throw new ApiError(403, 'FORBIDDEN', `only an owner of ${id} (or an admin) may manage its trusted publishers: ${outcome.forbidden}`);
      if ('full' in outcome) {
        throw new ApiError(409, 'TOO_MANY_TRUSTED_PUBLISHERS', `${id} has ${outcome.full} trusted publishers, the most a template may have (${MAX_TRUSTED_PUBLISHERS}): remove one first`);
      }
      const record = outcome.added ? outcome.publisher : outcome.existing;
      return reply
        .code(outcome.added ? 201 : 200)
        .header('Cache-Control', NO_STORE)
        .send(envelope(request, trustedPublisherView(record)));
    },
  );

  /** Removes what `selector` names among the trusted publishers the caller sees; 404 when none. */
  async function remove(request: FastifyRequest, reply: FastifyReply, id: string, selector: TrustedPublisherSelector): Promise<FastifyReply> {
    const { token, owners } = await checkManager(request.token, id);
    const targets = visible(await trustedPublishers.listTrustedPublishers(id), token, owners).filter((record) => selectsTrustedPublisher(record, selector));
    for (const record of targets) await trustedPublishers.removeTrustedPublishers(id, { id: record.id });
    if (targets.length === 0) throw new ApiError(404, 'NOT_FOUND', `no trusted publisher of ${id} matches`);
    return reply.code(204).header('Cache-Control', NO_STORE).send();
  }

  app.delete<{ Params: { id: string }; Querystring: RemoveFields; Body: RemoveFields | null }>(
    path(':id'),
    {
      preValidation: credential,
      schema: { params: ID_PARAMS, querystring: REMOVE_QUERY, body: REMOVE_BODY },
      config: { rateLimit: READS, cache: 'dynamic', body: { shape: 'a JSON object: { repository, workflow, environment?, issuer? }', invalid: 'the selection is invalid', root: 'body' } },
    },
    async (request, reply) => {
      const { id } = request.params;
      const fields: RemoveFields = { ...request.query, ...(request.body ?? {}) };
      if (fields.repository === undefined || fields.workflow === undefined) {
        throw new ApiError(400, 'VALIDATION_ERROR', 'say which trusted publishers to remove', [
          ...(fields.repository === undefined ? [{ field: 'repository', code: 'REQUIRED', message: 'the repository (owner/name) is required' }] : []),
          ...(fields.workflow === undefined ? [{ field: 'workflow', code: 'REQUIRED', message: 'the workflow file is required' }] : []),
        ]);
      }
      return remove(request, reply, id, {
        repository: fields.repository,
        workflow: fields.workflow,
        ...(fields.environment !== undefined ? { environment: fields.environment } : {}),
        ...(fields.issuer !== undefined ? { issuer: fields.issuer.replace(/\/+$/, '') } : {}),
      });
    },
  );

  app.delete<{ Params: { id: string; publisherId: string } }>(`${path(':id')}/:publisherId`, { preValidation: credential, schema: { params: ONE_PARAMS }, config: { rateLimit: READS, cache: 'dynamic' } }, async (request, reply) => {
    const { id, publisherId } = request.params;
    return remove(request, reply, id, { id: publisherId });
  });

  return Promise.resolve();
};
