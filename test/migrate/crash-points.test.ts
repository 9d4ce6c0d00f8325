/**
 * A migration apply, and the recovery after it, stopped for good at every one of their file-system
 * calls, as a SIGKILL would stop them: the next recovery always succeeds (on the first re-run) and
 * leaves the project wholly as it was before or wholly as the apply made it, with no journal, temp
 * file or copy nobody asked to keep. The crash points are injected through `ApplyFileSystem`; one
 * real SIGKILL test is in crash-recovery.test.ts.
 */
import { chmod, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { TEMP_FILE_PATTERN, tempPathBeside } from '../../src/core/files.js';
import {
  applyOperations,
  JOURNAL_FILE,
  nodeFileSystem,
  recoverInterruptedApply,
  type ApplyFileSystem,
  type ApplyOperation,
} from '../../src/migrate/index.js';
import { tempDir } from '../helpers/fixtures.js';

const BEFORE: Record<string, string> = { 'a.txt': 'old a\n', 'b.txt': 'old b\n', 'c.txt': 'old c\n', 'run.sh': '#!/bin/sh\necho old\n', 'keep/x.txt': 'untouched\n' };
const AFTER: Record<string, string> = { 'a.txt': 'new a\n', 'd/c.txt': 'old c\n', 'new/e.txt': 'new e\n', 'run.sh': '#!/bin/sh\necho new\n', 'keep/x.txt': 'untouched\n' };
const OPERATIONS: ApplyOperation[] = [
  { kind: 'write', path: 'a.txt', data: 'new a\n', backup: true },
  { kind: 'delete', path: 'b.txt' },
  { kind: 'copy', path: 'd/c.txt', from: 'c.txt' },
  { kind: 'delete', path: 'c.txt' },
  { kind: 'write', path: 'new/e.txt', data: 'new e\n' },
  { kind: 'write', path: 'run.sh', data: '#!/bin/sh\necho new\n' },
];
const BACKUPS = '.template-backups';

const sorted = (files: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

async function project(): Promise<string> {
  const root = await tempDir('tr-crash-points-');
  for (const [file, content] of Object.entries(BEFORE)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), content);
  }
  await chmod(path.join(root, 'run.sh'), 0o755);
  return root;
}

/** Every file below `root` with its content (`.template-backups/` apart), and the mode of run.sh. */
async function files(root: string): Promise<{ files: Record<string, string>; backups: string[]; temps: string[]; runMode: number }> {
  const out: Record<string, string> = {};
  const backups: string[] = [];
  const temps: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const relative = path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (TEMP_FILE_PATTERN.test(entry.name)) temps.push(relative);
    else if (relative.startsWith(`${BACKUPS}/`)) backups.push(relative.slice(BACKUPS.length + 1));
    else out[relative] = await readFile(path.join(root, relative), 'utf8');
  }
  return { files: sorted(out), backups: backups.sort(), temps, runMode: (await stat(path.join(root, 'run.sh'))).mode & 0o777 };
}

/**
 * The real file system without flushes to disk: a kill, unlike a power loss, loses nothing written
 * (and thousands of runs take seconds, not minutes). Each call is still one call, in the same order.
 */
const FAST: ApplyFileSystem = {
  ...nodeFileSystem,
  writeFile: (file, data) => writeFile(file, data, { flag: 'wx' }),
  replaceFile: async (file, data) => {
    const temp = tempPathBeside(file);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(temp, data, { flag: 'wx' });
    await rename(temp, file);
  },
  syncFile: () => Promise.resolve(),
  syncDirectory: () => Promise.resolve(),
};

const CHANGES = new Set<keyof ApplyFileSystem>(['writeFile', 'copyFile', 'rename', 'rm', 'mkdir', 'chmod', 'rmdir', 'replaceFile']);

/**
 * The real file system, stopped for good at change `stopAt` (counting from 0): that call and every
 * later one never return, as if the process had been killed there. With `midway`, a write that is
 * stopped leaves what a kill during it would: a half-written temp file.
 */
function killedAt(stopAt: number, midway: boolean): { fs: ApplyFileSystem; killed: Promise<void>; calls: () => number } {
  let calls = 0;
  let kill: () => void = () => undefined;
  const killed = new Promise<void>((resolve) => (kill = resolve));
  const never = new Promise<never>(() => undefined);
  const fs = {} as Record<string, unknown>;
  for (const [name, real] of Object.entries(FAST) as [keyof ApplyFileSystem, (...args: unknown[]) => Promise<unknown>][]) {
    fs[name] = async (...args: unknown[]) => {
      // A stop before a read or a flush is the same as a stop before the next change.
      if (!CHANGES.has(name) && calls <= stopAt) return real(...args);
      if (calls++ < stopAt) return real(...args);
      if (calls - 1 === stopAt) {
        if (midway && name === 'replaceFile') await writeFile(tempPathBeside(String(args[0])), String(args[1]).slice(0, 3));
        if (midway && name === 'writeFile') await writeFile(String(args[0]), String(args[1]).slice(0, 3));
        if (midway && name === 'copyFile') await writeFile(String(args[1]), '');
        kill();
      }
      return never;
    };
  }
  return { fs: fs as unknown as ApplyFileSystem, killed, calls: () => calls };
}

/** Runs `work` with the file system stopped at `stopAt`: `finished` when it ended first, `killed` otherwise. */
async function runUntilKilled(work: (fs: ApplyFileSystem) => Promise<unknown>, stopAt: number, midway: boolean): Promise<'finished' | 'killed'> {
  const killer = killedAt(stopAt, midway);
  return Promise.race([work(killer.fs).then(() => 'finished' as const), killer.killed.then(() => 'killed' as const)]);
}

const apply = (root: string) => (fs: ApplyFileSystem) => applyOperations(root, OPERATIONS, { backupDir: path.join(root, BACKUPS, 'run'), fs });

async function expectWhole(root: string, label: string): Promise<'old' | 'new'> {
  const state = await files(root);
  expect(state.temps, label).toEqual([]);
  expect((await readdir(root)).includes(JOURNAL_FILE), label).toBe(false);
  expect(state.runMode, label).toBe(0o755);
  if (JSON.stringify(state.files) === JSON.stringify(sorted(BEFORE))) {
    expect(state.backups, label).toEqual([]);
    return 'old';
  }
  expect(state.files, label).toEqual(sorted(AFTER));
  // The copy asked for stays; no other one does.
  expect(state.backups, label).toEqual(['run/a.txt']);
  return 'new';
}

/** The journal's phase in `root`, or `none`. */
async function phaseOf(root: string): Promise<string> {
  const text = await readFile(path.join(root, JOURNAL_FILE), 'utf8').catch(() => undefined);
  return text === undefined ? 'none' : (JSON.parse(text) as { phase: string }).phase;
}

/** A project with the apply stopped at change `stop` (midway through it or before it). */
async function stoppedProject(stop: number, midway: boolean): Promise<{ root: string; applied: 'finished' | 'killed' }> {
  const root = await project();
  return { root, applied: await runUntilKilled(apply(root), stop, midway) };
}

describe('an apply stopped at any file-system call', () => {
  it('is finished by the next recovery, whole, whatever the call; and a recovery stopped at any of its calls is finished by the one after', async () => {
    const outcomes = new Map<string, number>();
    /** The last stop of the apply seen in each phase of its journal. */
    const stopInPhase = new Map<string, number>();
    for (let stop = 0; ; stop++) {
      let finished = false;
      for (const midway of [false, true]) {
        const { root, applied } = await stoppedProject(stop, midway);
        finished ||= applied === 'finished';
        if (!midway) stopInPhase.set(await phaseOf(root), stop);
        // The first re-run: the recovery with nothing in its way succeeds, always.
        await recoverInterruptedApply(root);
        const whole = await expectWhole(root, `apply stopped at change ${stop} (midway: ${midway})`);
        outcomes.set(whole, (outcomes.get(whole) ?? 0) + 1);
        expect(await recoverInterruptedApply(root)).toBeUndefined();
      }
      if (finished) break;
    }
    // Stops landed in every phase of the journal, before and after the point of no return.
    expect([...stopInPhase.keys()].sort()).toEqual(['apply', 'done', 'none', 'prepare']);
    expect(outcomes.get('old')).toBeGreaterThan(10);
    expect(outcomes.get('new')).toBeGreaterThan(2);

    // In each phase, the recovery itself stopped at each of its changes in turn, until one runs to its end.
    let recoveries = 0;
    for (const [phase, stop] of stopInPhase) {
      for (let recoveryStop = 0; ; recoveryStop++) {
        const { root } = await stoppedProject(stop, false);
        const recovered = await runUntilKilled((fs) => recoverInterruptedApply(root, { fs }), recoveryStop, true);
        await recoverInterruptedApply(root);
        await expectWhole(root, `apply stopped in phase ${phase} (change ${stop}), its recovery at change ${recoveryStop}`);
        recoveries++;
        if (recovered === 'finished') break;
      }
    }
    expect(recoveries).toBeGreaterThan(20);
  }, 120_000);

  it('recovers although something keeps writing into the backup folder while it is cleaned (no ENOTEMPTY)', async () => {
    // The last stop before the apply's renames are all made: the most to restore.
    let stop = 0;
    let root = '';
    for (let next = 0; ; next++) {
      const stopped = await stoppedProject(next, false);
      if ((await phaseOf(stopped.root)) !== 'apply') {
        if (root !== '') break;
        continue;
      }
      ({ root } = stopped);
      stop = next;
    }
    expect(stop).toBeGreaterThan(0);
    // A file manager, an indexer or a sync client writing its own files into the folder meanwhile.
    const intruder = path.join(root, BACKUPS, 'run');
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await mkdir(intruder, { recursive: true }).catch(() => undefined);
        await writeFile(path.join(intruder, `.DS_Store-${written++}`), 'x').catch(() => undefined);
      }
    })();
    try {
      const recovery = await recoverInterruptedApply(root);
      expect(recovery?.phase).toBe('apply');
    } finally {
      writing = false;
      await writer;
    }
    expect(written).toBeGreaterThan(0);
    const state = await files(root);
    expect(state.files).toEqual(sorted(BEFORE));
    expect(state.temps).toEqual([]);
    // Only the intruder's files are left in the folder; none of the apply's copies.
    expect(state.backups.every((file) => file.startsWith('run/.DS_Store-'))).toBe(true);
    expect(await recoverInterruptedApply(root)).toBeUndefined();
  });
});
