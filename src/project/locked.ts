/**
 * What `migrate`, `update` and `check-update` start from: the project's lock file, and the
 * version of its template the registry offers.
 */
import path from 'node:path';

import type { RegistryClient } from '../client/index.js';
import { errorMessage } from '../core/errors.js';
import type { TemplateEntry } from '../core/schema-types.js';
import { compareVersions, isTemplateVersion } from '../core/versions.js';
import { recoverInterruptedApply, type Recovery } from '../migrate/index.js';
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
  if (options.to !== undefined && !isTemplateVersion(options.to)) throw new RangeError(`the target version must be MAJOR.MINOR.PATCH (got ${JSON.stringify(options.to)})`);
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
