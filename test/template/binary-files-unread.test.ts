/**
 * Validate and lint tell a binary file (`text-files.ts`: a NUL in its first 8 KiB) by its head and
 * never read its bulk: a template of large binary assets is checked (by the CLI, and by the server
 * on every upload) without reading those assets whole.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { lintTemplate } from '../../src/template/lint.js';
import { validateTemplate } from '../../src/template/validate.js';
import { writeTemplate } from '../helpers/fixtures.js';

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, readFile: vi.fn(actual.readFile) };
});

describe('binary content files', () => {
  it('are told binary by their head: lint and validate never read them whole, and see the same template', async () => {
    // Binary by its head, with Liquid and a variable no question defines in its bulk (never rendered, so no finding).
    const binary = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00]), Buffer.alloc(64 * 1024, 1), Buffer.from('{{ undefinedVariable }}')]);
    // Latin-1 text (not UTF-8, not binary) with a Liquid marker: still read, still warned.
    const latin1 = Buffer.from('caf\xe9 {{ projectName }}\n', 'latin1');
    const dir = await writeTemplate({ 'template/assets/logo.png': binary, 'template/notes.txt': latin1 });
    const mocked = vi.mocked(readFile);
    mocked.mockClear();

    const validation = await validateTemplate(dir);
    const lint = await lintTemplate(dir);

    const read = mocked.mock.calls.map(([file]) => (typeof file === 'string' ? path.relative(dir, file) : ''));
    expect(read).not.toContain(path.join('template', 'assets', 'logo.png'));
    expect(read).toContain(path.join('template', 'notes.txt'));
    expect(validation.valid).toBe(true);
    expect(lint.findings.filter((f) => f.file.includes('logo.png'))).toEqual([]);
    expect(lint.findings.filter((f) => f.file.includes('notes.txt')).length).toBeGreaterThan(0);
  });
});
