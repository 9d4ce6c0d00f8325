/**
 * ARCHITECTURE.md's "Where each spec rule lives" table names exactly one home for each rule: one file
 * of src/ outside the parentheses of its "where" cell (what the parentheses add are callers, helpers
 * and the places that answer or store what the rule decides), and every file the table names exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

const architecture = readFileSync('ARCHITECTURE.md', 'utf8');

/** The table's rows as [rule, where]. */
function ruleRows(): [string, string][] {
  const start = architecture.indexOf('\n## Where each spec rule lives\n');
  expect(start, 'ARCHITECTURE.md has a "Where each spec rule lives" section').toBeGreaterThan(-1);
  const next = architecture.indexOf('\n## ', start + 1);
  return architecture
    .slice(start, next === -1 ? undefined : next)
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('|---'))
    .slice(1)
    .map((line) => {
      const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim());
      return [cells[0]!, cells[cells.length - 1]!];
    });
}

/** `cell` without anything in parentheses, nested ones included. */
function outsideParentheses(cell: string): string {
  let depth = 0;
  let kept = '';
  for (const char of cell) {
    if (char === '(') depth++;
    else if (char === ')') depth = Math.max(0, depth - 1);
    else if (depth === 0) kept += char;
  }
  return kept;
}

/** The files a cell names (`core/versions.ts`, `store/*\/analytics.ts`; `test/...` from the root). */
const namedFiles = (cell: string): string[] => [...cell.matchAll(/`([a-z-]+(?:\/[A-Za-z0-9_*.-]+)*\.ts)`/g)].map((match) => match[1]!);

function exists(file: string): boolean {
  const parts = file.split('/');
  const walk = (dir: string, rest: string[]): boolean => {
    const [head, ...tail] = rest;
    if (head === undefined) return true;
    if (!head.includes('*')) return existsSync(path.join(dir, head)) && walk(path.join(dir, head), tail);
    const pattern = new RegExp(`^${head.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    return existsSync(dir) && readdirSync(dir).some((name) => pattern.test(name) && walk(path.join(dir, name), tail));
  };
  // A test file is named from the repository's root, everything else from src/.
  return parts[0] === 'test' ? walk('.', parts) : walk('src', parts);
}

describe('the "Where each spec rule lives" table of ARCHITECTURE.md', () => {
  it('names exactly one file for each rule', () => {
    const rows = ruleRows();
    expect(rows.length).toBeGreaterThan(100);
    const homes = rows.map(([rule, where]) => [rule, [...new Set(namedFiles(outsideParentheses(where)))]] as const);
    expect(homes.filter(([, files]) => files.length !== 1).map(([rule, files]) => `${rule}: ${files.join(', ') || 'no file'}`)).toEqual([]);
  });

  it('names only files that exist', () => {
    const missing = ruleRows().flatMap(([rule, where]) => namedFiles(where).filter((file) => !exists(file)).map((file) => `${rule}: ${file}`));
    expect(missing).toEqual([]);
  });
});
