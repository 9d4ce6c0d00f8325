import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, cp, mkdir, readdir, readFile, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

import { computeIntegrity, FIXED_MTIME, packTemplate } from '../../src/pack/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

const run = promisify(execFile);
const EXAMPLE = path.resolve('examples/templates/node-service');

/** The archive's entry paths as the system tar lists them, in archive order. */
async function listArchive(file: string): Promise<string[]> {
  const { stdout } = await run('tar', ['-tzf', file]);
  return stdout.split('\n').filter((line) => line !== '');
}

async function extract(file: string): Promise<string> {
  const into = await tempDir('tr-extract-');
  await run('tar', ['-xzf', file, '-C', into]);
  return into;
}

/** Every file below `dir` with its bytes, for comparing two folders. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    result[path.relative(dir, file).split(path.sep).join('/')] = (await readFile(file)).toString('base64');
  }
  return result;
}

describe('packTemplate', () => {
  it('packs the example template twice into byte-identical archives', async () => {
    const first = await packTemplate(EXAMPLE, { outDir: await tempDir() });
    const second = await packTemplate(EXAMPLE, { outDir: await tempDir() });
    expect(path.basename(first.file)).toBe('node-service-1.1.0.tgz');
    expect(path.isAbsolute(first.file)).toBe(true);
    expect(await readFile(first.file)).toEqual(await readFile(second.file));
    expect(first.sha256).toBe(second.sha256);
    expect(first.sha256).toBe(createHash('sha256').update(await readFile(first.file)).digest('hex'));
    expect(first.size).toBe((await stat(first.file)).size);
    expect(first.files).toContain('template/package.json.liquid');
  });

  it('gives the same sha256 for a copy whose files differ only in mtimes and non-execute mode bits', async () => {
    const original = await packTemplate(EXAMPLE, { outDir: await tempDir() });
    const copy = await tempDir('tr-copy-');
    await cp(EXAMPLE, copy, { recursive: true });
    await utimes(path.join(copy, 'README.md'), new Date('2001-02-03T04:05:06Z'), new Date('2001-02-03T04:05:06Z'));
    await utimes(path.join(copy, 'template/src/index.ts'), new Date(), new Date('2030-01-01T00:00:00Z'));
    await chmod(path.join(copy, 'CHANGELOG.md'), 0o600);
    await chmod(path.join(copy, 'template/Dockerfile'), 0o664);
    const repacked = await packTemplate(copy, { outDir: await tempDir() });
    expect(repacked.sha256).toBe(original.sha256);
    expect(repacked.integrity).toBe(original.integrity);
  });

  it('writes a gzip header with mtime 0 and the Unix OS byte', async () => {
    const result = await packTemplate(EXAMPLE, { outDir: await tempDir() });
    const header = (await readFile(result.file)).subarray(0, 10);
    expect([header[0], header[1]]).toEqual([0x1f, 0x8b]);
    expect(header.readUInt32LE(4)).toBe(0);
    expect(header[9]).toBe(0x03);
  });

  it('leaves out version control data, installed dependencies and workflows, but keeps other dot files', async () => {
    const dir = await writeTemplate({
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.git/objects/ab/cdef': 'x',
      'template/.git': 'gitdir: ../.git/modules/x\n',
      '.gitignore': 'node_modules\n',
      'node_modules/left-pad/index.js': 'module.exports = 1;\n',
      'template/node_modules/x/package.json': '{}',
      '.github/workflows/ci.yml': 'on: push\n',
      '.github/workflows/nested/release.yml': 'on: push\n',
      '.github/other.yml': 'x: 1\n',
      'template/.github/workflows/ci.yml': 'on: push\n',
    });
    await mkdir(path.join(dir, 'empty/inner'), { recursive: true });
    const result = await packTemplate(dir, { outDir: await tempDir() });
    const listed = await listArchive(result.file);
    expect(listed).toEqual(result.files);
    expect(listed.filter((entry) => /(^|\/)(\.git|node_modules)(\/|$)/.test(entry))).toEqual([]);
    expect(listed.filter((entry) => entry.startsWith('.github/workflows'))).toEqual([]);
    expect(listed).toContain('.github/other.yml');
    expect(listed).toContain('.gitignore');
    // Only the root .github/workflows is excluded.
    expect(listed).toContain('template/.github/workflows/ci.yml');
    // Regular files only: no folder entries, so the empty folder is gone.
    expect(listed.filter((entry) => entry.endsWith('/'))).toEqual([]);
    expect(listed.some((entry) => entry.startsWith('empty'))).toBe(false);
  });

  it('stamps the version into the packed template.json and leaves the source folder unchanged', async () => {
    const dir = await writeTemplate();
    const before = await snapshot(dir);
    const sourceManifest = await readFile(path.join(dir, 'template.json'), 'utf8');
    const result = await packTemplate(dir, { version: '2.3.4', outDir: await tempDir() });
    expect(path.basename(result.file)).toBe('demo-template-2.3.4.tgz');
    expect(result.manifest.version).toBe('2.3.4');

    const extracted = await extract(result.file);
    const packed = await readFile(path.join(extracted, 'template.json'), 'utf8');
    expect(packed).toBe(`${JSON.stringify({ ...validManifest, version: '2.3.4' }, null, 2)}\n`);
    // Key order kept: version stays where it was.
    expect(Object.keys(JSON.parse(packed))).toEqual(Object.keys(validManifest));
    expect(JSON.parse(packed)).toEqual(result.manifest);
    // Everything else is packed as is, at the archive root.
    const files = await snapshot(extracted);
    const { 'template.json': _packed, ...rest } = files;
    const { 'template.json': _source, ...sourceRest } = before;
    expect(rest).toEqual(sourceRest);

    expect(await readFile(path.join(dir, 'template.json'), 'utf8')).toBe(sourceManifest);
    expect(await snapshot(dir)).toEqual(before);
  });

  it('uses the manifest version by default', async () => {
    const result = await packTemplate(await writeTemplate(), { outDir: await tempDir() });
    expect(path.basename(result.file)).toBe('demo-template-1.0.0.tgz');
    expect(result.manifest.version).toBe('1.0.0');
  });

  it('excludes files and whole folders matched by exclude globs', async () => {
    const dir = await writeTemplate({
      'notes.tmp': 'x',
      'template/src/a.tmp': 'x',
      'template/src/keep.ts': 'x',
      'drafts/one.md': 'x',
      'drafts/deep/two.md': 'x',
      'template/fixtures/big.bin': 'x',
    });
    const result = await packTemplate(dir, { outDir: await tempDir(), exclude: ['**/*.tmp', 'drafts', 'template/fixtures/**'] });
    const listed = await listArchive(result.file);
    expect(listed).toContain('template/src/keep.ts');
    expect(listed.filter((entry) => entry.endsWith('.tmp'))).toEqual([]);
    expect(listed.filter((entry) => entry.startsWith('drafts') || entry.startsWith('template/fixtures'))).toEqual([]);
  });

  it('never excludes template.json, even when a glob matches it', async () => {
    const result = await packTemplate(await writeTemplate(), { outDir: await tempDir(), exclude: ['*.json'] });
    expect(result.files).toContain('template.json');
    expect(result.files).not.toContain('template.vars.json');
  });

  it('leaves its own archive out when the output folder is inside the template', async () => {
    const dir = await writeTemplate();
    const first = await packTemplate(dir, { outDir: path.join(dir, 'dist') });
    const second = await packTemplate(dir, { outDir: path.join(dir, 'dist') });
    expect(second.files).not.toContain('dist/demo-template-1.0.0.tgz');
    expect(second.sha256).toBe(first.sha256);
    expect(await readdir(path.join(dir, 'dist'))).toEqual(['demo-template-1.0.0.tgz']);
  });

  it('creates the output folder when it does not exist', async () => {
    const outDir = path.join(await tempDir(), 'a', 'b');
    const result = await packTemplate(await writeTemplate(), { outDir });
    expect(result.file).toBe(path.join(outDir, 'demo-template-1.0.0.tgz'));
    expect((await stat(result.file)).isFile()).toBe(true);
  });

  it('refuses a symbolic link that points outside the template, naming the link', async () => {
    const outside = await tempDir('tr-outside-');
    await writeFile(path.join(outside, 'secret.txt'), 'secret\n');
    const dir = await writeTemplate();
    await symlink(path.join(outside, 'secret.txt'), path.join(dir, 'template/leak.txt'));
    const outDir = await tempDir();
    await expect(packTemplate(dir, { outDir })).rejects.toThrow(/symbolic link template\/leak\.txt points outside/);
    expect(await readdir(outDir)).toEqual([]);
  });

  it('refuses a symbolic link to a folder outside the template', async () => {
    const outside = await tempDir('tr-outside-');
    const dir = await writeTemplate();
    await symlink(outside, path.join(dir, 'shared'));
    await expect(packTemplate(dir, { outDir: await tempDir() })).rejects.toThrow(/symbolic link shared points outside/);
  });

  it('packs a symbolic link to a file inside as a regular file with the target content', async () => {
    const dir = await writeTemplate({ 'template/real.txt': 'real content\n' });
    await symlink('real.txt', path.join(dir, 'template/alias.txt'));
    await symlink('template', path.join(dir, 'linked-folder'));
    const result = await packTemplate(dir, { outDir: await tempDir() });
    const { stdout } = await run('tar', ['-tvzf', result.file]);
    const aliasLine = stdout.split('\n').find((line) => line.endsWith('template/alias.txt'));
    expect(aliasLine).toMatch(/^-/);
    expect(result.files).toContain('linked-folder/real.txt');
    const extracted = await extract(result.file);
    expect(await readFile(path.join(extracted, 'template/alias.txt'), 'utf8')).toBe('real content\n');
    expect(await readFile(path.join(extracted, 'linked-folder/alias.txt'), 'utf8')).toBe('real content\n');
  });

  it('refuses a symbolic link that leads back to a folder containing it', async () => {
    const dir = await writeTemplate();
    await symlink('..', path.join(dir, 'template/loop'));
    await expect(packTemplate(dir, { outDir: await tempDir() })).rejects.toThrow(/template\/loop/);
  });

  it('refuses special files such as fifos', async () => {
    const dir = await writeTemplate();
    await run('mkfifo', [path.join(dir, 'template/pipe')]);
    await expect(packTemplate(dir, { outDir: await tempDir() })).rejects.toThrow(/template\/pipe is not a regular file/);
  });

  it('refuses a bad version', async () => {
    const dir = await writeTemplate();
    await expect(packTemplate(dir, { version: '1.2', outDir: await tempDir() })).rejects.toThrow(
      'version must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "1.2")',
    );
    await expect(packTemplate(dir, { version: 'v1.2.3', outDir: await tempDir() })).rejects.toThrow(/MAJOR\.MINOR\.PATCH/);
    // Strict SemVer: one spelling per version, numbers JavaScript holds exactly.
    for (const version of ['01.2.3', '1.02.3', '1.2.03', '1.2.1234567890123456']) {
      await expect(packTemplate(dir, { version, outDir: await tempDir() })).rejects.toThrow(`version must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "${version}")`);
    }
    await expect(packTemplate(await writeTemplate({ 'template.json': { ...validManifest, version: '01.0.0' } }), { outDir: await tempDir() })).rejects.toThrow('(got "01.0.0")');
    const badManifest = await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } });
    await expect(packTemplate(badManifest, { outDir: await tempDir() })).rejects.toThrow('(got "1.0")');
  });

  it('names template.json when it is missing or not valid JSON', async () => {
    const missing = await writeTemplate({ 'template.json': null });
    await expect(packTemplate(missing, { outDir: await tempDir() })).rejects.toThrow(/template\.json not found/);
    const broken = await writeTemplate({ 'template.json': '{ "name": ' });
    await expect(packTemplate(broken, { outDir: await tempDir() })).rejects.toThrow(/template\.json .*not valid JSON/);
  });

  it('reports an integrity of sha512- and the base64 SHA-512 of the archive bytes', async () => {
    const result = await packTemplate(EXAMPLE, { outDir: await tempDir() });
    const bytes = await readFile(result.file);
    expect(result.integrity).toBe(`sha512-${createHash('sha512').update(bytes).digest('base64')}`);
    expect(await computeIntegrity(result.file)).toEqual({ sha256: result.sha256, integrity: result.integrity, size: bytes.length });
  });

  it('lists archive entries in sorted byte order', async () => {
    const dir = await writeTemplate({ 'B.md': 'x', 'a.md': 'x', '_x/y': 'x', 'template/Z.txt': 'x', 'template-extra/a': 'x' });
    const result = await packTemplate(dir, { outDir: await tempDir() });
    const listed = await listArchive(result.file);
    const sorted = [...listed].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(listed).toEqual(sorted);
    expect(result.files).toEqual(listed);
  });

  it('keeps the execute bit as 0755, writes 0644 otherwise, with the fixed mtime and no owner', async () => {
    const dir = await writeTemplate({ 'template/run.sh': '#!/bin/sh\necho hi\n', 'template/group-writable.txt': 'x' });
    await chmod(path.join(dir, 'template/run.sh'), 0o744);
    await chmod(path.join(dir, 'template/group-writable.txt'), 0o666);
    const result = await packTemplate(dir, { outDir: await tempDir() });
    const { stdout } = await run('tar', ['-tvzf', result.file], { env: { ...process.env, TZ: 'UTC', LC_ALL: 'C' } });
    const lines = stdout.split('\n').filter((line) => line !== '');
    const line = (name: string): string => lines.find((l) => l.endsWith(` ${name}`)) ?? '';
    expect(line('template/run.sh')).toMatch(/^-rwxr-xr-x /);
    expect(line('template/group-writable.txt')).toMatch(/^-rw-r--r-- /);
    expect(line('README.md')).toMatch(/^-rw-r--r-- /);
    for (const l of lines) {
      // GNU tar shows the owner as "0/0" (or an empty name); bsdtar as "0 0".
      const owner = l.split(/\s+/)[1];
      expect(owner === '0/0' || owner === '/' || owner === '0').toBe(true);
      expect(l).toMatch(/1985-10-26 08:15|Oct 26\s+1985/);
    }
    expect(FIXED_MTIME.toISOString()).toBe('1985-10-26T08:15:00.000Z');
  });
});
