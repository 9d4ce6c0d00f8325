/**
 * `create` parses every text file and every name of a template's content folder, Liquid or not,
 * under Liquid's parse limit (DEFAULT_RENDER_LIMITS.parseLimit, per text). Validation (and so lint,
 * publish and the server's upload check) parses the same under the same limit: a template it takes
 * can be generated, and one generation would stop on is refused, naming the file.
 */
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { DEFAULT_RENDER_LIMITS } from '../../src/template/expression.js';
import { generateProject, validateTemplate } from '../../src/template/index.js';
import { tempDir, writeTemplate } from '../helpers/fixtures.js';

const LIMIT = DEFAULT_RENDER_LIMITS.parseLimit;

async function generates(dir: string): Promise<true | string> {
  try {
    await generateProject(dir, path.join(await tempDir(), 'out'), { projectName: 'demo' });
    return true;
  } catch (error) {
    return String(error);
  }
}

describe('the Liquid parse limit of content files', () => {
  it('refuses a text file over the limit, even without any Liquid in it, naming the file', async () => {
    const dir = await writeTemplate({ 'template/data/big.txt': 'a'.repeat(LIMIT + 1) });
    expect((await validateTemplate(dir)).errors).toEqual([
      {
        file: 'template/data/big.txt',
        pointer: '',
        code: 'PARSE_LIMIT',
        line: 1,
        column: 1,
        message: expect.stringContaining(`its content is ${LIMIT + 1} characters, more than Liquid's parse limit of ${LIMIT}`),
      },
    ]);
    expect(await generates(dir)).toMatch(/data\/big\.txt.*parse length limit exceeded/);
  });

  it('takes a text exactly at the limit, and create generates it', async () => {
    const dir = await writeTemplate({ 'template/big.txt': `{{ projectName }}${'a'.repeat(LIMIT - '{{ projectName }}'.length)}` });
    expect((await validateTemplate(dir)).errors).toEqual([]);
    expect(await generates(dir)).toBe(true);
  });

  it('reports a Liquid file over the limit once, as over the limit', async () => {
    const dir = await writeTemplate({ 'template/big.txt': `{{ projectName }}${'x'.repeat(LIMIT)}`, 'template/small.txt': '{{ projectName }}' });
    expect((await validateTemplate(dir)).errors.map((e) => `${e.code} ${e.file}`)).toEqual(['PARSE_LIMIT template/big.txt']);
  });

  it('leaves binary files alone: create copies them without parsing', async () => {
    const bytes = Buffer.alloc(LIMIT + 10, 0x61);
    bytes[0] = 0;
    const dir = await writeTemplate({ 'template/blob.bin': bytes });
    expect((await validateTemplate(dir)).errors).toEqual([]);
    expect(await generates(dir)).toBe(true);
  });

  it('refuses a migration step field over the limit, naming the step file', async () => {
    const step = {
      id: 'big',
      description: 'a big file',
      fromVersion: '1.0.0',
      toVersion: '1.1.0',
      breaking: false,
      automatic: true,
      changes: [{ type: 'create', path: 'big.txt', content: 'x'.repeat(LIMIT + 1) }],
    };
    const dir = await writeTemplate({ 'migrations/1.0.0-to-1.1.0.json': step });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors.map((e) => [e.file, e.pointer, e.message])).toEqual([['migrations/1.0.0-to-1.1.0.json', '/changes/0/content', 'invalid Liquid: parse length limit exceeded']]);
  });
});
