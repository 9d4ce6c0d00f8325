/**
 * The spec's reader rules on template entries: the stability order, the listing order, and which
 * entry "get template" picks when no version is given. Every list, page and table of the project
 * (client, server, catalog, CLI) orders and selects entries through these functions.
 */
import type { TemplateEntry } from './schema-types.js';
import { compareVersions } from './versions.js';

/** The spec's listing order of stability values. */
export const STABILITY_ORDER = ['stable', 'beta', 'experimental', 'deprecated'] as const;
export type Stability = (typeof STABILITY_ORDER)[number];

/** Code-unit order: the same on every machine, whatever the locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Position of a stability in the listing order; unknown values come last. */
export function stabilityRank(stability: string | undefined): number {
  const index = (STABILITY_ORDER as readonly string[]).indexOf(stability ?? '');
  return index === -1 ? STABILITY_ORDER.length : index;
}

/**
 * The spec's "list templates" order: stability (stable, beta, experimental, deprecated), then
 * `stats.downloads` descending, then `name` ascending. Returns a new array; ties keep their order.
 */
export function sortEntries<T extends Pick<TemplateEntry, 'name' | 'stability' | 'stats'>>(entries: readonly T[]): T[] {
  return [...entries].sort(
    (a, b) =>
      stabilityRank(a.stability) - stabilityRank(b.stability) ||
      (b.stats?.downloads ?? 0) - (a.stats?.downloads ?? 0) ||
      compareText(a.name, b.name),
  );
}

/** What the selection rule reads of an entry: `yanked` is the version lifecycle's flag. */
type Selectable = Pick<TemplateEntry, 'id' | 'version' | 'stability' | 'yanked'>;

export interface SelectOptions {
  /** For an id whose versions are all yanked, select among them (`?include=yanked`); default: a yanked version is never selected. */
  includeYanked?: boolean;
}

/** True for a version that was yanked: kept for its exact version, out of latest selection and default listings. */
export function isYanked(entry: Pick<TemplateEntry, 'yanked'>): boolean {
  return entry.yanked === true;
}

/**
 * The spec's "get template" rule without a version: the highest-version entry of `id` whose
 * stability is `stable`; if none is stable, the highest-version entry; null for an unknown id.
 * Yanked versions are skipped: an id whose versions are all yanked gives null, or with `includeYanked`
 * its pick among the yanked ones.
 */
export function selectLatest<T extends Selectable>(entries: readonly T[], id: string, options: SelectOptions = {}): T | null {
  const unyanked = selectAmong(entries, id, (entry) => !isYanked(entry));
  if (unyanked !== null || !options.includeYanked) return unyanked;
  // A yanked version is shown only for an id that has nothing else: it never displaces one that is not.
  return selectAmong(entries, id, () => true);
}

function selectAmong<T extends Selectable>(entries: readonly T[], id: string, eligible: (entry: T) => boolean): T | null {
  let best: T | null = null;
  let bestStable: T | null = null;
  for (const entry of entries) {
    if (entry.id !== id || !eligible(entry)) continue;
    if (best === null || compareVersions(entry.version, best.version) > 0) best = entry;
    if (entry.stability === 'stable' && (bestStable === null || compareVersions(entry.version, bestStable.version) > 0)) bestStable = entry;
  }
  return bestStable ?? best;
}

/** One entry per id, the one `selectLatest` picks, in id order. */
export function latestEntries<T extends Selectable>(entries: readonly T[], options: SelectOptions = {}): T[] {
  const byId = new Map<string, T[]>();
  for (const entry of entries) {
    const list = byId.get(entry.id);
    if (list) list.push(entry);
    else byId.set(entry.id, [entry]);
  }
  return [...byId.keys()]
    .sort(compareText)
    .map((id) => selectLatest(byId.get(id) ?? [], id, options))
    .filter((entry): entry is T => entry !== null);
}

/** Every entry of `id`, highest version first. */
export function versionsOf<T extends Pick<TemplateEntry, 'id' | 'version'>>(entries: readonly T[], id: string): T[] {
  return entries.filter((entry) => entry.id === id).sort((a, b) => compareVersions(b.version, a.version));
}
