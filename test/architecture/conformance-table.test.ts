/**
 * The Conformance table of docs/registry-hosting.md (one row per item of the specification: where
 * it is implemented, whether it conforms) stays true to the code it points at: every file it names
 * exists, and every function named beside a file is in that file. The table of issue 23's items
 * after it gives every item once, each done with the tests that hold it, or open and described as
 * it is, with a deviation in the specification's table.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

const doc = readFileSync('docs/registry-hosting.md', 'utf8');

/** The rows of the table under a heading (up to the next heading): [item, where, status]. */
function tableRows(heading: string): string[][] {
  const start = doc.indexOf(`\n${heading}\n`);
  expect(start, `docs/registry-hosting.md has a "${heading}" section`).toBeGreaterThan(-1);
  const next = doc.indexOf('\n#', start + 1);
  const section = doc.slice(start, next === -1 ? undefined : next);
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('|---'))
    .slice(1)
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

/** The specification's table, under `## Conformance`. */
const conformanceRows = (): string[][] => tableRows('## Conformance');
/** Issue 23's items, under `### Issue 23 items as they are`. */
const issueRows = (): string[][] => tableRows('### Issue 23 items as they are');

/** Files a cell names: `src/...`, `schemas/...`, `examples/...`, `test/...` (a `*` matches within a name). */
function namedFiles(cell: string): { file: string; names: string[] }[] {
  const found: { file: string; names: string[] }[] = [];
  for (const match of cell.matchAll(/`((?:src|schemas|examples|test)\/[^`]+)`(?: \(([^)]*)\))?/g)) {
    const names = [...(match[2] ?? '').matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((m) => m[1]!);
    found.push({ file: match[1]!, names });
  }
  return found;
}

function exists(file: string): boolean {
  if (!file.includes('*')) return existsSync(file);
  const pattern = new RegExp(`^${path.basename(file).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  return readdirSync(path.dirname(file)).some((name) => pattern.test(name));
}

describe('the Conformance table of docs/registry-hosting.md', () => {
  it('has a row for each item, each with where and a status', () => {
    const rows = conformanceRows();
    expect(rows.length).toBeGreaterThan(100);
    for (const row of rows) expect(row, row[0]).toHaveLength(3);
    // Group rows (bold, no cells) aside, every row says whether it conforms.
    for (const [item, , status] of rows.filter(([item]) => !item!.startsWith('**'))) expect(status?.trim(), item).not.toBe('');
  });

  it('names files that exist, and functions that are in the files named beside them', () => {
    const broken: string[] = [];
    let named = 0;
    for (const [item, where = ''] of [...conformanceRows(), ...issueRows()]) {
      for (const { file, names } of namedFiles(`${item} ${where}`)) {
        named += 1 + names.length;
        if (!exists(file)) {
          broken.push(`${file} (row "${item}")`);
          continue;
        }
        if (file.includes('*') || !file.endsWith('.ts')) continue;
        const source = readFileSync(file, 'utf8');
        for (const name of names) if (!new RegExp(`\\b${name}\\b`).test(source)) broken.push(`${name} is not in ${file} (row "${item}")`);
      }
    }
    expect(broken).toEqual([]);
    expect(named).toBeGreaterThan(80);
  });

  it("gives each of issue 23's items 1 to 16 once, done with its tests or open with the deviation in the specification's table", () => {
    const rows = issueRows();
    const numbered = rows.filter(([item]) => /^\d+\. /.test(item!));
    expect(numbered.map(([item]) => Number.parseInt(item!, 10))).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    for (const [item, where = '', status = ''] of rows) {
      expect(status, item).toMatch(/^(Done|Open)\b/);
      if (status.startsWith('Done')) expect(where, `${item}: a done item names the tests that hold it`).toMatch(/`test\/[^`]+\.test\.ts`/);
    }
    const specTable = conformanceRows()
      .map((row) => row.join(' | '))
      .join('\n');
    for (const [item, , status = ''] of numbered) {
      if (!status.startsWith('Open')) continue;
      const n = Number.parseInt(item!, 10);
      expect(specTable, `open item ${n}: a row of the specification's table says how it deviates`).toMatch(new RegExp(`issue 23 item ${n}\\b`));
    }
  });
});
