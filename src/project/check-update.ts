/**
 * Whether a generated project's template has a newer version: the locked and latest versions,
 * whether moving is breaking, and what changed in between (the change log sections of every
 * version after the locked one, read from the latest version's archive).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ProvenanceCheckError, SignerChangedError, type DownloadLimits, type ProvenanceOutcome, type RegistryClient } from '../client/index.js';
import { errorMessage } from '../core/errors.js';
import { readHead } from '../core/files.js';
import { compareVersions } from '../core/versions.js';
import { chainSteps } from '../migrate/index.js';
import { findChangelogSection } from '../core/changelog.js';
import { loadTemplate, type LoadedTemplate } from '../template/index.js';
import { isInside } from '../template/paths.js';
import { TemplateNotFoundError } from './errors.js';
import { migrationStepsBetween, pinnedPolicy, projectLock, versionDownloader, type DownloadVersion, type ProjectProvenance } from './locked.js';

export interface CheckUpdateOptions {
  client: RegistryClient;
  /** The project folder (holding `.template-lock.json`); the working folder unless given. */
  projectDir?: string;
  fetch?: typeof globalThis.fetch;
  signal?: AbortSignal;
  limits?: DownloadLimits;
  /** How provenance is checked (default `warn`), the lock's signer pinned: a possible takeover is an error here too, before any update. */
  provenance?: ProjectProvenance;
}

/** One version's section of the change log. */
export interface ChangelogEntry {
  version: string;
  /** The section's text; '' when the change log has no section for the version. */
  body: string;
}

export interface UpdateCheck {
  templateId: string;
  currentVersion: string;
  /** The version `update` would move to (the one the registry selects). */
  latestVersion: string;
  updateAvailable: boolean;
  /** True when MAJOR changes, a version in between declares `compatibility.breaking`, or a migration step in between is breaking. */
  breaking: boolean;
  /** Why the update is breaking, one reason per line. */
  breakingReasons: string[];
  /** The change log sections of every version after the current one up to the latest, newest first. */
  changelog: ChangelogEntry[];
  /** Why the change log and the steps could not be read (the archive could not be had); the versions are still right. */
  changelogError?: string;
  /** What the provenance check of the latest version found (when an update is available and its archive was read). */
  provenance?: ProvenanceOutcome;
}

/** The MAJOR part of a version (the spec's comparison reads a missing segment as 0). */
const majorOf = (version: string): number => Number(version.split('.')[0] ?? 0) || 0;

/** Largest change log read. */
const CHANGELOG_BYTES = 1024 * 1024;

async function changelogOf(template: LoadedTemplate, versions: readonly string[]): Promise<ChangelogEntry[]> {
  const name = typeof template.manifest.changelog === 'string' && template.manifest.changelog !== '' ? template.manifest.changelog : 'CHANGELOG.md';
  const file = path.resolve(template.root, name);
  const text = isInside(template.root, file) ? await readHead(file, CHANGELOG_BYTES).catch(() => '') : '';
  return versions.map((version) => ({ version, body: findChangelogSection(text, version)?.body ?? '' }));
}

/**
 * Checks the project in `projectDir` against the registry. The latest version's archive is
 * downloaded (verified, into a temp folder removed in the end) only when it is newer, for its
 * change log and migration steps. Throws ProjectLockError and TemplateNotFoundError.
 */
export async function checkForUpdate(options: CheckUpdateOptions): Promise<UpdateCheck> {
  const lock = await projectLock(options.projectDir ?? '.');
  const templateId = lock.template.name;
  const currentVersion = lock.template.version;
  const latest = await options.client.getTemplate(templateId);
  if (!latest) throw new TemplateNotFoundError(templateId);
  const check: UpdateCheck = {
    templateId,
    currentVersion,
    latestVersion: latest.version,
    updateAvailable: compareVersions(latest.version, currentVersion) > 0,
    breaking: false,
    breakingReasons: [],
    changelog: [],
  };
  if (!check.updateAvailable) return check;

  const between = (await options.client.listVersions(templateId, { includeYanked: true }))
    .filter((entry) => compareVersions(entry.version, currentVersion) > 0 && compareVersions(entry.version, latest.version) <= 0)
    .sort((a, b) => compareVersions(b.version, a.version));
  if (majorOf(latest.version) > majorOf(currentVersion)) {
    check.breakingReasons.push(`MAJOR version changes (${currentVersion} -> ${latest.version})`);
  }
  for (const entry of between) {
    if (entry.compatibility?.breaking === true) check.breakingReasons.push(`${entry.version} declares breaking changes`);
  }

  const work = await mkdtemp(path.join(tmpdir(), 'template-check-update-'));
  try {
    // Reading a change log is not a use of the template.
    const outcomes = new Map<string, ProvenanceOutcome>();
    const inspect = versionDownloader(work, { ...options, provenance: pinnedPolicy(options.provenance, lock), outcomes });
    const download: DownloadVersion = (entry, folder) => inspect(entry, folder, 'inspect');
    const template = await loadTemplate(await download(latest, 'template', 'inspect'));
    check.provenance = outcomes.get(latest.version);
    check.changelog = await changelogOf(template, between.map((entry) => entry.version));
    const steps = await migrationStepsBetween({ client: options.client, lock, target: latest, targetRoot: template.root, download });
    for (const { step } of chainSteps(steps, { currentVersion, templateId }).steps) {
      if (step.breaking) check.breakingReasons.push(`migration step ${step.id} is breaking (${step.fromVersion} -> ${step.toVersion})`);
    }
  } catch (error) {
    // A version not signed as it must be is the answer, not a detail of the change log.
    if (error instanceof SignerChangedError || error instanceof ProvenanceCheckError) throw error;
    check.changelogError = errorMessage(error);
    check.changelog = between.map((entry) => ({ version: entry.version, body: '' }));
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  check.breaking = check.breakingReasons.length > 0;
  return check;
}
