/**
 * The registry document of a set of published versions: one entry per version (`toEntry`), the
 * categories and tags they use, checked against the registry-document schema before anyone writes
 * it. Pure: no I/O.
 */
import { createHash } from 'node:crypto';

import { compareText, selectLatest } from '../core/listing.js';
import { describeSchemaErrors, type RuleViolation } from '../core/messages.js';
import type { IndexLine, IndexLines } from '../core/registry-index.js';
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { schemaErrors, usePrecompiledValidators } from '../core/schemas.js';
import { compareVersions, isTemplateName, NAME_RULE } from '../core/versions.js';
import { bySchema as precompiledValidators } from './precompiled-validators.js';
import type { SourceVersion } from './source.js';

// The entry and document schemas compiled at build time: a build does not compile them at start.
usePrecompiledValidators(precompiledValidators);

/** The five manifest categories, with a human name, a one-line description and an icon name. */
export const DEFAULT_CATEGORIES: readonly Readonly<Category>[] = [
  { id: 'frontend', name: 'Frontend', description: 'Web user interfaces: single-page apps, sites and component libraries.', icon: 'layout' },
  { id: 'backend', name: 'Backend', description: 'Servers, APIs, workers and command-line services.', icon: 'server' },
  { id: 'fullstack', name: 'Full stack', description: 'Applications with both a user interface and a server.', icon: 'layers' },
  { id: 'mobile', name: 'Mobile', description: 'Apps for phones and tablets.', icon: 'smartphone' },
  { id: 'desktop', name: 'Desktop', description: 'Apps for desktop operating systems.', icon: 'monitor' },
];

/** The registry could not be built: the document breaks the schema (nothing was written). */
export class RegistryBuildError extends Error {
  override readonly name = 'RegistryBuildError';
  readonly violations: RuleViolation[];

  constructor(violations: RuleViolation[], heading = 'the registry document is invalid, nothing was written') {
    super(`${heading}:\n${violations.map((v) => `  ${v.pointer || '/'}: ${v.message}`).join('\n')}`);
    this.violations = violations;
  }
}

/** The template entry of one published version. */
export function toEntry(version: SourceVersion): TemplateEntry {
  const { manifest, stats } = version;
  const methodology = manifest.methodologyVersion ?? '*';
  const node = manifest.dependencies?.node;
  const repositoryUrl = version.repositoryUrl ?? manifest.repository?.url ?? '';
  const entryStats: TemplateEntry['stats'] = { downloads: stats.downloads, stars: stats.stars, forks: stats.forks, issues: stats.issues };
  if (stats.lastDownload) entryStats.lastDownload = stats.lastDownload;
  const entry: TemplateEntry = {
    id: manifest.name,
    name: manifest.name,
    version: manifest.version,
    description: manifest.description,
    category: manifest.category,
    stability: version.stability ?? manifest.stability ?? 'stable',
    downloadUrl: version.downloadUrl,
    documentationUrl: version.documentationUrl ?? (repositoryUrl || ''),
    repositoryUrl,
    author: manifest.author ? { ...manifest.author } : { name: 'unknown' },
    license: manifest.license ?? '',
    tags: [...(manifest.keywords ?? [])],
    features: [...(manifest.features ?? [])],
    dependencies: { methodology, ...manifest.dependencies },
    compatibility: {
      methodologyVersions: [methodology],
      nodeVersions: node ? [node] : [],
      platforms: [],
      breaking: manifest.compatibility?.breaking ?? false,
      deprecated: [...(manifest.compatibility?.deprecated ?? [])],
      removed: [...(manifest.compatibility?.removed ?? [])],
    },
    stats: entryStats,
    createdAt: version.createdAt,
    updatedAt: version.updatedAt ?? version.createdAt,
  };
  // The optional fields set one by one, in this order (the order of the entry's JSON), rather than
  // spread from objects made for each: a build makes 100,000 entries.
  if (version.integrity !== undefined) entry.integrity = version.integrity;
  if (version.sha256 !== undefined) entry.sha256 = version.sha256;
  if (version.size !== undefined) entry.size = version.size;
  if (version.deprecationMessage !== undefined) entry.deprecationMessage = version.deprecationMessage;
  if (version.yanked) entry.yanked = true;
  if (version.attestation) {
    const { attestation } = version;
    entry.attestations = { url: attestation.url, predicateType: attestation.predicateType };
    entry.publisher = { repository: attestation.signer.repository, workflow: attestation.signer.workflow };
    if (attestation.runUrl) entry.publisher.runUrl = attestation.runUrl;
  }
  return entry;
}

/** Entries in document order: id ascending, then version ascending (numerically). */
function byIdThenVersion(a: TemplateEntry, b: TemplateEntry): number {
  return compareText(a.id, b.id) || compareVersions(a.version, b.version);
}

export function buildCategories(entries: readonly Pick<TemplateEntry, 'id' | 'category'>[], definitions: readonly Readonly<Category>[]): Category[] {
  const members = new Map<string, Set<string>>();
  for (const entry of entries) {
    let ids = members.get(entry.category);
    if (!ids) members.set(entry.category, (ids = new Set()));
    ids.add(entry.id);
  }
  const known = new Set(definitions.map((c) => c.id));
  const extra = [...members.keys()].filter((id) => !known.has(id)).sort(compareText);
  return [
    ...definitions.map((c) => ({ ...c })),
    ...extra.map((id): Category => ({ id, name: id, description: '', icon: 'folder' })),
  ].map((category) => ({ ...category, templates: [...(members.get(category.id) ?? [])].sort(compareText) }));
}

/** What is not a schema rule but would break the files: ids unusable as file names, duplicates. */
function structuralViolations(entries: readonly TemplateEntry[]): RuleViolation[] {
  const violations: RuleViolation[] = [];
  const seen = new Set<string>();
  entries.forEach((entry, index) => {
    if (!isTemplateName(entry.id)) {
      violations.push({ pointer: `/templates/${index}/id`, message: `${NAME_RULE} (got ${JSON.stringify(entry.id)})`, code: 'PATTERN' });
    }
    const key = `${entry.id}@${entry.version}`;
    if (seen.has(key)) violations.push({ pointer: `/templates/${index}`, message: `${key} appears more than once`, code: 'DUPLICATE' });
    seen.add(key);
  });
  return violations;
}

/** Names the template behind a `/templates/N/...` pointer, so a message says which version is wrong. */
function withEntryLabels(violations: RuleViolation[], entries: readonly TemplateEntry[]): RuleViolation[] {
  return violations.map((violation) => {
    const index = /^\/templates\/(\d+)(?:\/|$)/.exec(violation.pointer)?.[1];
    const entry = index === undefined ? undefined : entries[Number(index)];
    if (!entry) return violation;
    return { ...violation, message: `${violation.message} [${String(entry.id)}@${String(entry.version)}]` };
  });
}

/** A version left out of a registry because its entry would break the rules. */
export interface SkippedVersion {
  id: string;
  version: string;
  violations: RuleViolation[];
}

/**
 * What is wrong with the registry entry of one version: the template-entry schema's rules and an id
 * usable as a file name. Empty when the entry is fine. Checked before an upload is accepted, and again
 * for every version a registry is built from (a store written by an older release, a stranger's release).
 */
export function entryViolations(entry: TemplateEntry): RuleViolation[] {
  const violations = describeSchemaErrors(schemaErrors('template-entry', entry));
  if (!isTemplateName(entry.id)) {
    violations.push({ pointer: '/id', message: `${NAME_RULE} (got ${JSON.stringify(entry.id)})`, code: 'PATTERN' });
  }
  return violations;
}

export interface DocumentOptions {
  lastUpdated: string;
  categories?: readonly Readonly<Category>[];
  /**
   * Called for each version whose entry breaks the rules; that version is left out. Without it, such
   * a version makes the whole build fail (RegistryBuildError).
   */
  onSkipped?: (skipped: SkippedVersion) => void;
}

/** The registry document of `versions` (lastUpdated as given); throws RegistryBuildError when invalid. */
export function buildDocument(versions: readonly SourceVersion[], options: DocumentOptions): RegistryDocument {
  const entries = versions.map(toEntry);
  const kept = options.onSkipped
    ? entries.filter((entry) => {
        const violations = entryViolations(entry);
        if (violations.length === 0) return true;
        options.onSkipped?.({ id: String(entry.id), version: String(entry.version), violations });
        return false;
      })
    : entries;
  const templates = kept.sort(byIdThenVersion);
  const tags = [...new Set(templates.flatMap((t) => t.tags ?? []))].sort(compareText);
  const document: RegistryDocument = {
    templates,
    categories: buildCategories(templates, options.categories ?? DEFAULT_CATEGORIES),
    tags,
    lastUpdated: options.lastUpdated,
  };
  // Entries checked one by one above need not be checked again inside the whole document.
  const checked = options.onSkipped ? { ...document, templates: [] } : document;
  const violations = [...describeSchemaErrors(schemaErrors('registry-document', checked)), ...structuralViolations(templates)];
  if (violations.length > 0) throw new RegistryBuildError(withEntryLabels(violations, templates));
  return document;
}

/** Strong ETag of some bytes: `"` + base64url sha256 + `"`. */
export function strongEtag(bytes: Buffer | string): string {
  return `"${createHash('sha256').update(bytes).digest('base64url')}"`;
}

/** Where a static registry keeps the index, and one template's file (relative to registry.json). */
export const INDEX_FILE = 'index.json';
export const TEMPLATE_FILE_PATTERN = 'templates/{id}.json';

/** The line of template `id` in the small index, from its entries; null when none is selectable (all yanked). */
export function sparseIndexLine(id: string, entries: readonly TemplateEntry[]): IndexLine | null {
  const latest = selectLatest(entries, id);
  if (!latest) return null;
  const updatedAt = latest.updatedAt ?? latest.createdAt;
  return {
    id,
    version: latest.version,
    stability: latest.stability,
    category: latest.category,
    description: latest.description,
    ...(latest.tags && latest.tags.length > 0 ? { tags: latest.tags } : {}),
    ...(latest.features && latest.features.length > 0 ? { features: latest.features } : {}),
    downloads: entries.reduce((sum, entry) => sum + (entry.stats?.downloads ?? 0), 0),
    ...(updatedAt ? { updatedAt } : {}),
    ...(latest.attestations ? { attestations: latest.attestations } : {}),
    ...(latest.publisher ? { publisher: latest.publisher } : {}),
  };
}

/**
 * The small index of `document`: per template (sorted by id) its latest version as the spec's get
 * rule selects it, and the numbers a list shows; downloads summed over its versions.
 */
export function buildSparseIndex(document: RegistryDocument): IndexLines {
  const byId = new Map<string, TemplateEntry[]>();
  for (const entry of document.templates) {
    let list = byId.get(entry.id);
    if (!list) byId.set(entry.id, (list = []));
    list.push(entry);
  }
  const templates: IndexLines['templates'] = [];
  for (const id of [...byId.keys()].sort(compareText)) {
    const line = sparseIndexLine(id, byId.get(id) ?? []);
    if (line) templates.push(line);
  }
  return { formatVersion: 1, lastUpdated: document.lastUpdated, templatePath: TEMPLATE_FILE_PATTERN, templates };
}
