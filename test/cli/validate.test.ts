import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/index.js';
import { validManifest, writeTemplate } from '../helpers/fixtures.js';

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('template-registry validate', () => {
  it('exits 0 for a valid template', async () => {
    const result = await run(['validate', await writeTemplate()]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/valid/);
  });

  it('exits 1 and prints one line per error for an invalid template', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, version: '1.0', description: 'short' },
      'CHANGELOG.md': null,
    });
    const result = await run(['validate', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('template.json /version: must be MAJOR.MINOR.PATCH (got "1.0")');
    expect(result.stderr).toContain('template.json /description: must be at least 10 characters long');
    expect(result.stderr).toContain('CHANGELOG.md: required file is missing');
  });

  it('prints the result object with --json', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, category: 'cli' } });
    const result = await run(['validate', dir, '--json']);
    expect(result.code).toBe(1);
    const parsed = JSON.parse(result.stdout);
    expect(parsed.valid).toBe(false);
    expect(parsed.errors).toContainEqual(expect.objectContaining({ file: 'template.json', pointer: '/category', code: 'ENUM' }));
  });

  it('exits 2 on a usage error', async () => {
    expect((await run(['validate', '--no-such-flag'])).code).toBe(2);
    expect((await run(['no-such-command'])).code).toBe(2);
  });

  it('runs as the installed bin', async () => {
    const bin = path.resolve('bin/template-registry.js');
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'validate', 'examples/templates/node-service']);
    expect(stdout).toMatch(/valid/);
  });
});
