/**
 * The version lifecycle (published bytes never change): deprecating a version (its stability and
 * an optional message), yanking it (kept and downloadable by its exact version, never selected as
 * the latest, never reusable), one version at a time or every version a filter matches; and purging
 * one (an admin's removal for good: `purgeVersion`). The state
 * lives in the storage's rows; the registry is rebuilt after each change, and the entries carry it
 * (`stability`, `deprecationMessage`, `yanked`).
 */
import { staticArchivePath, staticAttestationPath } from '../core/routes.js';
import type { TemplateEntry } from '../core/schema-types.js';
import { compareVersions, isValidRange, satisfiesRange } from '../core/versions.js';
import type { LifecycleChange, LifecycleEvents, StoredVersion, TokenRecord, VersionStability } from '../store/types.js';
import type { ServerContext } from './context.js';
import { ApiError, invalidInput } from './envelope.js';
import { lifecycleEntry } from './webhooks/payloads.js';
import { WEBHOOK_EVENTS, type WebhookEvent } from './webhooks.js';

export const STABILITIES: readonly VersionStability[] = ['experimental', 'beta', 'stable', 'deprecated'];
export const MAX_DEPRECATION_MESSAGE = 1000;

/** What PATCH (and a bulk `update`) may change. */
export interface LifecycleUpdate {
  stability?: VersionStability;
  /** Kept only with `stability: 'deprecated'`; given alone, it deprecates the version; null removes it. */
  deprecationMessage?: string | null;
  /** Yanks the version (only in a bulk `update`; one version is yanked with DELETE). */
  yanked?: true;
}

/** Range operators of a bulk filter's `version` object. */
export type VersionBounds = Partial<Record<'lt' | 'lte' | 'gt' | 'gte', string>>;

/**
 * Which versions `PATCH /templates/bulk` changes: the versions of template `id`; with `version`, only
 * those in it (a semver range such as `<2.0.0` or `1.x`, an exact version, or bounds
 * `{ lt, lte, gt, gte }` compared numerically); with `stability`, only those whose current stability
 * is one of them.
 */
export interface LifecycleFilter {
  id: string;
  version?: string | VersionBounds;
  stability?: VersionStability | VersionStability[];
}

type Context = Pick<ServerContext, 'storage' | 'rebuild' | 'registry' | 'webhooks'>;

/** The change an update asks for, with the rules the schema cannot say; `at` prefixes the fields problems name (`update.` in a bulk change). */
function toChange(update: LifecycleUpdate, at = ''): LifecycleChange {
  const { deprecationMessage } = update;
  let stability = update.stability;
  if (typeof deprecationMessage === 'string') {
    if (stability === undefined) stability = 'deprecated';
    else if (stability !== 'deprecated') {
      throw new ApiError(422, 'VALIDATION_ERROR', 'a deprecation message needs stability deprecated', [
        { field: 'deprecationMessage', code: 'REQUIRES_DEPRECATED', message: `is kept only with stability deprecated (got stability ${stability})` },
      ]);
    }
  }
  if (stability === undefined && deprecationMessage === undefined && !update.yanked) {
    // Missing fields: a 400, as every missing field is (validationStatus).
    throw invalidInput('nothing to change', [
      { field: `${at}stability`, code: 'REQUIRED', message: `give at least one of stability, deprecationMessage${at === '' ? '' : ', yanked: true'}` },
    ]);
  }
  return {
    ...(stability === undefined ? {} : { stability }),
    ...(deprecationMessage === undefined ? {} : { deprecationMessage }),
    ...(update.yanked ? { yanked: true as const } : {}),
  };
}

async function checkPermission(context: Context, token: TokenRecord, id: string): Promise<void> {
  const permission = await context.storage.tokens.canManage(token, id);
  if (!permission.allowed) throw new ApiError(403, 'FORBIDDEN', permission.reason);
}

function entryOf(context: Context, id: string, version: string): TemplateEntry | undefined {
  return context.registry().document.templates.find((e) => e.id === id && e.version === version);
}

function eventsOf(before: StoredVersion, after: StoredVersion): WebhookEvent[] {
  const events: WebhookEvent[] = [];
  if (after.yankedAt && !before.yankedAt) events.push('template.yanked');
  if (after.stability === 'deprecated' && (before.stability !== 'deprecated' || before.deprecationMessage !== after.deprecationMessage)) events.push('template.deprecated');
  return events.filter((event) => (WEBHOOK_EVENTS as readonly string[]).includes(event));
}

/**
 * The webhook events of a lifecycle change of `id@version`, written by the store in the change's
 * transaction (so they come before the `registry.updated` of the rebuild that follows, and a crash
 * loses neither). Their data is the version's entry after the change.
 */
async function lifecycleEvents(context: Context, id: string, version: string): Promise<LifecycleEvents> {
  // A version another instance published a moment ago may not be in this one's registry yet.
  if (!entryOf(context, id, version)) await context.rebuild();
  const current = entryOf(context, id, version);
  const manifest = await context.storage.versions.readManifest(id, version);
  const timestamp = new Date().toISOString();
  return (before, after) => (current ? eventsOf(before, after).map((event) => ({ event, data: lifecycleEntry(current, manifest, after), timestamp })) : []);
}

/** The complete version id@version, or a 404. */
async function existingVersion(context: Context, id: string, version: string): Promise<StoredVersion> {
  const stored = await context.storage.versions.getVersion(id, version);
  if (!stored || stored.state !== 'complete') throw new ApiError(404, 'NOT_FOUND', `template ${id} version ${version} not found`);
  return stored;
}

/** Changes one version's lifecycle as `token` (its owner, or an admin); answers its entry after the rebuild. */
export async function changeLifecycle(context: Context, token: TokenRecord, id: string, version: string, update: LifecycleUpdate): Promise<{ entry: TemplateEntry; changed: boolean }> {
  const change = toChange(update);
  await existingVersion(context, id, version);
  await checkPermission(context, token, id);
  const result = await context.storage.versions.updateLifecycle(id, version, change, await lifecycleEvents(context, id, version));
  if (!result) throw new ApiError(404, 'NOT_FOUND', `template ${id} version ${version} not found`);
  if (result.changed) {
    context.webhooks.kick();
    await context.rebuild();
  }
  const entry = entryOf(context, id, version);
  if (!entry) throw new ApiError(404, 'NOT_FOUND', `template ${id} version ${version} is not in the registry`);
  return { entry, changed: result.changed };
}

/** Whether a version lies in a bulk filter's `version`. */
function inVersionFilter(version: string, filter: LifecycleFilter['version']): boolean {
  if (filter === undefined) return true;
  if (typeof filter === 'string') return filter === version || satisfiesRange(version, filter);
  const order = (bound: string | undefined, ok: (c: number) => boolean): boolean => bound === undefined || ok(compareVersions(version, bound));
  return order(filter.lt, (c) => c < 0) && order(filter.lte, (c) => c <= 0) && order(filter.gt, (c) => c > 0) && order(filter.gte, (c) => c >= 0);
}

/** Checks what the schema cannot: a `version` string must be a version or a semver range. */
function checkFilter(filter: LifecycleFilter): void {
  if (typeof filter.version === 'string' && !isValidRange(filter.version)) {
    throw new ApiError(422, 'VALIDATION_ERROR', 'the filter is invalid', [
      { field: 'filter.version', code: 'RANGE', message: `must be a version, a semver range or { lt, lte, gt, gte } (got ${JSON.stringify(filter.version)})` },
    ]);
  }
}

/** `PATCH /templates/bulk`: changes every version `filter` matches; answers how many changed and which. */
export async function changeLifecycleBulk(
  context: Context,
  token: TokenRecord,
  filter: LifecycleFilter,
  update: LifecycleUpdate,
): Promise<{ changed: number; versions: string[] }> {
  checkFilter(filter);
  const change = toChange(update, 'update.');
  const all = (await context.storage.versions.listVersions()).filter((v) => v.name === filter.id);
  if (all.length === 0) throw new ApiError(404, 'NOT_FOUND', `template ${filter.id} not found`);
  await checkPermission(context, token, filter.id);
  const stabilities = filter.stability === undefined ? undefined : [filter.stability].flat();
  const current = new Map(context.registry().document.templates.filter((e) => e.id === filter.id).map((e) => [e.version, e.stability]));
  const matching = all.filter(
    (v) => inVersionFilter(v.version, filter.version) && (stabilities === undefined || stabilities.includes(current.get(v.version) ?? v.stability ?? 'stable')),
  );
  const changed: StoredVersion[] = [];
  for (const version of matching) {
    const result = await context.storage.versions.updateLifecycle(version.name, version.version, change, await lifecycleEvents(context, version.name, version.version));
    if (result?.changed) changed.push(result.version);
  }
  if (changed.length > 0) {
    context.webhooks.kick();
    await context.rebuild();
  }
  return { changed: changed.length, versions: changed.map((after) => after.version).sort(compareVersions) };
}

/** The static copy's files of a version (its archive and provenance bundle): what a purge removes from the bucket. */
const staticFilesOf = (id: string, version: string): string[] => [staticArchivePath(id, version), staticAttestationPath(id, version)];

/**
 * `DELETE /templates/{id}/versions/{version}/purge` (an admin's): removes the version for good (the
 * store's row, archive, manifest and provenance bundle; its name and version recorded as never to be
 * used again), rebuilds the registry without its entry, then removes its files from the static copy
 * in the bucket (the copy's own builds prune them too, should one in flight put them back). Purging
 * a purged version again removes whatever of its bytes a failure left. 404 when there is no
 * published version to purge.
 */
export async function purgeVersion(context: Pick<ServerContext, 'storage' | 'rebuild'>, id: string, version: string, now: Date = new Date()): Promise<void> {
  const purged = await context.storage.versions.purgeVersion(id, version, now);
  if (!purged) throw new ApiError(404, 'NOT_FOUND', `template ${id} version ${version} not found`);
  await context.rebuild();
  // The bucket's copy is rebuilt in the background; its archive goes now (the copy's registry.json
  // naming it for a moment longer is the lesser harm).
  const { storage } = context;
  const output = storage.staticOutput;
  if (output) {
    const remove = (): Promise<void> => output.remove(staticFilesOf(id, version));
    await (storage.withBuildLock ? storage.withBuildLock(remove) : remove());
  }
}
