/**
 * The folder output's inventory: folders of archives recorded as a whole, looked up without an entry
 * per file, and a corrupt or hostile inventory file never trusted outside the output folder.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { HeldInventory, parseInventoryState, type FolderRecord } from '../../src/registry/folder-inventory.js';
import { BUILD_STATE_FILE, FolderOutput } from '../../src/registry/index.js';
import { tempDir } from '../helpers/fixtures.js';

const record: FolderRecord = [1000, '1.0.0.tgz', 10, 500, '', '1.1.0.tgz', 11, 600, ''];

describe('HeldInventory', () => {
  it('answers for the files of a recorded folder, a file known one by one taking precedence', () => {
    const held = new HeldInventory(new Map([['index.json', { size: 5, digest: 'abc' }], ['archives/a/1.1.0.tgz', { size: 99 }]]), new Map([['archives/a', record]]));
    expect(held.get('archives/a/1.0.0.tgz')).toEqual({ size: 10, mtimeMs: 500, digest: '' });
    expect(held.get('archives/a/1.1.0.tgz')).toEqual({ size: 99 });
    expect(held.has('archives/a/1.0.0.tgz')).toBe(true);
    expect(held.has('archives/a/2.0.0.tgz')).toBe(false);
    expect(held.has('archives/b/1.0.0.tgz')).toBe(false);
    expect([...held.keys()].sort()).toEqual(['archives/a/1.0.0.tgz', 'archives/a/1.1.0.tgz', 'index.json']);
    expect(held.size).toBe(3);
    expect(new Map(held).get('archives/a/1.0.0.tgz')).toEqual({ size: 10, mtimeMs: 500, digest: '' });
  });

  it('changes as a Map does once changed: a deleted file is gone, a set one is there', () => {
    const held = new HeldInventory(new Map(), new Map([['archives/a', record]]));
    expect(held.delete('archives/a/1.0.0.tgz')).toBe(true);
    expect(held.has('archives/a/1.0.0.tgz')).toBe(false);
    held.set('archives/a/2.0.0.tgz', { size: 1 });
    expect([...held.keys()].sort()).toEqual(['archives/a/1.1.0.tgz', 'archives/a/2.0.0.tgz']);
    held.clear();
    expect(held.size).toBe(0);
    expect(held.has('archives/a/1.1.0.tgz')).toBe(false);
  });

  it('finds a file of a folder of many versions', () => {
    const many: (string | number)[] = [1];
    for (let i = 0; i < 500; i++) many.push(`${i}.0.0.tgz`, i, i, '');
    const held = new HeldInventory(new Map(), new Map([['archives/big', many]]));
    expect(held.get('archives/big/432.0.0.tgz')).toEqual({ size: 432, mtimeMs: 432, digest: '' });
    expect(held.has('archives/big/500.0.0.tgz')).toBe(false);
  });
});

describe('the inventory file', () => {
  it('keeps only well-formed records of folders under archives/, with plain file names', () => {
    const state = parseInventoryState(
      Buffer.from(
        JSON.stringify({
          formatVersion: 3,
          files: { 'index.json': [1, 2, 'd'], 'bad.json': 'x', 'short.json': [1, 2] },
          folders: {
            'archives/a': record,
            'archives/../..': record,
            templates: record,
            'archives/b': [1, '../../escape', 1, 1, ''],
            'archives/c': [1, 'x.tgz', 1],
            'archives/d': ['1', 'x.tgz', 1, 1, ''],
          },
        }),
      ),
    );
    expect(state).toEqual({ files: { 'index.json': [1, 2, 'd'] }, folders: { 'archives/a': record } });
  });

  it('reads an older release\'s format 2 (files only), and nothing from a file that is not an inventory', () => {
    expect(parseInventoryState(Buffer.from(JSON.stringify({ formatVersion: 2, files: { 'archives/a/1.0.0.tgz': [1, 2, ''] } })))).toEqual({ files: { 'archives/a/1.0.0.tgz': [1, 2, ''] }, folders: {} });
    expect(parseInventoryState(Buffer.from('{"formatVersion":4,"files":{}}'))).toBeUndefined();
    expect(parseInventoryState(Buffer.from('not json'))).toBeUndefined();
    expect(parseInventoryState(undefined)).toBeUndefined();
  });

  it('naming files outside the output does not stop a build or reach outside it', async () => {
    const outDir = await tempDir();
    const output = new FolderOutput(outDir);
    await output.put({ name: 'archives/a/1.0.0.tgz', data: Buffer.from('archive'), contentType: 'application/gzip', cacheControl: 'public' });
    await output.commit();
    const written = JSON.parse(await readFile(path.join(outDir, BUILD_STATE_FILE), 'utf8')) as { formatVersion: number; folders: Record<string, FolderRecord> };
    expect(written.formatVersion).toBe(3);
    expect(Object.keys(written.folders)).toEqual(['archives/a']);
    await output.close();

    await writeFile(
      path.join(outDir, BUILD_STATE_FILE),
      JSON.stringify({ formatVersion: 3, files: { '../../etc/passwd': [1, 2, 'x'], '/etc/hosts': [1, 2, 'x'] }, folders: { ...written.folders, 'archives/..': [1, 'x', 1, 1, ''] } }),
    );
    const again = new FolderOutput(outDir);
    const held = await again.inventory();
    expect([...held.keys()]).toEqual(['archives/a/1.0.0.tgz']);
    await again.commit();
    const rewritten = JSON.parse(await readFile(path.join(outDir, BUILD_STATE_FILE), 'utf8')) as { files: Record<string, unknown>; folders: Record<string, unknown> };
    expect(rewritten.files).toEqual({});
    expect(Object.keys(rewritten.folders)).toEqual(['archives/a']);
    await again.close();
  });

  it('every way of reading or writing a file refuses a name that is not plain segments, and keeps the others inside the output', async () => {
    const outDir = await tempDir();
    // Given as a relative path with a trailing separator, as a command line may give it.
    const output = new FolderOutput(`${path.relative(process.cwd(), outDir)}${path.sep}`);
    const file = (name: string) => ({ name, data: Buffer.from(name), contentType: 'application/json', cacheControl: 'public' });
    for (const name of ['', '.', '..', '../escaped.json', 'templates/../../escaped.json', 'templates//a.json', 'templates/', '/tmp/escaped.json', './a.json', 'templates/./a.json', 'templates/..']) {
      await expect(output.put(file(name)), JSON.stringify(name)).rejects.toThrow('not a registry file name');
      await expect(output.read(name), JSON.stringify(name)).rejects.toThrow('not a registry file name');
    }
    // Dots inside a segment are part of a name.
    for (const name of ['templates/..a.json', 'templates/a..json', '.well-known/a.json']) {
      await output.put(file(name));
      expect((await output.read(name))?.toString(), name).toBe(name);
      expect(await readFile(path.join(outDir, ...name.split('/')), 'utf8')).toBe(name);
    }
    expect(await output.read('templates/absent.json')).toBeUndefined();
    await output.close();
  });
});
