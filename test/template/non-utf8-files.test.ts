import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { generateProject, lintTemplate, testTemplate, validateTemplate } from '../../src/template/index.js';
import { tempDir, writeTemplate } from '../helpers/fixtures.js';

// "café = {{ projectName }}" in Latin-1: é is the single byte 0xE9, not valid UTF-8.
const latin1 = Buffer.from('# caf\xe9 = {{ projectName }}\nna\xefve\n', 'latin1');
// "テスト {% raw" in Shift-JIS: every character two bytes, none of them valid UTF-8 here.
const shiftJis = Buffer.from([0x83, 0x65, 0x83, 0x58, 0x83, 0x67, 0x0a, 0x83, 0x65, 0x83, 0x58, 0x83, 0x67, 0x0a]);

describe('files that are not UTF-8', () => {
  it('are copied byte for byte, their names still rendered, while UTF-8 files are rendered', async () => {
    const dir = await writeTemplate({
      'template/legacy-{{ projectName }}.txt': latin1,
      'template/sjis.txt': shiftJis,
      'template/utf8.txt': 'caf\u00e9 {{ projectName }}\n',
      'template/bom.txt': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{{ projectName }}\n')]),
    });
    const out = path.join(await tempDir(), 'p');
    await generateProject(dir, out, { projectName: 'demo' });
    expect(await readFile(path.join(out, 'legacy-demo.txt'))).toEqual(latin1);
    expect(await readFile(path.join(out, 'sjis.txt'))).toEqual(shiftJis);
    expect(await readFile(path.join(out, 'utf8.txt'), 'utf8')).toBe('caf\u00e9 demo\n');
    // A byte-order mark stays where it was.
    expect(await readFile(path.join(out, 'bom.txt'))).toEqual(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('demo\n')]));
  });

  it('are not parsed by validate, and lint warns when one holds Liquid that will not be rendered', async () => {
    const dir = await writeTemplate({
      'template/legacy.txt': latin1,
      'template/broken-if-parsed.txt': Buffer.from('{% if \xe9 %}\n', 'latin1'),
      'template/sjis.txt': shiftJis,
    });
    expect((await validateTemplate(dir)).errors).toEqual([]);
    const findings = (await lintTemplate(dir)).findings.filter((f) => f.rule === 'non-utf8-liquid');
    expect(findings.map((f) => [f.file, f.line, f.severity])).toEqual([
      ['template/broken-if-parsed.txt', 1, 'warning'],
      ['template/legacy.txt', 1, 'warning'],
    ]);
    expect(findings[0]?.message).toMatch(/not valid UTF-8.*copied byte for byte.*verbatim/);
  });

  it('are not warned about when the manifest lists them as verbatim', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', features: ['api', 'testing'], verbatim: ['legacy.txt'] },
      'template/legacy.txt': latin1,
    });
    expect((await lintTemplate(dir)).findings.filter((f) => f.rule === 'non-utf8-liquid')).toEqual([]);
  });

  it('pass test unchanged', async () => {
    const dir = await writeTemplate({ 'template/legacy.txt': latin1 });
    const report = await testTemplate(dir, { keep: true });
    expect(report.passed).toBe(true);
    const projectDir = report.sets[0]?.projectDir ?? '';
    try {
      expect(await readFile(path.join(projectDir, 'legacy.txt'))).toEqual(latin1);
    } finally {
      await rm(path.dirname(projectDir), { recursive: true, force: true });
    }
  });
});
