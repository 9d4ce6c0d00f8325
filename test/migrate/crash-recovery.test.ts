/**
 * A migration killed with SIGKILL at a random point of its apply: the next run finds the journal
 * and puts the project back exactly as it was before (or finds it complete), and no temp file is
 * left in the project.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { describe, expect, it } from 'vitest';

import { JOURNAL_FILE, recoverInterruptedApply, runMigrations } from '../../src/migrate/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { step as makeStep } from './helpers.js';

const FILES = 300;
const CYCLES = 6;
const applyModule = path.resolve('build/src/migrate/index.js');

/** Every file of the project (backups and the journal aside), with its content. */
async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(root, { recursive: true, withFileTypes: true })).filter((e) => e.isFile())) {
    const relative = path.relative(root, path.join(name.parentPath, name.name)).split(path.sep).join('/');
    if (relative.startsWith('.template-backups/')) continue;
    out[relative] = await readFile(path.join(root, relative), 'utf8');
  }
  return out;
}

async function project(): Promise<{ root: string; before: Record<string, string>; after: Record<string, string> }> {
  const root = await tempDir('tr-crash-migrate-');
  const before: Record<string, string> = {};
  const after: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) {
    const name = `src/module-${String(i).padStart(3, '0')}.txt`;
    before[name] = `old ${i}\n`.repeat(200);
    after[name] = `new ${i}\n`.repeat(200);
  }
  after['src/added.txt'] = 'added\n';
  await mkdir(path.join(root, 'src'));
  for (const [name, content] of Object.entries(before)) await writeFile(path.join(root, name), content);
  return { root, before, after };
}

/** Runs the apply in a child process, SIGKILLed `delayMs` after it starts. */
async function applyAndKill(root: string, after: Record<string, string>, delayMs: number): Promise<void> {
  const operations = Object.entries(after).map(([file, data]) => ({ kind: 'write', path: file, data }));
  const operationsFile = path.join(await tempDir(), 'operations.json');
  await writeFile(operationsFile, JSON.stringify(operations));
  const script = `
    const { applyOperations } = await import(${JSON.stringify(applyModule)});
    const { readFileSync } = await import('node:fs');
    const operations = JSON.parse(readFileSync(process.argv[1], 'utf8'));
    process.stdout.write('start\\n');
    await applyOperations(${JSON.stringify(root)}, operations, { backupDir: ${JSON.stringify(path.join(root, '.template-backups', 'run'))} });
    process.stdout.write('done\\n');
  `;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, operationsFile], { stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.once('data', () => setTimeout(() => child.kill('SIGKILL'), delayMs));
    child.on('exit', () => resolve());
  });
}

describe('a migration apply killed with SIGKILL', () => {
  it(`leaves a project that the next run restores to all old, or finds all new (${CYCLES} cycles)`, async () => {
    const outcomes = new Set<string>();
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const { root, before, after } = await project();
      await applyAndKill(root, after, [0, 5, 15, 30, 60, 10_000][cycle] ?? 0);
      const journalLeft = (await readdir(root)).includes(JOURNAL_FILE);
      const recovery = await recoverInterruptedApply(root);
      expect(recovery !== undefined).toBe(journalLeft);
      const state = await snapshot(root);
      const whole = isDeepStrictEqual(state, before) ? 'old' : isDeepStrictEqual(state, { ...before, ...after }) ? 'new' : 'torn';
      expect(whole, `cycle ${cycle}: ${Object.keys(state).filter((f) => /\.tmp$/.test(f)).join(', ')}`).not.toBe('torn');
      expect(Object.keys(state).filter((file) => file.endsWith('.tmp'))).toEqual([]);
      expect((await readdir(root)).includes(JOURNAL_FILE)).toBe(false);
      outcomes.add(whole);
    }
    // The kills landed both before the end and after it, or the test proved little.
    expect(outcomes.has('old')).toBe(true);
    expect(outcomes.has('new')).toBe(true);
  }, 120_000);

  it('is rolled back by the next runMigrations before it plans anything', async () => {
    const { root, before } = await project();
    await writeFile(path.join(root, 'src/module-000.txt'), 'half-applied\n');
    await mkdir(path.join(root, '.template-backups', 'run', 'src'), { recursive: true });
    await writeFile(path.join(root, '.template-backups', 'run', 'src', 'module-000.txt'), before['src/module-000.txt'] ?? '');
    await writeFile(path.join(root, JOURNAL_FILE), JSON.stringify({ journalVersion: 1, phase: 'apply', backupDir: '.template-backups/run', files: [{ path: 'src/module-000.txt', saved: true }, { path: 'src/new.txt', saved: false }] }));
    await writeFile(path.join(root, 'src/new.txt'), 'created by the interrupted run\n');

    const dry = await runMigrations([], { projectPath: root, currentVersion: '1.0.0', targetVersion: '2.0.0', templateId: 't', config: {}, dryRun: true });
    expect(dry.success).toBe(true); // no applicable step: nothing to plan, nothing touched
    const step = makeStep('s', '1.0.0', '2.0.0');
    const dryWithStep = await runMigrations([step], { projectPath: root, currentVersion: '1.0.0', targetVersion: '2.0.0', templateId: 't', config: {}, dryRun: true });
    expect(dryWithStep.errors.join()).toMatch(/was interrupted/);
    const run = await runMigrations([step], { projectPath: root, currentVersion: '1.0.0', targetVersion: '2.0.0', templateId: 't', config: {}, dryRun: false });
    expect(run.recovered).toEqual({ phase: 'apply', restored: ['src/module-000.txt', 'src/new.txt'] });
    expect(await snapshot(root)).toEqual(before);
  });
});
