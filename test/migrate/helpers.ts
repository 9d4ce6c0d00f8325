import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import type { FileChange, MigrationContext, MigrationRunContext, MigrationStep } from '../../src/migrate/index.js';

export interface StepOptions extends Partial<Omit<MigrationStep, 'id' | 'fromVersion' | 'toVersion' | 'execute'>> {
  changes?: FileChange[];
  warnings?: string[];
  errors?: string[];
  success?: boolean;
  execute?: MigrationStep['execute'];
}

/** A step that returns fixed changes (or runs `execute` when given). */
export function step(id: string, fromVersion: string, toVersion: string, options: StepOptions = {}): MigrationStep {
  const { changes = [], warnings = [], errors = [], success = true, execute, ...rest } = options;
  return {
    id,
    description: `step ${id}`,
    fromVersion,
    toVersion,
    breaking: false,
    automatic: true,
    ...rest,
    execute: execute ?? ((_context: MigrationContext) => ({ success, changes, warnings, errors })),
  };
}

export function context(projectPath: string, overrides: Partial<MigrationRunContext> = {}): MigrationRunContext {
  return { projectPath, currentVersion: '1.0.0', targetVersion: '2.0.0', templateId: 'demo', dryRun: false, ...overrides };
}

/** Every file under `root` (relative `/` path to text), to compare a project before and after. */
export async function snapshot(root: string): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(file);
      else if (entry.isFile()) result[path.relative(root, file).split(path.sep).join('/')] = await readFile(file, 'utf8');
    }
  };
  await walk(root);
  return result;
}

export const read = (root: string, file: string): Promise<string> => readFile(path.join(root, file), 'utf8');
