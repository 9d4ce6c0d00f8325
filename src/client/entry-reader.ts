/**
 * What the client reads from a registry document it did not write: every shape the specification
 * allows (range objects in `compatibility`, a prerelease version, a string `author`, a stability this
 * client does not know, a date-only `lastUpdated`), so that a registry written by someone else is
 * read as it is. Only an entry that cannot be used at all (no id, no version, no download URL, or an
 * integrity that cannot be checked) is left out, and said so; one odd entry never hides the others.
 */

import { loadSemver } from '../core/lazy/semver.load.js';
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { isLooseOnlyVersion, isTemplateVersion, VERSION_RULE } from '../core/versions.js';
import { isRecord } from '../core/is-record.js';

/** An entry the client left out, and why. */
export interface SkippedEntry {
  /** Its position in the document's (or file's) list. */
  index: number;
  /** `id@version` as far as it could be read. */
  label: string;
  reason: string;
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';
const strings = (value: unknown): string[] | undefined => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined);

const SRI_SHA512 = /^sha512-[A-Za-z0-9+/]+={0,2}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Why `raw` cannot be used as an entry, or the entry it reads as. */
export function readEntry(raw: unknown): { entry: TemplateEntry } | { reason: string } {
  if (!isRecord(raw)) return { reason: 'is not an object' };
  const id = nonEmpty(raw.id) ? raw.id : nonEmpty(raw.name) ? raw.name : undefined;
  if (id === undefined) return { reason: 'has no id' };
  if (!nonEmpty(raw.version)) return { reason: 'has no version' };
  // A release version by the version rule, optionally with a SemVer prerelease or build suffix
  // (the specification's entry does not restrict it): the selection rule compares them.
  const version = raw.version.trim();
  const release = version.split(/[-+]/, 1)[0] ?? '';
  if (!isTemplateVersion(release) || loadSemver().valid(version) === null) {
    return { reason: isLooseOnlyVersion(version) ? `its version ${VERSION_RULE}` : `its version ${JSON.stringify(raw.version)} is not a version (MAJOR.MINOR.PATCH, a prerelease or build suffix allowed)` };
  }
  // Ids and versions become cache keys and folder names on the consumer's side.
  if (/[/\\\0]/.test(id) || /[/\\\0]/.test(raw.version)) return { reason: 'has an id or version with a path separator' };
  if (!nonEmpty(raw.downloadUrl)) return { reason: 'has no downloadUrl' };
  if (raw.integrity !== undefined && !(typeof raw.integrity === 'string' && SRI_SHA512.test(raw.integrity))) {
    return { reason: 'has an integrity that is not a sha512 SRI string, so its archive could not be checked' };
  }
  if (raw.sha256 !== undefined && !(typeof raw.sha256 === 'string' && SHA256_HEX.test(raw.sha256))) return { reason: 'has a sha256 that is not 64 hex digits' };

  const entry: Record<string, unknown> = { ...raw, id, name: nonEmpty(raw.name) ? raw.name : id, version: raw.version.trim(), downloadUrl: raw.downloadUrl };
  entry.description = typeof raw.description === 'string' ? raw.description : '';
  entry.category = typeof raw.category === 'string' ? raw.category : '';
  if (typeof raw.stability !== 'string') delete entry.stability;
  // The specification's author is an object with a name; a plain string names the author.
  if (typeof raw.author === 'string') entry.author = raw.author.trim() === '' ? undefined : { name: raw.author.trim() };
  else if (!(isRecord(raw.author) && typeof raw.author.name === 'string')) delete entry.author;
  for (const field of ['tags', 'features'] as const) {
    const list = strings(raw[field]);
    if (list) entry[field] = list;
    else delete entry[field];
  }
  if (!isRecord(raw.compatibility)) delete entry.compatibility;
  if (!isRecord(raw.dependencies)) delete entry.dependencies;
  if (isRecord(raw.stats)) {
    entry.stats = Object.fromEntries(Object.entries(raw.stats).filter(([key, value]) => (key === 'lastDownload' ? typeof value === 'string' : typeof value === 'number' && Number.isFinite(value))));
  } else delete entry.stats;
  if (typeof raw.yanked !== 'boolean') delete entry.yanked;
  for (const field of ['documentationUrl', 'repositoryUrl', 'license', 'createdAt', 'updatedAt', 'deprecationMessage'] as const) {
    if (raw[field] !== undefined && typeof raw[field] !== 'string') delete entry[field];
  }
  if (entry.author === undefined) delete entry.author;
  return { entry: entry as unknown as TemplateEntry };
}

/** The readable entries of a list, and the ones left out. */
export function readEntries(list: readonly unknown[]): { entries: TemplateEntry[]; skipped: SkippedEntry[] } {
  const entries: TemplateEntry[] = [];
  const skipped: SkippedEntry[] = [];
  list.forEach((raw, index) => {
    const read = readEntry(raw);
    if ('entry' in read) entries.push(read.entry);
    else {
      const id = isRecord(raw) ? (nonEmpty(raw.id) ? raw.id : nonEmpty(raw.name) ? raw.name : '?') : '?';
      const version = isRecord(raw) && nonEmpty(raw.version) ? raw.version : '?';
      skipped.push({ index, label: `${id}@${version}`, reason: read.reason });
    }
  });
  return { entries, skipped };
}

function readCategory(raw: unknown): Category | undefined {
  if (!isRecord(raw) || !nonEmpty(raw.id)) return undefined;
  return {
    ...raw,
    id: raw.id,
    name: typeof raw.name === 'string' ? raw.name : raw.id,
    description: typeof raw.description === 'string' ? raw.description : '',
    icon: typeof raw.icon === 'string' ? raw.icon : '',
    templates: strings(raw.templates) ?? [],
  };
}

/**
 * A registry document as the client uses it, or why it cannot be one (no `templates` list). Every
 * readable entry is kept; the others are listed in `skipped`.
 */
export function readRegistryDocument(json: unknown): { document: RegistryDocument; skipped: SkippedEntry[] } | { problem: string } {
  if (!isRecord(json)) return { problem: 'the registry document is not a JSON object' };
  if (!Array.isArray(json.templates)) return { problem: 'the registry document has no "templates" list' };
  const { entries, skipped } = readEntries(json.templates);
  const categories = Array.isArray(json.categories) ? json.categories.map(readCategory).filter((c): c is Category => c !== undefined) : [];
  const document = {
    ...json,
    templates: entries,
    categories,
    tags: strings(json.tags) ?? [],
    lastUpdated: typeof json.lastUpdated === 'string' ? json.lastUpdated : '',
  } as RegistryDocument;
  return { document, skipped };
}

/** One line saying which entries of `what` were left out. */
export function skippedEntriesLine(what: string, skipped: readonly SkippedEntry[]): string {
  const shown = skipped.slice(0, 5).map((s) => `#${s.index} ${s.label} (${s.reason})`);
  const more = skipped.length > shown.length ? ` and ${skipped.length - shown.length} more` : '';
  return `${skipped.length} ${skipped.length === 1 ? 'entry' : 'entries'} of ${what} cannot be read and ${skipped.length === 1 ? 'is' : 'are'} left out: ${shown.join('; ')}${more}`;
}
