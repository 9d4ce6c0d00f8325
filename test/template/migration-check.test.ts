import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { lintTemplate } from '../../src/template/lint.js';
import { validateTemplate, type TemplateValidationError } from '../../src/template/index.js';
import { writeTemplate } from '../helpers/fixtures.js';

function positionOf(text: string, needle: string): { line: number; column: number } {
  const index = text.indexOf(needle);
  if (index < 0) throw new Error(`${needle} not found`);
  const before = text.slice(0, index).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

function step(id: string, fromVersion: string, toVersion: string, changes: object[] = [{ type: 'create', path: `${id}.txt`, content: '{{ projectName }}\n' }]): object {
  return { id, description: `step ${id}`, fromVersion, toVersion, breaking: false, automatic: true, changes };
}

/** Validates a template with these migration step files; returns its errors and a reader of its files. */
async function validateSteps(steps: Record<string, object>): Promise<{ errors: TemplateValidationError[]; text: (file: string) => Promise<string> }> {
  const dir = await writeTemplate(Object.fromEntries(Object.entries(steps).map(([name, value]) => [`migrations/${name}`, value])));
  const { errors } = await validateTemplate(dir);
  return { errors, text: (file) => readFile(path.join(dir, file), 'utf8') };
}

describe('validate: migration steps', () => {
  it('accepts steps that all start at the oldest version, as docs/migrations.md recommends', async () => {
    const { errors } = await validateSteps({
      '1.0.0-to-1.1.0.json': step('a', '1.0.0', '1.1.0'),
      '1.0.0-to-1.2.0.json': step('b', '1.0.0', '1.2.0'),
      '1.0.0-to-2.0.0.json': step('c', '1.0.0', '2.0.0', [{ type: 'rename', path: 'a.txt', newPath: 'docs/{{ packageName }}.txt' }]),
    });
    expect(errors).toEqual([]);
  });

  it('reports Liquid errors and unknown filters in paths and contents, at their field', async () => {
    const { errors, text } = await validateSteps({
      'bad.json': step('bad', '1.0.0', '1.1.0', [
        { type: 'create', path: 'a.txt', content: '{% if projectName %}never closed' },
        { type: 'create', path: '{{ projectName | package_nme }}.txt' },
      ]),
    });
    const file = await text('migrations/bad.json');
    expect(errors).toEqual([
      expect.objectContaining({ file: 'migrations/bad.json', pointer: '/changes/0/content', code: 'LIQUID', ...positionOf(file, '"{% if'), message: expect.stringMatching(/^invalid Liquid: /) }),
      expect.objectContaining({
        file: 'migrations/bad.json',
        pointer: '/changes/1/path',
        code: 'LIQUID',
        ...positionOf(file, '"{{ projectName | package_nme'),
        message: expect.stringContaining('did you mean "package_name"?'),
      }),
    ]);
  });

  it('reports paths outside the project: climbing out, absolute, the project folder itself', async () => {
    const { errors } = await validateSteps({
      'out.json': step('out', '1.0.0', '1.1.0', [
        { type: 'create', path: '../{{ projectName }}.txt', content: 'x' },
        { type: 'delete', path: '/etc/hosts' },
        { type: 'rename', path: 'a.txt', newPath: 'C:\\Windows\\a.txt' },
        { type: 'delete', path: 'src/../..' },
        { type: 'delete', path: './' },
        { type: 'create', path: 'src/../ok.txt', content: 'x' },
      ]),
    });
    expect(errors.map((e) => [e.pointer, e.code, e.message])).toEqual([
      ['/changes/0/path', 'PATH_OUTSIDE_PROJECT', '"../{{ projectName }}.txt" climbs out of the project with ".."; write it relative to the project root, without leading ".."'],
      ['/changes/1/path', 'PATH_OUTSIDE_PROJECT', '"/etc/hosts" is absolute; write it relative to the project root, e.g. "src/app.ts"'],
      ['/changes/2/newPath', 'PATH_OUTSIDE_PROJECT', '"C:\\\\Windows\\\\a.txt" is absolute; write it relative to the project root, e.g. "src/app.ts"'],
      ['/changes/3/path', 'PATH_OUTSIDE_PROJECT', '"src/../.." climbs out of the project with ".."; write it relative to the project root, without leading ".."'],
      ['/changes/4/path', 'PATH_OUTSIDE_PROJECT', '"./" names the project folder itself; name a file inside it'],
    ]);
    expect(errors.every((e) => e.file === 'migrations/out.json' && e.line !== undefined && e.column !== undefined)).toBe(true);
  });

  it('reports a toVersion not above its fromVersion', async () => {
    const { errors, text } = await validateSteps({ 'back.json': step('back', '1.2.0', '1.1.0'), 'same.json': step('same', '1.0.0', '1.0.0') });
    expect(errors).toEqual([
      {
        file: 'migrations/back.json',
        pointer: '/toVersion',
        code: 'VERSION_ORDER',
        ...positionOf(await text('migrations/back.json'), '"1.1.0"'),
        message: 'must be greater than fromVersion (1.2.0); a step moves a project to a later version',
      },
      expect.objectContaining({ file: 'migrations/same.json', pointer: '/toVersion', code: 'VERSION_ORDER' }),
    ]);
  });

  it('reports two steps making the same move', async () => {
    const { errors, text } = await validateSteps({ 'a.json': step('a', '1.0.0', '1.1.0'), 'b.json': step('b', '1.0.0', '1.1.0') });
    expect(errors).toEqual([
      {
        file: 'migrations/b.json',
        pointer: '/toVersion',
        code: 'MIGRATION_OVERLAP',
        ...positionOf(await text('migrations/b.json'), '"1.1.0"'),
        message: 'migrates 1.0.0 -> 1.1.0, as migrations/a.json does: both would run for the same projects; merge their changes into one step, or correct this step\'s versions',
      },
    ]);
  });

  it('passes a chain of steps, each starting where the one before ends: the runner runs them hop after hop', async () => {
    const { errors } = await validateSteps({
      '1.0.0-to-1.1.0.json': step('first', '1.0.0', '1.1.0'),
      '1.1.0-to-1.2.0.json': step('chained', '1.1.0', '1.2.0'),
      '1.1.0-to-1.3.0.json': step('shared-start', '1.1.0', '1.3.0'),
    });
    expect(errors).toEqual([]);
  });

  it('reports a step the chain never reaches: after a gap, or jumped over by a longer step', async () => {
    const gap = await validateSteps({ '1.0.0-to-1.1.0.json': step('first', '1.0.0', '1.1.0'), '1.3.0-to-1.4.0.json': step('after-a-gap', '1.3.0', '1.4.0') });
    expect(gap.errors.map((e) => [e.file, e.pointer, e.code])).toEqual([['migrations/1.3.0-to-1.4.0.json', '/fromVersion', 'MIGRATION_UNREACHABLE']]);
    expect(gap.errors[0]).toMatchObject(positionOf(await gap.text('migrations/1.3.0-to-1.4.0.json'), '"1.3.0"'));
    expect(gap.errors[0]?.message).toBe(
      'is unreachable from 1.0.0: a project at 1.0.0 migrated to 1.4.0 or later stops at 1.1.0, before this step\'s fromVersion, and never runs this step ' +
        "(a run applies the steps whose fromVersion is at or before the version it has reached), so it ends at 1.4.0 without this step's changes; " +
        'start this step at 1.1.0 so the chain reaches it',
    );

    const jumped = await validateSteps({ 'long.json': step('long', '1.0.0', '3.0.0'), 'inside.json': step('inside', '2.0.0', '3.0.0') });
    expect(jumped.errors.map((e) => [e.file, e.code])).toEqual([['migrations/inside.json', 'MIGRATION_UNREACHABLE']]);
    expect(jumped.errors[0]?.message).toMatch(/runs migrations\/long\.json up to 3\.0\.0, past this step's fromVersion/);
    expect(jumped.errors[0]?.message).toMatch(/end migrations\/long\.json at 2\.0\.0 so the chain passes through this step, or start this step at 1\.0\.0$/);
  });

  it('lint reports the migration problems under migration-step, with their positions', async () => {
    const dir = await writeTemplate({
      'template.json': { name: 'demo-template', version: '1.0.0', description: 'A demo template used by the tests', category: 'backend', features: ['api', 'testing'] },
      'template/README.md': '# {{ projectName }} {{ description }} {{ features }} {{ packageName }}\n',
      'migrations/a.json': step('a', '1.0.0', '1.1.0', [{ type: 'delete', path: '../a' }]),
    });
    const { findings } = await lintTemplate(dir);
    expect(findings).toEqual([
      expect.objectContaining({ file: 'migrations/a.json', rule: 'migration-step', severity: 'error', pointer: '/changes/0/path', line: expect.any(Number), column: expect.any(Number) }),
    ]);
  });
});
