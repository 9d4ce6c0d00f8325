/**
 * The storage rules every backend shares (the SQLite and PostgreSQL stores both call these and run
 * only the SQL): how a token, an account, a webhook, a trusted publisher and a purge job are made,
 * who may publish or manage a name, what adding and removing an owner and saving a trusted
 * publisher come to, when a token's use is written, what a session's state is, which webhooks an
 * event goes to and the exact body a delivery sends, what a change of a webhook (and a rotation of
 * its secret) makes of it, a token's quota of staged files, and when a login is refused for too
 * many failures.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

import { isTemplateName, NAME_PATTERN } from '../core/versions.js';
import { eventMatches, LAST_USED_PRECISION_MS, MAX_TRUSTED_PUBLISHERS, StagedQuotaError, type LoginLimit, type LoginScope, type NewToken, type NewTrustedPublisher, type NewUser, type NewWebhook, type OutboxDelivery, type OwnerChange, type Permission, type PurgeJob, type SessionKind, type StagedUsage, type StoredWebhook, type TokenRecord, type TrustedPublisher, type TrustedPublisherAddition, type UserRecord, type WebhookEventRecord, type WebhookUpdate } from './types.js';

/** A new token (returned once; only its hash is stored) and its record; throws on a role, name or expiry that breaks the rules. */
export function newTokenRecord(options: NewToken): { token: string; record: TokenRecord } {
  if (options.role !== 'publisher' && options.role !== 'admin') throw new Error(`role must be publisher or admin (got ${String(options.role)})`);
  for (const name of options.templates ?? []) {
    if (!isTemplateName(name)) throw new Error(`template name ${JSON.stringify(name)} must match ${NAME_PATTERN.source}`);
  }
  const now = options.now ?? new Date();
  const expiresAt = options.expiresAt;
  if (expiresAt !== undefined && !(expiresAt.getTime() > now.getTime())) {
    throw new Error(`expiresAt must be a date after the token's creation (${now.toISOString()})`);
  }
  const id = `tok_${randomBytes(6).toString('hex')}`;
  const token = `trg_${randomBytes(32).toString('base64url')}`;
  const record: TokenRecord = {
    id,
    role: options.role,
    ...(options.templates && options.templates.length > 0 ? { templates: [...options.templates] } : {}),
    owner: options.owner ?? id,
    createdAt: now.toISOString(),
    ...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}),
    ...(options.publisher ? { publisher: { ...options.publisher } } : {}),
  };
  return { token, record };
}

/** An e-mail as accounts are stored and looked up by: trimmed, lower-cased (one account per address, whatever its case). */
export const emailKey = (email: string): string => email.trim().toLowerCase();

/** The record of a new account (its e-mail as `emailKey` gives it). */
export function newUserRecord(user: NewUser): UserRecord {
  return {
    id: `usr_${randomBytes(6).toString('hex')}`,
    email: emailKey(user.email),
    role: user.role,
    owner: user.owner,
    ...(user.name !== undefined ? { name: user.name } : {}),
    createdAt: (user.now ?? new Date()).toISOString(),
  };
}

/**
 * The publishing rule: admins publish anything; a publisher its listed names, if unclaimed or one of
 * its owners'. A token minted for trusted publishing (`publisher` set) publishes its listed names
 * while a trusted publisher of the name still backs its run (`trusted`, see `backsRun`), whoever
 * owns the name: removing the trusted publisher, or the claim of a pending one's name by someone
 * else, stops it at once, not when the token expires.
 */
export function permission(token: TokenRecord, name: string, owners: readonly string[], trusted = false): Permission {
  if (token.role === 'admin') return { allowed: true };
  if (token.templates && !token.templates.includes(name)) {
    return { allowed: false, reason: `this token may publish only ${token.templates.join(', ')}` };
  }
  if (token.publisher) {
    if (trusted) return { allowed: true };
    return { allowed: false, reason: `no trusted publisher of ${name} matches this token's run any more (it was removed, or the name was claimed by another publisher)` };
  }
  if (owners.length > 0 && !owners.includes(token.owner)) return { allowed: false, reason: `template ${name} belongs to another publisher` };
  return { allowed: true };
}

/**
 * The owner a reserved version is recorded with: the token's, except for a token minted for trusted
 * publishing on a claimed name, which publishes for the name's claimer.
 */
export function versionOwner(token: TokenRecord, owners: readonly string[]): string {
  return token.publisher && owners.length > 0 ? (owners[0] ?? token.owner) : token.owner;
}

/** Who may manage a name (owners, trusted publishers, lifecycle): whoever may publish it, except a token minted for trusted publishing. */
export function managementPermission(token: TokenRecord, name: string, owners: readonly string[]): Permission {
  if (token.publisher) return { allowed: false, reason: 'a token minted for trusted publishing may only publish' };
  return permission(token, name, owners);
}

/**
 * The last use to write when a token is used at `now` (its time), or undefined while the stored one
 * is less than LAST_USED_PRECISION_MS old: a write on every request would be wasted.
 */
export function lastUseToWrite(record: TokenRecord, now: Date): string | undefined {
  const last = record.lastUsedAt === undefined ? undefined : Date.parse(record.lastUsedAt);
  return last !== undefined && now.getTime() - last < LAST_USED_PRECISION_MS ? undefined : now.toISOString();
}

/**
 * What adding `owner` to a name whose owners are `owners` (the claimer first; empty: unclaimed)
 * comes to: refused on an unclaimed name, no change for an owner, else a co-owner added last.
 */
export function ownerAddition(owners: readonly string[], owner: string): OwnerChange {
  if (owners.length === 0) return { refused: 'unclaimed' };
  if (owners.includes(owner)) return { changed: false, owners: [...owners] };
  return { changed: true, owners: [...owners, owner] };
}

/** A removal of an owner the rule allows: the owners left, and the co-owner who becomes the claimer (when the claimer left). */
export type OwnerRemoval = Extract<OwnerChange, { refused: string }> | { changed: true; owners: string[]; claimer: string | undefined };

/**
 * What removing `owner` from a name whose owners are `owners` comes to: refused on an unclaimed
 * name, for someone who is no owner, and for the last owner (a name always keeps one); when the
 * claimer leaves, the earliest co-owner becomes the claimer.
 */
export function ownerRemoval(owners: readonly string[], owner: string): OwnerRemoval {
  if (owners.length === 0) return { refused: 'unclaimed' };
  if (!owners.includes(owner)) return { refused: 'not-an-owner' };
  if (owners.length === 1) return { refused: 'last-owner' };
  return { changed: true, owners: owners.filter((candidate) => candidate !== owner), claimer: owners[0] === owner ? owners[1] : undefined };
}

/** A repository as trusted publishers are looked up by: GitHub's names ignore case. */
export const repositoryKey = (repository: string): string => repository.toLowerCase();

/** An environment as compared: GitHub's environment names ignore case. */
export const environmentKey = (environment: string | undefined): string => (environment ?? '').toLowerCase();

/**
 * Whether a stored trusted publisher still backs the run of a token minted for trusted publishing:
 * the same issuer, repository (any case), pinned owner id and workflow; a pending one only for the
 * owner it would claim the name for, and only while the name is unclaimed or that owner's (a claim
 * by anyone else voids it, even one racing with its save).
 */
export function backsRun(record: TrustedPublisher, token: TokenRecord, owners: readonly string[]): boolean {
  const run = token.publisher;
  if (!run) return false;
  return (
    record.issuer === run.issuer &&
    repositoryKey(record.repository) === repositoryKey(run.repository) &&
    record.repositoryOwnerId === run.repositoryOwnerId &&
    record.workflow === run.workflow &&
    pendingHolds(record, owners, token.owner)
  );
}

/**
 * Whether a trusted publisher may act for `owner` on a name whose owners are `owners`: an ordinary
 * one always; a pending one for the owner it claims for, while the name is unclaimed or that owner's.
 */
export function pendingHolds(record: Pick<TrustedPublisher, 'pendingOwner'>, owners: readonly string[], owner?: string): boolean {
  if (record.pendingOwner === undefined) return true;
  if (owner !== undefined && record.pendingOwner !== owner) return false;
  return owners.length === 0 || owners.includes(record.pendingOwner);
}

/** Whether two trusted publishers of one template are the same (a second save of it changes nothing). */
export function sameTrustedPublisher(a: Pick<TrustedPublisher, 'issuer' | 'repository' | 'workflow' | 'environment' | 'ref'>, b: Pick<NewTrustedPublisher, 'issuer' | 'repository' | 'workflow' | 'environment' | 'ref'>): boolean {
  return (
    a.issuer === b.issuer &&
    repositoryKey(a.repository) === repositoryKey(b.repository) &&
    a.workflow === b.workflow &&
    environmentKey(a.environment) === environmentKey(b.environment) &&
    (a.ref ?? '') === (b.ref ?? '')
  );
}

/**
 * Whether a stored trusted publisher counts as one `token` would save now: an ordinary one (the
 * name's owners keep it together), or a pending one of the same saver. Several publishers may each
 * save a pending one for one name and repository; none of them is granted while they disagree.
 */
export function sameSaver(record: Pick<TrustedPublisher, 'pendingOwner'>, token: TokenRecord, owners: readonly string[]): boolean {
  if (owners.length > 0 || record.pendingOwner === undefined) return true;
  return record.pendingOwner === token.owner;
}

/**
 * The record of a new trusted publisher saved by `token`; pending (the name unclaimed, `owners`
 * empty) it claims the name for the token's owner at the first publish through it.
 */
export function newTrustedPublisherRecord(input: NewTrustedPublisher, token: TokenRecord, owners: readonly string[]): TrustedPublisher {
  return {
    id: `tp_${randomBytes(6).toString('hex')}`,
    template: input.template,
    issuer: input.issuer,
    repository: input.repository,
    repositoryOwnerId: input.repositoryOwnerId,
    workflow: input.workflow,
    ...(input.environment !== undefined ? { environment: input.environment } : {}),
    ...(input.ref !== undefined ? { ref: input.ref } : {}),
    ...(owners.length === 0 ? { pendingOwner: token.owner } : {}),
    createdBy: token.owner,
    createdAt: (input.now ?? new Date()).toISOString(),
  };
}

/**
 * What `token` saving `input` comes to, given the name's `owners` and its `current` trusted
 * publishers: refused when it may not manage the name, the existing one when the same is saved
 * again (`sameTrustedPublisher`, `sameSaver`), refused at MAX_TRUSTED_PUBLISHERS, else the new
 * record (`added`), which the backend inserts in the same transaction as it read `current`.
 */
export function trustedPublisherAddition(input: NewTrustedPublisher, token: TokenRecord, owners: readonly string[], current: readonly TrustedPublisher[]): TrustedPublisherAddition {
  const allowed = managementPermission(token, input.template, owners);
  if (!allowed.allowed) return { added: false, forbidden: allowed.reason };
  const existing = current.find((record) => sameTrustedPublisher(record, input) && sameSaver(record, token, owners));
  if (existing) return { added: false, existing };
  if (current.length >= MAX_TRUSTED_PUBLISHERS) return { added: false, full: current.length };
  return { added: true, publisher: newTrustedPublisherRecord(input, token, owners) };
}

/** Whether any of a name's trusted publishers still backs the run of `token` (only a token minted for trusted publishing has one). */
export function backedByAny(records: readonly TrustedPublisher[], token: TokenRecord, owners: readonly string[]): boolean {
  return token.publisher !== undefined && records.some((record) => backsRun(record, token, owners));
}

/** Whether a selector of `removeTrustedPublishers` takes a record. */
export function selectsTrustedPublisher(record: TrustedPublisher, selector: { id: string } | { issuer?: string; repository: string; workflow: string; environment?: string }): boolean {
  if ('id' in selector) return record.id === selector.id;
  return (
    (selector.issuer === undefined || record.issuer === selector.issuer) &&
    repositoryKey(record.repository) === repositoryKey(selector.repository) &&
    record.workflow === selector.workflow &&
    (selector.environment === undefined || environmentKey(record.environment) === environmentKey(selector.environment))
  );
}

/** A session secret: what the client keeps (only its sha256 is stored). */
export const newSessionSecret = (kind: SessionKind): string => `${kind === 'refresh' ? 'trr' : 'trs'}_${randomBytes(32).toString('base64url')}`;

/** The stored state of a session. */
export interface SessionState {
  expiresAt: Date;
  replacedAt?: Date;
  revokedAt?: Date;
  /**
   * Whether another session of its family (its login) was revoked. A family is revoked as a whole,
   * but on PostgreSQL a rotation committing while a replay revokes the family can leave the new row
   * unmarked (the revoking statement's snapshot did not see it): one revoked row ends the login.
   */
  familyRevoked?: boolean;
}

/** Why a session may not be used at `now` (revoked, then reused, then expired), or undefined when it may. */
export function sessionRefusal(session: SessionState, now: Date): 'expired' | 'revoked' | 'reused' | undefined {
  if (session.revokedAt !== undefined || session.familyRevoked === true) return 'revoked';
  if (session.replacedAt !== undefined) return 'reused';
  if (now.getTime() >= session.expiresAt.getTime()) return 'expired';
  return undefined;
}

/** The exact JSON body of a delivery (what is signed and sent on every attempt): the spec's `{ event, timestamp, data }`. */
export function webhookBody(record: WebhookEventRecord, now: Date): string {
  return JSON.stringify({ event: record.event, timestamp: record.timestamp ?? now.toISOString(), data: record.data });
}

/** The record of a new webhook (its secret kept as given: deliveries are signed with it). */
export function newWebhookRecord(options: NewWebhook): StoredWebhook {
  return {
    id: `wh_${randomBytes(8).toString('hex')}`,
    url: options.url,
    events: [...options.events],
    secret: options.secret,
    active: options.active,
    createdAt: (options.now ?? new Date()).toISOString(),
  };
}

/** The webhooks an event is delivered to: the active ones subscribed to it, in the order given. */
export function subscribedWebhooks(webhooks: readonly StoredWebhook[], event: string): StoredWebhook[] {
  return webhooks.filter((w) => w.active && w.events.some((e) => eventMatches(e, event)));
}

/**
 * The outbox deliveries a change writes (in its transaction): for each record in order, one pending
 * delivery per webhook subscribed to its event (`subscribedWebhooks`), due at `now`, all of a record
 * with the one body (`webhookBody`) every attempt sends.
 */
export function newOutboxDeliveries(records: readonly WebhookEventRecord[], webhooks: readonly StoredWebhook[], now: Date): OutboxDelivery[] {
  return records.flatMap((record) => {
    const body = webhookBody(record, now);
    return subscribedWebhooks(webhooks, record.event).map(
      (webhook): OutboxDelivery => ({
        id: randomUUID(),
        webhookId: webhook.id,
        event: record.event,
        body,
        state: 'pending',
        attempts: 0,
        nextAttemptAt: now.toISOString(),
        createdAt: now.toISOString(),
        lastStatus: null,
        lastError: null,
      }),
    );
  });
}

/** Throws StagedQuotaError when a token that has staged `used` may not stage one file more (`maxFiles`; undefined: no limit). */
export function checkStagedFiles(used: StagedUsage, maxFiles: number | undefined): void {
  if (maxFiles !== undefined && used.files >= maxFiles) throw new StagedQuotaError('files', maxFiles, used);
}

/** Throws StagedQuotaError when `size` more bytes than `used` (the file's own earlier bytes left out) would pass `maxBytes` (undefined: no limit). */
export function checkStagedBytes(used: StagedUsage, size: number, maxBytes: number | undefined): void {
  if (maxBytes !== undefined && used.bytes + size > maxBytes) throw new StagedQuotaError('bytes', maxBytes, used);
}

/** Whether a staged file's capability is the one presented (compared as digests, in constant time) and still valid at `now`. */
export function capabilityHolds(stored: Buffer, presented: Buffer, expiresAt: string, now: Date): boolean {
  const matches = presented.length === stored.length && timingSafeEqual(presented, stored);
  return matches && Date.parse(expiresAt) > now.getTime();
}

/** The purge jobs a change writes (in one transaction): one per target, pending and due at `now`, each with the URLs once, sorted; none without targets or URLs. */
export function newPurgeJobs(targets: readonly string[], urls: readonly string[], now: Date): PurgeJob[] {
  if (targets.length === 0 || urls.length === 0) return [];
  const sorted = [...new Set(urls)].sort();
  return targets.map((target): PurgeJob => ({ id: randomUUID(), target, urls: sorted, state: 'pending', attempts: 0, nextAttemptAt: now.toISOString(), createdAt: now.toISOString(), lastError: null }));
}

/** The order the login limits are checked in, and where they are reported. */
export const LOGIN_SCOPES: readonly LoginScope[] = ['account-address', 'address', 'account'];

/**
 * The login rule: a login is refused while any of its scopes holds `max` attempts in its window
 * (failed ones, and ones being checked). `maxthNewest[scope]` is the time of the `max`-th newest
 * attempt of that scope inside its window (undefined: fewer than `max`); the wait is until that one
 * leaves the window. Undefined: admitted.
 */
export function loginRefusal(
  limits: Record<LoginScope, LoginLimit>,
  maxthNewest: Partial<Record<LoginScope, Date>>,
  now: Date,
): { admitted: false; scope: LoginScope; retryAfterMs: number } | undefined {
  let refusal: { admitted: false; scope: LoginScope; retryAfterMs: number } | undefined;
  for (const scope of LOGIN_SCOPES) {
    const at = maxthNewest[scope];
    if (at === undefined) continue;
    const retryAfterMs = Math.max(1, at.getTime() + limits[scope].windowMs - now.getTime());
    if (!refusal || retryAfterMs > refusal.retryAfterMs) refusal = { admitted: false, scope, retryAfterMs };
  }
  return refusal;
}

/** The longest window of the login limits: attempts older than it count for nothing and may be removed. */
export const longestLoginWindow = (limits: Record<LoginScope, LoginLimit>): number => Math.max(...LOGIN_SCOPES.map((scope) => limits[scope].windowMs));

/** The previous secret of a webhook while it still signs at `now`: its overlap has not ended. */
export function previousSecretAt(webhook: Pick<StoredWebhook, 'previousSecret' | 'previousSecretExpiresAt'>, now: Date): string | undefined {
  if (webhook.previousSecret === undefined || webhook.previousSecretExpiresAt === undefined) return undefined;
  return Date.parse(webhook.previousSecretExpiresAt) > now.getTime() ? webhook.previousSecret : undefined;
}

/** Whether two secrets are the same, in a time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/**
 * A webhook after `update` at `now`: the fields given replace the stored ones (id and creation time
 * stay). A `secret` other than the current one is a rotation: the current secret becomes the previous
 * one, signing beside the new one until `now + secretOverlapMs` (a rotation during an overlap drops
 * the older secret: at most two sign at once). Without a rotation a previous secret stays while its
 * overlap lasts and is forgotten once it ended.
 */
export function updatedWebhook(current: StoredWebhook, update: WebhookUpdate, now: Date): StoredWebhook {
  const { previousSecret: _previous, previousSecretExpiresAt: _expires, ...base } = current;
  const next: StoredWebhook = {
    ...base,
    ...(update.url === undefined ? {} : { url: update.url }),
    ...(update.events === undefined ? {} : { events: [...update.events] }),
    ...(update.active === undefined ? {} : { active: update.active }),
  };
  if (update.secret !== undefined && !sameSecret(update.secret, current.secret)) {
    next.secret = update.secret;
    if (update.secretOverlapMs > 0) {
      next.previousSecret = current.secret;
      next.previousSecretExpiresAt = new Date(now.getTime() + update.secretOverlapMs).toISOString();
    }
    return next;
  }
  const previous = previousSecretAt(current, now);
  if (previous !== undefined) {
    next.previousSecret = previous;
    next.previousSecretExpiresAt = current.previousSecretExpiresAt;
  }
  return next;
}
