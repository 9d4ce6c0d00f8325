import { describe, expect, it, vi } from 'vitest';

import { applicableSteps, breakingWarning, runMigrations, type MigrationContext } from '../../src/migrate/index.js';
import { tempDir, writeTree } from '../helpers/fixtures.js';
import { context, read, snapshot, step } from './helpers.js';

async function project(tree: Record<string, string> = { 'a.txt': 'a\n' }): Promise<string> {
  const dir = await tempDir('tr-migrate-');
  await writeTree(dir, tree);
  return dir;
}

describe('which steps apply (spec rule 1)', () => {
  it('takes steps whose fromVersion <= current and toVersion > current, and no others', () => {
    const steps = [
      step('ends-at-current', '1.0.0', '1.1.0'),
      step('starts-at-current', '1.1.0', '1.2.0'),
      step('starts-after-current', '1.2.0', '1.3.0'),
      step('spans-current', '1.0.0', '2.0.0'),
      step('older', '0.9.0', '1.0.0'),
    ];
    const ids = applicableSteps(steps, { currentVersion: '1.1.0', templateId: 'demo' }).map((s) => s.id);
    expect(ids).toEqual(['starts-at-current', 'spans-current']);
  });

  it('takes steps of the project template and steps without a template id, not those of another template', () => {
    const steps = [
      step('mine', '1.0.0', '1.1.0', { templateId: 'demo' }),
      step('other', '1.0.0', '1.1.0', { templateId: 'other' }),
      step('any', '1.0.0', '1.1.0'),
    ];
    expect(applicableSteps(steps, { currentVersion: '1.0.0', templateId: 'demo' }).map((s) => s.id)).toEqual(['mine', 'any']);
  });

  it('compares versions numerically, segment by segment', () => {
    const steps = [step('a', '1.9.0', '1.10.0'), step('b', '1.2.0', '1.9.5')];
    expect(applicableSteps(steps, { currentVersion: '1.9.5', templateId: 'demo' }).map((s) => s.id)).toEqual(['a']);
  });

  it('runs the applicable steps in ascending toVersion order, ties in the given order', async () => {
    const dir = await project();
    const ran: string[] = [];
    const track = (id: string, to: string) => step(id, '1.0.0', to, { execute: () => (ran.push(id), { success: true, changes: [], warnings: [], errors: [] }) });
    const steps = [track('to-2.0', '2.0.0'), track('to-1.10', '1.10.0'), track('to-1.2-first', '1.2.0'), track('to-1.2-second', '1.2.0')];
    const result = await runMigrations(steps, context(dir));
    expect(ran).toEqual(['to-1.2-first', 'to-1.2-second', 'to-1.10', 'to-2.0']);
    expect(result.applied).toEqual(ran);
  });
});

describe('no applicable step (spec rule 2)', () => {
  it('succeeds with empty changes, warnings and errors', async () => {
    const dir = await project();
    const execute = vi.fn();
    const result = await runMigrations([step('old', '0.1.0', '1.0.0', { execute })], context(dir));
    expect(result).toEqual({ success: true, changes: [], warnings: [], errors: [], applied: [], skipped: [], plan: [] });
    expect(execute).not.toHaveBeenCalled();
  });

  it('succeeds with an empty list of steps, even for a project folder that does not exist', async () => {
    const result = await runMigrations([], context('/does/not/exist'));
    expect(result.success).toBe(true);
    expect(result.errors).toEqual([]);
  });
});

describe('breaking steps (spec rule 3)', () => {
  const steps = [
    step('one', '1.0.0', '1.1.0', { breaking: true, warnings: ['from one'] }),
    step('two', '1.0.0', '1.2.0'),
    step('three', '1.0.0', '2.0.0', { breaking: true }),
  ];

  it('adds, before the steps run, a warning with the count of breaking steps advising to review the guide', async () => {
    const result = await runMigrations(steps, context(await project()));
    expect(result.warnings).toEqual(['2 breaking migration steps: review the migration guide before applying', 'from one']);
  });

  it('says "step" for a single breaking step', async () => {
    const result = await runMigrations(steps.slice(0, 2), context(await project()));
    expect(result.warnings[0]).toBe('1 breaking migration step: review the migration guide before applying');
    expect(breakingWarning(3)).toBe('3 breaking migration steps: review the migration guide before applying');
  });

  it('adds no such warning in a dry run', async () => {
    const result = await runMigrations(steps, context(await project(), { dryRun: true }));
    expect(result.warnings).toEqual(['from one']);
  });

  it('adds no such warning when no applicable step is breaking', async () => {
    const result = await runMigrations([step('two', '1.0.0', '1.2.0')], context(await project()));
    expect(result.warnings).toEqual([]);
  });
});

describe('results (spec rule 4)', () => {
  it('concatenates the changes, warnings and errors of all steps in run order', async () => {
    const dir = await project({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const steps = [
      step('second', '1.0.0', '1.2.0', { changes: [{ type: 'delete', path: 'b.txt' }], warnings: ['w2'] }),
      step('first', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'A\n' }], warnings: ['w1a', 'w1b'] }),
    ];
    const result = await runMigrations(steps, context(dir));
    expect(result.success).toBe(true);
    expect(result.changes).toEqual([
      { type: 'update', path: 'a.txt', content: 'A\n' },
      { type: 'delete', path: 'b.txt' },
    ]);
    expect(result.warnings).toEqual(['w1a', 'w1b', 'w2']);
    expect(result.errors).toEqual([]);
    expect(result.applied).toEqual(['first', 'second']);
    expect(await snapshot(dir)).toEqual({ 'a.txt': 'A\n' });
  });

  it('stops at the first step that fails, with success false, its errors, and nothing written', async () => {
    const dir = await project();
    const later = vi.fn();
    const steps = [
      step('ok', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'changed\n' }], warnings: ['w-ok'] }),
      step('bad', '1.0.0', '1.2.0', { success: false, errors: ['config.yml is missing'], warnings: ['w-bad'] }),
      step('later', '1.0.0', '1.3.0', { execute: later }),
    ];
    const result = await runMigrations(steps, context(dir));
    expect(result.success).toBe(false);
    expect(result.errors).toEqual(['config.yml is missing']);
    expect(result.warnings).toEqual(['w-ok', 'w-bad']);
    expect(result.changes).toEqual([{ type: 'update', path: 'a.txt', content: 'changed\n' }]);
    expect(result.plan).toEqual([]);
    expect(later).not.toHaveBeenCalled();
    expect(await read(dir, 'a.txt')).toBe('a\n');
  });

  it('names the step when a failing step gives no error text', async () => {
    const result = await runMigrations([step('quiet', '1.0.0', '1.1.0', { success: false })], context(await project()));
    expect(result.errors).toEqual(['step quiet failed']);
  });

  it.each([
    ['throws', () => { throw new Error('boom'); }],
    ['rejects', () => Promise.reject(new Error('boom'))],
  ])('adds an error naming the step when a step %s, and runs no later step', async (_how, execute) => {
    const dir = await project();
    const later = vi.fn();
    const steps = [
      step('fine', '1.0.0', '1.1.0', { changes: [{ type: 'update', path: 'a.txt', content: 'x\n' }] }),
      step('explodes', '1.0.0', '1.2.0', { execute }),
      step('later', '1.0.0', '1.3.0', { execute: later }),
    ];
    const result = await runMigrations(steps, context(dir));
    expect(result.success).toBe(false);
    expect(result.errors).toEqual(['step explodes failed: boom']);
    expect(later).not.toHaveBeenCalled();
    expect(await read(dir, 'a.txt')).toBe('a\n');
  });

  it('fails, naming the step, when a step returns something that is not a result', async () => {
    const bad = step('odd', '1.0.0', '1.1.0', { execute: () => ({ ok: true }) as never });
    const result = await runMigrations([bad], context(await project()));
    expect(result.success).toBe(false);
    expect(result.errors[0]).toMatch(/^step odd returned an invalid result/);
  });

  it('fails, naming the step and the field, when a change breaks the file-change schema', async () => {
    const bad = step('odd', '1.0.0', '1.1.0', { changes: [{ type: 'rename', path: 'a.txt' }] });
    const result = await runMigrations([bad], context(await project()));
    expect(result.success).toBe(false);
    expect(result.errors[0]).toContain('step odd: change 1');
    expect(result.errors[0]).toContain('/newPath is required');
  });
});

describe('what a step sees', () => {
  it('gives a later step the project as planned by the earlier ones, while nothing is written yet', async () => {
    const dir = await project({ 'config.json': '{"v":1}\n', 'old.txt': 'old\n' });
    const seen: Record<string, unknown> = {};
    const steps = [
      step('first', '1.0.0', '1.1.0', {
        changes: [
          { type: 'update', path: 'config.json', content: '{"v":2}\n' },
          { type: 'create', path: 'src/new.ts', content: 'export {};\n' },
          { type: 'rename', path: 'old.txt', newPath: 'moved.txt' },
        ],
      }),
      step('second', '1.0.0', '1.2.0', {
        execute: async (ctx: MigrationContext) => {
          seen.config = await ctx.files.read('config.json');
          seen.created = await ctx.files.exists('src/new.ts');
          seen.oldExists = await ctx.files.exists('old.txt');
          seen.moved = await ctx.files.read('./moved.txt');
          seen.missing = await ctx.files.read('nope.txt');
          seen.onDisk = await read(dir, 'config.json');
          seen.context = { projectPath: ctx.projectPath, currentVersion: ctx.currentVersion, targetVersion: ctx.targetVersion, templateId: ctx.templateId, config: ctx.config, dryRun: ctx.dryRun };
          const config = JSON.parse((await ctx.files.read('config.json')) ?? '{}');
          return { success: true, changes: [{ type: 'update', path: 'config.json', content: JSON.stringify({ v: config.v + 1 }) + '\n' }], warnings: [], errors: [] };
        },
      }),
    ];
    const result = await runMigrations(steps, context(dir, { config: { answer: 42 } }));
    expect(result.errors).toEqual([]);
    expect(seen).toEqual({
      config: '{"v":2}\n',
      created: true,
      oldExists: false,
      moved: 'old\n',
      missing: undefined,
      onDisk: '{"v":1}\n',
      context: { projectPath: dir, currentVersion: '1.0.0', targetVersion: '2.0.0', templateId: 'demo', config: { answer: 42 }, dryRun: false },
    });
    expect(await snapshot(dir)).toEqual({ 'config.json': '{"v":3}\n', 'moved.txt': 'old\n', 'src/new.ts': 'export {};\n' });
  });

  it('rejects a read outside the project, failing the step with its id', async () => {
    const dir = await project();
    const peek = step('peek', '1.0.0', '1.1.0', {
      execute: async (ctx) => {
        await ctx.files.read('../secret');
        return { success: true, changes: [], warnings: [], errors: [] };
      },
    });
    const result = await runMigrations([peek], context(dir));
    expect(result.success).toBe(false);
    expect(result.errors[0]).toMatch(/^step peek failed: path "\.\.\/secret" is outside the project/);
  });
});

describe('chained hops', () => {
  it('runs the steps of each hop from the version the hop before reached, until none applies', async () => {
    const dir = await project();
    const seen: [string, string][] = [];
    const track = (id: string, from: string, to: string) =>
      step(id, from, to, { execute: (ctx) => (seen.push([id, ctx.currentVersion]), { success: true, changes: [], warnings: [], errors: [] }) });
    const steps = [track('two-to-three', '2.0.0', '3.0.0'), track('one-to-two', '1.0.0', '2.0.0'), track('one-to-one-five', '1.0.0', '1.5.0'), track('three-to-four', '3.0.0', '4.0.0')];
    const result = await runMigrations(steps, context(dir, { targetVersion: '4.0.0' }));
    expect(result.applied).toEqual(['one-to-one-five', 'one-to-two', 'two-to-three', 'three-to-four']);
    expect(seen).toEqual([
      ['one-to-one-five', '1.0.0'],
      ['one-to-two', '1.0.0'],
      ['two-to-three', '2.0.0'],
      ['three-to-four', '3.0.0'],
    ]);
    expect(result.reachedVersion).toBe('4.0.0');
  });

  it('stops where the chain stops: a later step after a gap does not run', async () => {
    const dir = await project();
    const result = await runMigrations([step('one-to-two', '1.0.0', '2.0.0'), step('after-gap', '2.5.0', '3.0.0')], context(dir, { targetVersion: '3.0.0' }));
    expect(result.applied).toEqual(['one-to-two']);
    expect(result.reachedVersion).toBe('2.0.0');
  });

  it('gives each step the changes of the hops before it', async () => {
    const dir = await project();
    const steps = [
      step('create', '1.0.0', '2.0.0', { changes: [{ type: 'create', path: 'notes.txt', content: 'one\n' }] }),
      step('append', '2.0.0', '3.0.0', {
        execute: async (ctx) => ({ success: true, changes: [{ type: 'update', path: 'notes.txt', content: `${(await ctx.files.read('notes.txt')) ?? ''}two\n` }], warnings: [], errors: [] }),
      }),
    ];
    const result = await runMigrations(steps, context(dir, { targetVersion: '3.0.0' }));
    expect(result.success).toBe(true);
    expect(await read(dir, 'notes.txt')).toBe('one\ntwo\n');
  });
});
