/**
 * Colour on a terminal, none in pipes: NO_COLOR and --no-color turn it off, FORCE_COLOR on, and a
 * colour never changes what the text says.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/index.js';
import { colourEnabled } from '../../src/cli/style.js';
import type { TemplateEntry } from '../../src/core/schema-types.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { templateEntry } from '../helpers/builders.js';

// eslint-disable-next-line no-control-regex
const ESCAPE = /\u001b\[/;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process on a fake terminal (or not), with exactly `env` as its environment for colour. */
async function onTerminal(tty: boolean, env: Record<string, string>, ...argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), isTTY: { stdout: tty, stderr: tty }, env });
  return { code, stdout, stderr };
}

describe('colourEnabled', () => {
  it('colours a terminal only, unless --no-color, NO_COLOR or TERM=dumb say otherwise, or FORCE_COLOR forces it', () => {
    expect(colourEnabled(true, {}, false)).toBe(true);
    expect(colourEnabled(false, {}, false)).toBe(false);
    expect(colourEnabled(undefined, {}, false)).toBe(false);
    expect(colourEnabled(true, {}, true)).toBe(false);
    expect(colourEnabled(true, { NO_COLOR: '1' }, false)).toBe(false);
    // NO_COLOR set but empty does not count (no-color.org).
    expect(colourEnabled(true, { NO_COLOR: '' }, false)).toBe(true);
    expect(colourEnabled(true, { TERM: 'dumb' }, false)).toBe(false);
    expect(colourEnabled(false, { FORCE_COLOR: '1' }, false)).toBe(true);
    expect(colourEnabled(true, { FORCE_COLOR: '0' }, false)).toBe(false);
    expect(colourEnabled(true, { FORCE_COLOR: 'false' }, false)).toBe(false);
    // As in Node, FORCE_COLOR wins over NO_COLOR; --no-color wins over both.
    expect(colourEnabled(false, { FORCE_COLOR: '1', NO_COLOR: '1' }, false)).toBe(true);
    expect(colourEnabled(true, { FORCE_COLOR: '1' }, true)).toBe(false);
  });
});

describe('the CLI on a terminal', () => {
  let saved: string | undefined;
  let server: FolderServer | undefined;

  beforeEach(async () => {
    saved = process.env.TEMPLATE_REGISTRY_CACHE;
    process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-colour-cache-');
  });

  afterEach(async () => {
    if (saved === undefined) delete process.env.TEMPLATE_REGISTRY_CACHE;
    else process.env.TEMPLATE_REGISTRY_CACHE = saved;
    await server?.close();
    server = undefined;
  });

  async function registry(): Promise<string> {
    const dir = await tempDir('tr-colour-registry-');
    const entry = (id: string, stability: TemplateEntry['stability']): TemplateEntry => templateEntry(id, { stability, downloadUrl: `archives/${id}.tgz` });
    await writeFile(path.join(dir, 'registry.json'), JSON.stringify({ templates: [entry('alpha', 'stable'), entry('omega', 'deprecated')], categories: [], tags: [], lastUpdated: '2026-01-01T00:00:00.000Z' }));
    server = await serveFolder(dir);
    return server.url;
  }

  it('colours list, lint and validate on a terminal; the text is the same as without', async () => {
    const url = await registry();
    const coloured = await onTerminal(true, {}, 'list', '--registry', url);
    expect(coloured.stdout).toMatch(ESCAPE);
    const plain = await onTerminal(false, {}, 'list', '--registry', url);
    expect(plain.stdout).not.toMatch(ESCAPE);
    expect(stripVTControlCharacters(coloured.stdout)).toBe(plain.stdout);

    const broken = await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } });
    const validate = await onTerminal(true, {}, 'validate', broken);
    expect(validate.code).toBe(1);
    expect(validate.stderr).toMatch(ESCAPE);
    expect(stripVTControlCharacters(validate.stderr)).toBe((await onTerminal(false, {}, 'validate', broken)).stderr);

    const lint = await onTerminal(true, {}, 'lint', broken);
    expect(lint.stdout).toMatch(ESCAPE);
    expect(stripVTControlCharacters(lint.stdout)).toBe((await onTerminal(false, {}, 'lint', broken)).stdout);
  });

  it('has no colour with NO_COLOR, with --no-color before or after the command, or through a pipe', async () => {
    const url = await registry();
    const broken = await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } });
    const runs = [
      await onTerminal(true, { NO_COLOR: '1' }, 'list', '--registry', url),
      await onTerminal(true, {}, 'list', '--registry', url, '--no-color'),
      await onTerminal(true, {}, '--no-color', 'list', '--registry', url),
      await onTerminal(true, { NO_COLOR: '1' }, 'validate', broken),
      await onTerminal(true, {}, 'lint', broken, '--no-color'),
      await onTerminal(false, {}, 'check-compat', 'omega', '--registry', url),
    ];
    for (const run of runs) {
      expect(run.stdout + run.stderr).not.toMatch(ESCAPE);
      expect(run.stdout + run.stderr).not.toMatch(/unknown option/);
    }
    // FORCE_COLOR colours a pipe (CI logs).
    expect((await onTerminal(false, { FORCE_COLOR: '1' }, 'list', '--registry', url)).stdout).toMatch(ESCAPE);
  });

  it('prints no colour in JSON, even on a terminal', async () => {
    const url = await registry();
    const run = await onTerminal(true, { FORCE_COLOR: '1' }, 'list', '--registry', url, '--json');
    expect(run.stdout).not.toMatch(ESCAPE);
    expect(JSON.parse(run.stdout)).toHaveLength(2);
  });
});

describe('the installed bin through a pipe', () => {
  it('writes no escape sequence to a pipe', async () => {
    const bin = path.resolve('bin/template-registry.js');
    const broken = await writeTemplate({ 'template.json': { ...validManifest, version: '1.0' } });
    const env = { ...process.env };
    delete env.FORCE_COLOR;
    delete env.NO_COLOR;
    for (const command of ['validate', 'lint']) {
      const result = await promisify(execFile)(process.execPath, [bin, command, broken], { env }).then(
        (ok) => ({ ...ok, code: 0 }),
        (error: { stdout: string; stderr: string; code: number }) => error,
      );
      expect(result.code).toBe(1);
      expect(`${result.stdout}${result.stderr}`).toMatch(/error/);
      expect(`${result.stdout}${result.stderr}`).not.toMatch(ESCAPE);
    }
  });
});
