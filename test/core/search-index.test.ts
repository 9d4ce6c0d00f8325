/**
 * The fast paths against the plain rules they stand for: the token index (search, core/search.ts)
 * gives exactly what `matchesTerms(searchText(...))` gives, and the keyed sort (core/listing.ts)
 * the spec's three keys compared plainly, on generated documents and queries.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { buildIndex, getFromIndex, listFromIndex, searchIndex } from '../../src/client/registry-client.js';
import { listingOrder, selectLatest, sortEntries, STABILITY_ORDER } from '../../src/core/listing.js';
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import { buildSearchIndex, matchesFilters, matchesTerms, searchIndexed, searchTerms, searchText, type TemplateFilters } from '../../src/core/search.js';

const RUNS = { numRuns: 200 };

// Few characters, so that generated terms often occur in generated texts: letters of both cases,
// spaces (several in a row, at either end), the Greek sigma (lower-cased by context), a letter
// whose lower case is two code units, an apostrophe (case-ignorable), a surrogate pair, U+0000.
const CHARACTERS = ['a', 'b', 'A', 'B', 'n', ' ', ' ', 'Σ', 'σ', 'ς', 'İ', 'i', '\u0307', "'", '-', '😀', '\u0000'];
const text = (maxLength: number) => fc.array(fc.constantFrom(...CHARACTERS), { maxLength }).map((chars) => chars.join(''));

const templateEntry = fc.record({
  id: fc.constantFrom('one', 'two', 'three'),
  name: text(6),
  version: fc.constantFrom('1.0.0', '1.2.0', '2.0.0'),
  description: text(20),
  category: text(4),
  stability: fc.constantFrom('stable', 'beta', 'experimental', 'deprecated'),
  tags: fc.array(text(5), { maxLength: 4 }),
  features: fc.array(text(5), { maxLength: 3 }),
  downloads: fc.option(fc.constantFrom(0, 1, 5, 1.5, 1e12), { nil: undefined }),
});

const entries = fc.array(templateEntry, { maxLength: 30 }).map((generated) =>
  generated.map(
    ({ downloads, ...fields }): TemplateEntry => ({
      ...fields,
      downloadUrl: 'https://registry.example.test/a.tgz',
      ...(downloads === undefined ? {} : { stats: { downloads } }),
    }),
  ),
);

/** Queries: generated text, or pieces of the entries' own values in any case. */
const query = (templates: readonly TemplateEntry[]) => {
  const values = templates.flatMap((entry) => [entry.name, entry.description, entry.category, ...(entry.tags ?? []), ...(entry.features ?? [])]);
  const piece = values.length === 0 ? text(4) : fc.tuple(fc.constantFrom(...values), fc.nat(), fc.nat(6), fc.boolean()).map(([value, from, length, upper]) => {
    const start = from % (value.length + 1);
    const slice = value.slice(start, start + length);
    return upper ? slice.toUpperCase() : slice;
  });
  return fc.array(fc.oneof(piece, piece, text(4)), { minLength: 1, maxLength: 5 }).map((parts) => parts.join(' '));
};

const document = (templates: TemplateEntry[]): RegistryDocument => ({ templates, categories: [], tags: [], lastUpdated: '2026-01-01T00:00:00.000Z' });

/** The spec's search, applied the plain way. */
const byTheRule = (templates: readonly TemplateEntry[], q: string): TemplateEntry[] => {
  const terms = searchTerms(q);
  return sortEntries(templates).filter((entry) => matchesTerms(searchText(entry), terms));
};

/** Where each entry of `list` is in `templates` (by identity, so equal-looking entries stay apart). */
const at = (templates: readonly TemplateEntry[], list: readonly TemplateEntry[]): number[] => list.map((entry) => templates.indexOf(entry));

describe('search through the token index', () => {
  it('returns exactly the entries of the plain rule, in listing order, on every call (scan first, index after)', () => {
    fc.assert(
      fc.property(
        entries.chain((templates) => fc.tuple(fc.constant(templates), fc.array(query(templates), { minLength: 3, maxLength: 5 }))),
        ([templates, queries]) => {
          const index = buildIndex(document(templates));
          for (const q of queries) expect(at(templates, searchIndex(index, q))).toEqual(at(templates, byTheRule(templates, q)));
        },
      ),
      RUNS,
    );
  });

  it('answers from the index alone, positions filed in listing order, as the rule does', () => {
    fc.assert(
      fc.property(
        entries.chain((templates) => fc.tuple(fc.constant(templates), query(templates))),
        ([templates, q]) => {
          const terms = searchTerms(q);
          const { rank, order } = listingOrder(templates);
          const sorted = Array.from(order, (position) => templates[position]!);
          const answer = searchIndexed(buildSearchIndex(templates, rank), terms, sorted);
          // A term holding U+0000 is left to the rule by design; every other query is answered.
          if (terms.some((term) => term.includes('\u0000'))) expect(answer).toBeUndefined();
          else expect(at(templates, answer!)).toEqual(at(templates, byTheRule(templates, q)));
        },
      ),
      RUNS,
    );
  });

  it('keeps only the entries every term reaches, however many entries the commonest term has', () => {
    const make = (id: string, name: string): TemplateEntry => ({ id, name, version: '1.0.0', description: '', category: 'c', stability: 'stable', downloadUrl: 'x' });
    // "x" is rarest, then "y", then "z" (held by four entries but not by "two").
    const templates = [make('one', 'x y z'), make('two', 'x y'), make('three', 'y z'), make('four', 'z'), make('five', 'z')];
    const index = buildIndex(document(templates));
    void index.tokens;
    expect(index.search(searchTerms('z y x')).map((entry) => entry.id)).toEqual(['one']);
  });

  it('matches inside one value only, never across two, whatever the case', () => {
    const templates: TemplateEntry[] = [
      { id: 'a', name: 'ReactSPA', version: '1.0.0', description: 'A  Fast  starter', category: 'frontend', stability: 'stable', downloadUrl: 'x', tags: ['web', 'web'], features: ['auth'] },
      { id: 'b', name: 'node-api', version: '1.0.0', description: 'ΟΔΟΣ server', category: 'backend', stability: 'beta', downloadUrl: 'x', tags: ['web'], features: [] },
    ];
    const index = buildIndex(document(templates));
    const names = (q: string) => index.search(searchTerms(q)).map((entry) => entry.id);
    for (let round = 0; round < 2; round++) {
      // The first round scans with the rule, the second answers from the index.
      if (round === 1) void index.tokens;
      expect(names('reactspa')).toEqual(['a']);
      expect(names('spa fast')).toEqual(['a']);
      expect(names('starterfrontend')).toEqual([]); // description + category
      expect(names('fast  starter')).toEqual(['a']); // two terms
      expect(names('WEB')).toEqual(['a', 'b']); // a tag twice in one entry: the entry once
      expect(names('οδος')).toEqual(['b']); // final sigma, as toLowerCase gives it
      expect(names('οδοσ')).toEqual([]);
      expect(names('api server')).toEqual(['b']);
      expect(names('api auth')).toEqual([]);
    }
  });
});

/** The spec's listing order, compared plainly: stability, downloads descending, name; ties keep the list's order. */
const plainListing = (templates: readonly TemplateEntry[]): TemplateEntry[] => {
  const rank = (entry: TemplateEntry) => {
    const index = (STABILITY_ORDER as readonly string[]).indexOf(entry.stability ?? '');
    return index === -1 ? STABILITY_ORDER.length : index;
  };
  return [...templates].sort((a, b) => rank(a) - rank(b) || (b.stats?.downloads ?? 0) - (a.stats?.downloads ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
};

describe('listing order with keys read once', () => {
  it('is the spec order of the three keys compared plainly, ties included', () => {
    fc.assert(
      fc.property(entries, (templates) => {
        const { order, rank } = listingOrder(templates);
        expect(Array.from(order)).toEqual(at(templates, plainListing(templates)));
        expect(at(templates, sortEntries(templates))).toEqual(at(templates, plainListing(templates)));
        // rank is the inverse of order
        order.forEach((position, k) => expect(rank[position]).toBe(k));
      }),
      RUNS,
    );
  });
});

describe('lists and picks from indexes built on first use', () => {
  const tag = fc.constantFrom('a', 'b', 'A', 'ab');
  const filters: fc.Arbitrary<TemplateFilters> = fc.record(
    {
      category: fc.oneof(tag, fc.array(tag, { maxLength: 2 })),
      stability: fc.oneof(fc.constantFrom('stable', 'beta'), fc.array(fc.constantFrom('stable', 'beta', 'deprecated'), { maxLength: 2 })),
      tags: fc.array(tag, { maxLength: 2 }),
      features: fc.array(tag, { maxLength: 2 }),
      author: fc.constantFrom('Ada', 'Bo'),
    },
    { requiredKeys: [] },
  );
  const withKeys = fc.array(
    fc.record({ entry: templateEntry, category: tag, tags: fc.array(tag, { maxLength: 3 }), features: fc.array(tag, { maxLength: 2 }), author: fc.option(fc.constantFrom('Ada', 'Bo'), { nil: undefined }) }),
    { maxLength: 30 },
  ).map((generated) =>
    generated.map(({ entry: { downloads, ...fields }, category, tags, features, author }): TemplateEntry => ({
      ...fields,
      category,
      tags,
      features,
      downloadUrl: 'x',
      ...(author === undefined ? {} : { author: { name: author } }),
      ...(downloads === undefined ? {} : { stats: { downloads } }),
    })),
  );

  it('filters as matchesFilters does, in listing order, whichever list is asked for first', () => {
    fc.assert(
      fc.property(withKeys, fc.array(filters, { minLength: 1, maxLength: 4 }), (templates, asked) => {
        const index = buildIndex(document(templates));
        for (const wanted of asked) {
          expect(at(templates, listFromIndex(index, wanted))).toEqual(at(templates, sortEntries(templates).filter((entry) => matchesFilters(entry, wanted))));
        }
      }),
      RUNS,
    );
  });

  it('picks the entry selectLatest picks, and the first entry of an exact version', () => {
    fc.assert(
      fc.property(entries, fc.constantFrom('one', 'two', 'three', 'four'), fc.constantFrom('1.0.0', '1.2.0', '2.0.0'), (templates, id, version) => {
        const index = buildIndex(document(templates));
        expect(getFromIndex(index, id, version)).toBe(templates.find((entry) => entry.id === id && entry.version === version) ?? null);
        expect(getFromIndex(index, id)).toBe(selectLatest(templates, id));
      }),
      RUNS,
    );
  });
});
