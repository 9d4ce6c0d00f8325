/**
 * What `migrate`, `update` and `check-update` start from: the project's lock file, the version of
 * its template the registry offers, and the migration steps between the two.
 */
import path from 'node:path';

import { downloadTemplate, type DownloadLimits, type ProvenanceOutcome, type ProvenancePolicy, type RegistryClient } from '../client/index.js';
import { errorMessage } from '../core/errors.js';
import type { TemplateEntry } from '../core/schema-types.js';
import { compareVersions, isTemplateVersion, VERSION_RULE } from '../core/versions.js';
import { loadDeclarativeSteps, migrationScope, MIGRATIONS_FOLDER, recoverInterruptedApply, type MigrationStep, type Recovery } from '../migrate/index.js';
import { readLock, type TemplateLock } from '../template/index.js';
import { ProjectLockError, TemplateNotFoundError } from './errors.js';

/** The project's lock file; ProjectLockError when the folder has none or it is damaged. */
export async function projectLock(projectDir: string): Promise<TemplateLock> {
  try {
    return await readLock(projectDir);
  } catch (error) {
    throw new ProjectLockError(errorMessage(error), { cause: error });
  }
}

/** The registry has nothing newer than the project's version. */
export interface UpToDate {
  status: 'up-to-date';
  templateId: string;
  currentVersion: string;
  registryVersion: string;
}

export interface LockedTarget {
  lock: TemplateLock;
  templateId: string;
  fromVersion: string;
  /** The registry entry to move to: newer than `fromVersion`. */
  target: TemplateEntry;
}

/**
 * Rolls back an apply a crash interrupted (the lock may be the new one), reads the lock and asks
 * the registry for `to` (or the version it selects). Throws RangeError for a malformed `to`,
 * ProjectLockError and TemplateNotFoundError.
 */
export async function lockedTarget(options: {
  client: RegistryClient;
  projectDir: string;
  to?: string;
  onRecovered?: (recovery: Recovery) => void;
}): Promise<LockedTarget | UpToDate> {
  if (options.to !== undefined && !isTemplateVersion(options.to)) throw new RangeError(`the target version ${VERSION_RULE} (got ${JSON.stringify(options.to)})`);
  const recovered = await recoverInterruptedApply(path.resolve(options.projectDir));
  if (recovered) options.onRecovered?.(recovered);
  const lock = await projectLock(options.projectDir);
  const templateId = lock.template.name;
  const fromVersion = lock.template.version;
  const target = await options.client.getTemplate(templateId, options.to);
  if (!target) throw new TemplateNotFoundError(templateId, options.to);
  if (compareVersions(target.version, fromVersion) <= 0) return { status: 'up-to-date', templateId, currentVersion: fromVersion, registryVersion: target.version };
  return { lock, templateId, fromVersion, target };
}

/** Downloads a version's archive into `folder` (under the caller's temp folder) and gives the unpacked template's root. */
export type DownloadVersion = (entry: TemplateEntry, folder: string, purpose: 'generate' | 'inspect') => Promise<string>;

/**
 * The declarative migration steps that lead from `fromVersion` up to `target`: those of the
 * target's `migrations/` folder and of every version in between (a template may ship each step
 * only in the version it was written for), each id and each `fromVersion -> toVersion` move taken
 * once, from the newest archive that has it. The versions in between are downloaded as
 * inspections (not counted as uses).
 */
export async function migrationStepsBetween(options: {
  client: RegistryClient;
  lock: TemplateLock;
  target: TemplateEntry;
  /** The target version's template folder, already downloaded. */
  targetRoot: string;
  download: DownloadVersion;
}): Promise<MigrationStep[]> {
  const { lock, target } = options;
  const templateId = lock.template.name;
  const scope = { answers: migrationScope(lock) };
  const between = (await options.client.listVersions(templateId, { includeYanked: true }))
    .filter((entry) => compareVersions(entry.version, lock.template.version) > 0 && compareVersions(entry.version, target.version) < 0)
    .sort((a, b) => compareVersions(b.version, a.version));
  const ids = new Set<string>();
  const moves = new Set<string>();
  const steps: MigrationStep[] = [];
  const add = (found: readonly MigrationStep[]): void => {
    for (const step of found) {
      const move = `${step.fromVersion}->${step.toVersion}`;
      if (ids.has(step.id) || moves.has(move) || compareVersions(step.toVersion, target.version) > 0) continue;
      ids.add(step.id);
      moves.add(move);
      steps.push(step);
    }
  };
  add(await loadDeclarativeSteps(path.join(options.targetRoot, MIGRATIONS_FOLDER), scope));
  for (const entry of between) {
    const root = await options.download(entry, `steps-${entry.version}`, 'inspect');
    add(await loadDeclarativeSteps(path.join(root, MIGRATIONS_FOLDER), scope));
  }
  return steps;
}

/** How a project's downloads check provenance: the caller's mode, root and consent, with the lock's signer pinned. */
export type ProjectProvenance = Omit<ProvenancePolicy, 'pinned'>;

/** The policy of every download for a project locked as `lock`: its signer pinned. */
export function pinnedPolicy(provenance: ProjectProvenance | undefined, lock: TemplateLock): ProvenancePolicy {
  return { mode: 'warn', ...provenance, ...(lock.signer ? { pinned: lock.signer } : {}) };
}

/**
 * A `DownloadVersion` into folders of `work`, verified as `create` does (provenance with the
 * lock's signer pinned, each version's outcome kept in `outcomes` by version), with the caller's
 * progress, fetch and bounds.
 */
export function versionDownloader(
  work: string,
  options: {
    client: RegistryClient;
    onProgress?: (received: number, total?: number) => void;
    fetch?: typeof globalThis.fetch;
    signal?: AbortSignal;
    limits?: DownloadLimits;
    provenance?: ProvenancePolicy;
    outcomes?: Map<string, ProvenanceOutcome>;
  },
): DownloadVersion {
  return async (entry, folder, purpose) => {
    const downloaded = await downloadTemplate(entry, path.join(work, folder), {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.provenance ? { provenance: options.provenance } : {}),
      documentUrl: options.client.registryUrl,
      // A registry that follows the specification alone gives no integrity: its archive is used as served.
      allowUnverified: true,
      purpose,
    });
    options.outcomes?.set(entry.version, downloaded.provenance);
    return downloaded.dir;
  };
}
