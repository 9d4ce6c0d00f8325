import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';

const EXAMPLE = path.resolve('examples/templates/node-service');

/** Runs `pack` in a program built the way program.ts builds it (with the root `--version` flag). */
async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return cli(...argv);
}

describe('template-registry pack', () => {
  it('packs a folder and prints the archive path, size, sha256 and integrity', async () => {
    const outDir = await tempDir();
    const result = await run('pack', EXAMPLE, '--out-dir', outDir);
    expect(result.code).toBe(0);
    const file = path.join(outDir, 'node-service-1.1.0.tgz');
    const bytes = await readFile(file);
    expect(result.stdout).toContain(file);
    expect(result.stdout).toContain(`${bytes.length} bytes`);
    expect(result.stdout).toMatch(/sha256: +[0-9a-f]{64}/);
    expect(result.stdout).toMatch(/integrity: +sha512-[A-Za-z0-9+/]+=*/);
    expect(result.stderr).toBe('');
  });

  it('stamps --version, honours --exclude and prints the result with --json', async () => {
    const dir = await writeTemplate({ 'notes/a.md': 'x', 'draft.txt': 'x' });
    const outDir = await tempDir();
    const result = await run('pack', dir, '--version', '3.2.1', '--out-dir', outDir, '--exclude', 'notes', '--exclude', '*.txt', '--json');
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.file).toBe(path.join(outDir, 'demo-template-3.2.1.tgz'));
    expect(parsed.manifest.version).toBe('3.2.1');
    expect(parsed.files).toContain('template.json');
    expect(parsed.files).not.toContain('draft.txt');
    expect(parsed.files.some((f: string) => f.startsWith('notes'))).toBe(false);
    expect(parsed.integrity).toMatch(/^sha512-/);
    expect(parsed.size).toBe((await readFile(parsed.file)).length);
  });

  it('names every file it leaves out and why, on stderr and in --json', async () => {
    const dir = await writeTemplate({ 'template/.env': 'SECRET=1', 'template/.npmrc': '//registry.npmjs.org/:_authToken=secret', '.gitignore': 'dist/\n', 'dist/app.js': 'x' });
    const plain = await run('pack', dir, '--out-dir', await tempDir());
    expect(plain.code).toBe(0);
    expect(plain.stderr.split('\n').filter((line) => line !== '')).toEqual([
      'left out: dist/ (ignored by .gitignore)',
      'left out: template/.env (an .env file; packed only when the manifest\'s "files" rules or "include" name it)',
      'left out: template/.npmrc (may hold credentials; list it in the manifest\'s "include" to pack it)',
    ]);
    const json = await run('pack', dir, '--out-dir', await tempDir(), '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).leftOut).toEqual([
      { path: 'dist/', reason: 'ignored by .gitignore' },
      { path: 'template/.env', reason: expect.stringContaining('.env file') },
      { path: 'template/.npmrc', reason: expect.stringContaining('credentials') },
    ]);
    expect(json.stderr).toBe(plain.stderr);
  });

  it('exits 1 with the message and no stack trace when the template cannot be packed', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } });
    const result = await run('pack', dir, '--out-dir', await tempDir());
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: version must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "1.0")\n');

    const missing = await run('pack', path.join(await tempDir(), 'nope'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: template folder .* does not exist\n$/);
  });

  it('exits 2 on a usage error', async () => {
    const dir = await writeTemplate();
    const badVersion = await run('pack', dir, '--version', '1.2', '--out-dir', await tempDir());
    expect(badVersion.code).toBe(2);
    expect(badVersion.stderr).toContain('--version must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "1.2")');
    const leadingZero = await run('pack', dir, '--version', '1.02.0', '--out-dir', await tempDir());
    expect(leadingZero.code).toBe(2);
    expect(leadingZero.stderr).toContain('--version must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "1.02.0")');
    expect((await run('pack', dir, '--no-such-flag')).code).toBe(2);
    expect((await run('pack', dir, '--version')).code).toBe(2);
  });

  it('still prints the CLI version for the program-level --version', async () => {
    const result = await run('--version');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('0.1.0\n');
  });

  it('gives the same archive as the system tar sees it', async () => {
    const outDir = await tempDir();
    await run('pack', EXAMPLE, '--out-dir', outDir);
    const { stdout } = await promisify(execFile)('tar', ['-tzf', path.join(outDir, 'node-service-1.1.0.tgz')]);
    expect(stdout.split('\n')).toContain('template/package.json.liquid');
  });
});
