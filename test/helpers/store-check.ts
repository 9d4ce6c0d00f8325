/**
 * What a store must look like after any crash or failure, read straight from disk: every version
 * is complete and its archive and manifest are in place with the recorded digest; no archive,
 * manifest or temp file belongs to no version.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import Database from 'better-sqlite3';

export interface StoreCheck {
  /** `name@version` of every complete version. */
  complete: string[];
  /** Everything wrong, one line each; empty for a sound store. */
  problems: string[];
}

async function filesBelow(dir: string, prefix = ''): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const entry of entries) {
    const relative = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await filesBelow(path.join(dir, entry.name), relative)));
    else out.push(relative);
  }
  return out;
}

export async function checkStore(store: string): Promise<StoreCheck> {
  const db = new Database(path.join(store, 'registry.sqlite'), { readonly: true });
  const rows = db.prepare('SELECT name, version, state, integrity FROM versions').all() as { name: string; version: string; state: string; integrity: string }[];
  db.close();
  const problems: string[] = [];
  const expected = new Set<string>();
  for (const row of rows) {
    const label = `${row.name}@${row.version}`;
    if (row.state !== 'complete') problems.push(`${label} is ${row.state}`);
    expected.add(`archives/${row.name}/${row.version}.tgz`);
    expected.add(`manifests/${row.name}/${row.version}.json`);
    const archive = await readFile(path.join(store, 'archives', row.name, `${row.version}.tgz`)).catch(() => undefined);
    if (!archive) problems.push(`${label} has no archive`);
    else if (`sha512-${createHash('sha512').update(archive).digest('base64')}` !== row.integrity) problems.push(`${label}: the archive does not match its integrity (torn)`);
    const manifest = await readFile(path.join(store, 'manifests', row.name, `${row.version}.json`), 'utf8').catch(() => undefined);
    if (manifest === undefined) problems.push(`${label} has no manifest`);
    else {
      try {
        JSON.parse(manifest);
      } catch {
        problems.push(`${label}: its manifest is torn`);
      }
    }
  }
  for (const file of [...(await filesBelow(path.join(store, 'archives'), 'archives')), ...(await filesBelow(path.join(store, 'manifests'), 'manifests'))]) {
    if (!expected.has(file)) problems.push(`${file} belongs to no version`);
  }
  for (const file of await filesBelow(path.join(store, 'tmp'), 'tmp')) problems.push(`${file} is a leftover upload`);
  for (const file of await filesBelow(store)) if (/\.tmp$/.test(file)) problems.push(`${file} is a leftover temp file`);
  return { complete: rows.filter((r) => r.state === 'complete').map((r) => `${r.name}@${r.version}`).sort(), problems };
}
