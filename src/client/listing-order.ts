/**
 * The spec's listing order (core/listing.ts, `sortEntries`) computed on keys read once per entry:
 * the comparator then reads typed arrays instead of three properties of two objects, which halves
 * the sort of a 100,000-entry registry. Same keys, same comparisons, same tie rule (document
 * order), so the same order as `sortEntries`; a property test holds the two together.
 */
import { compareText, stabilityRank } from '../core/listing.js';
import type { TemplateEntry } from '../core/schema-types.js';

type Sortable = Pick<TemplateEntry, 'name' | 'stability' | 'stats'>;

/** The listing order of a list of entries. */
export interface ListingOrder {
  /** Positions of the entries (indexes into the list), in listing order. */
  readonly order: Int32Array;
  /** `rank[p]`: where the entry at position p comes in the listing order (the inverse of `order`). */
  readonly rank: Int32Array;
}

/** The spec's listing order of `entries`. */
export function listingOrder(entries: readonly Sortable[]): ListingOrder {
  const count = entries.length;
  const ranks = new Int32Array(count);
  const downloads = new Float64Array(count);
  const names = new Array<string>(count);
  // Ranks of the stability values met so far: a registry has a handful of distinct values.
  const rankOf = new Map<string | undefined, number>();
  for (let position = 0; position < count; position++) {
    const entry = entries[position] as Sortable;
    let rank = rankOf.get(entry.stability);
    if (rank === undefined) rankOf.set(entry.stability, (rank = stabilityRank(entry.stability)));
    ranks[position] = rank;
    downloads[position] = entry.stats?.downloads ?? 0;
    names[position] = entry.name;
  }
  const order = new Array<number>(count);
  for (let position = 0; position < count; position++) order[position] = position;
  order.sort(
    (a, b) =>
      (ranks[a] as number) - (ranks[b] as number) ||
      (downloads[b] as number) - (downloads[a] as number) ||
      compareText(names[a] as string, names[b] as string) ||
      a - b,
  );
  const rank = new Int32Array(count);
  for (let k = 0; k < count; k++) rank[order[k] as number] = k;
  return { order: Int32Array.from(order), rank };
}
