/**
 * The two layouts of index.json (schemas/registry-index.schema.json). formatVersion 1 lists one
 * object per template in `templates`; formatVersion 2, what the generator writes, gives the same
 * lines as `columns`, one array per field: each field's values side by side compress far better
 * (descriptions beside descriptions), which keeps the index of 10,000 templates under 0.25 MB gzip.
 * Readers turn either into lines, the form every consumer works with.
 */
import type { SparseIndex } from './schema-types.js';

/** One template's line of the index. */
export type IndexLine = NonNullable<SparseIndex['templates']>[number];

/** The index as lines (the formatVersion 1 layout), whatever layout it was published in. */
export interface IndexLines {
  formatVersion: 1;
  lastUpdated: string;
  templatePath?: string;
  templates: IndexLine[];
}

/** The columns layout (formatVersion 2) of `index`: every field any line has, null where a line lacks it. */
export function indexColumns(index: IndexLines): SparseIndex {
  // The required fields first, so that an empty index has their (empty) columns too.
  const fields: string[] = ['id', 'version', 'stability', 'category', 'description'];
  const seen = new Set<string>(fields);
  for (const line of index.templates) {
    for (const key of Object.keys(line)) {
      if (!seen.has(key)) {
        seen.add(key);
        fields.push(key);
      }
    }
  }
  const columns: Record<string, unknown[]> = {};
  for (const field of fields) columns[field] = index.templates.map((line) => (line as Record<string, unknown>)[field] ?? null);
  return { formatVersion: 2, lastUpdated: index.lastUpdated, ...(index.templatePath !== undefined ? { templatePath: index.templatePath } : {}), columns: columns as NonNullable<SparseIndex['columns']> };
}

/**
 * The lines the `columns` of a formatVersion 2 index stand for, or a message naming the column that
 * breaks the layout (each an array, all of one length). Self-contained: the catalog page embeds it.
 */
export function columnsToLines(columns: unknown): Record<string, unknown>[] | string {
  if (typeof columns !== 'object' || columns === null || Array.isArray(columns)) return '/columns must be an object of arrays (formatVersion 2)';
  // Keys that would reach a line's prototype are not fields.
  const entries = Object.entries(columns).filter(([key]) => key !== '__proto__' && key !== 'constructor' && key !== 'prototype');
  const first = entries[0];
  const length = first && Array.isArray(first[1]) ? first[1].length : 0;
  for (const [key, values] of entries) {
    if (!Array.isArray(values)) return `/columns/${key} must be an array`;
    if (values.length !== length) return `/columns/${key} has ${values.length} items where /columns/${first ? first[0] : ''} has ${length}: every column has one item per template`;
  }
  const lines: Record<string, unknown>[] = [];
  for (let i = 0; i < length; i++) {
    const line: Record<string, unknown> = {};
    for (const [key, values] of entries) if ((values as unknown[])[i] !== null) line[key] = (values as unknown[])[i];
    lines.push(line);
  }
  return lines;
}

/**
 * The lines of an index.json as parsed: a formatVersion 2 index turned into lines; anything else
 * returned as it is, for the schema to judge. Throws IndexLayoutError naming the column when the
 * columns cannot be lines.
 */
export function indexLines(json: unknown): unknown {
  if (typeof json !== 'object' || json === null || (json as { formatVersion?: unknown }).formatVersion !== 2) return json;
  const { columns, formatVersion: _columns, ...rest } = json as { columns?: unknown; formatVersion: 2 };
  const templates = columnsToLines(columns);
  if (typeof templates === 'string') throw new IndexLayoutError(templates);
  return { formatVersion: 1, ...rest, templates };
}

/** An index.json whose columns cannot be read as lines. */
export class IndexLayoutError extends Error {
  override name = 'IndexLayoutError';
}
