import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { createProject, migrateProject, ProjectLockError, TemplateNotFoundError, type MigrationPlan } from '../../src/project/index.js';
import type { TemplateLock } from '../../src/template/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { snapshot } from '../migrate/helpers.js';
import { memoryRegistry, TEMPLATE_ID, type MemoryRegistry } from './registry.js';

/** A project generated from 1.0.0 of the registry's template. */
async function projectAt100(registry: MemoryRegistry): Promise<string> {
  const dir = path.join(await tempDir(), 'shop');
  await createProject({ client: registry.client, id: TEMPLATE_ID, version: '1.0.0', dir, set: ['projectName=shop'], doNotTrack: true, fetch: registry.fetch });
  return dir;
}

const lockOf = async (dir: string): Promise<TemplateLock> => JSON.parse(await readFile(path.join(dir, '.template-lock.json'), 'utf8')) as TemplateLock;

describe('migrateProject', () => {
  it('plans the steps of the newer version, reports the plan, then applies it with backups', async () => {
    const registry = await memoryRegistry();
    const dir = await projectAt100(registry);
    const plans: MigrationPlan[] = [];
    const outcome = await migrateProject({ client: registry.client, projectDir: dir, onPlan: (plan) => plans.push(plan), fetch: registry.fetch });

    expect(plans).toHaveLength(1);
    expect(plans[0]).toMatchObject({ templateId: TEMPLATE_ID, fromVersion: '1.0.0', toVersion: '1.1.0' });
    expect(plans[0]?.result.applied).toEqual(['add-notes']);
    expect(plans[0]?.result.plan.map((file) => [file.type, file.path])).toEqual([
      ['create', 'NOTES.md'],
      ['update', 'README.md'],
    ]);
    expect(plans[0]?.result.plan[0]?.diff).toBe('--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+notes for shop\n');

    expect(outcome.status).toBe('applied');
    if (outcome.status !== 'applied') return;
    expect(outcome.applied.success).toBe(true);
    expect(outcome.applied.backupDir).toMatch(/\.template-backups/);
    expect(await readFile(path.join(dir, 'NOTES.md'), 'utf8')).toBe('notes for shop\n');
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toBe('# shop\n\nSee NOTES.md.\n');
    expect(await readFile(path.join(outcome.applied.backupDir ?? '', 'README.md'), 'utf8')).toBe('# shop\n');
    const lock = await lockOf(dir);
    expect(lock.template.version).toBe('1.1.0');
    expect(lock.appliedMigrations).toEqual(['add-notes']);
  });

  it('changes nothing in a dry run', async () => {
    const registry = await memoryRegistry();
    const dir = await projectAt100(registry);
    const before = await snapshot(dir);
    const outcome = await migrateProject({ client: registry.client, projectDir: dir, dryRun: true, fetch: registry.fetch });
    expect(outcome.status).toBe('planned');
    if (outcome.status === 'planned') expect(outcome.result.plan).toHaveLength(2);
    expect(await snapshot(dir)).toEqual(before);
  });

  it('keeps no backup when told not to', async () => {
    const registry = await memoryRegistry();
    const dir = await projectAt100(registry);
    const outcome = await migrateProject({ client: registry.client, projectDir: dir, backup: false, fetch: registry.fetch });
    expect(outcome.status === 'applied' && outcome.applied.backupDir).toBe(undefined);
    expect(existsSync(path.join(dir, '.template-backups'))).toBe(false);
  });

  it('says when there is nothing newer', async () => {
    const registry = await memoryRegistry();
    const dir = await projectAt100(registry);
    await migrateProject({ client: registry.client, projectDir: dir, fetch: registry.fetch });
    const requests = registry.requests.length;
    expect(await migrateProject({ client: registry.client, projectDir: dir, fetch: registry.fetch })).toEqual({
      status: 'up-to-date',
      templateId: TEMPLATE_ID,
      currentVersion: '1.1.0',
      registryVersion: '1.1.0',
    });
    expect(await migrateProject({ client: registry.client, projectDir: dir, to: '1.0.0', fetch: registry.fetch })).toMatchObject({ status: 'up-to-date', registryVersion: '1.0.0' });
    // Nothing downloaded: the registry document is cached by the client.
    expect(registry.requests.length).toBe(requests);
  });

  describe('breaking steps', () => {
    it('are declined, changing nothing, when there is no one to confirm them', async () => {
      const registry = await memoryRegistry({ breaking: true });
      const dir = await projectAt100(registry);
      const before = await snapshot(dir);
      const outcome = await migrateProject({ client: registry.client, projectDir: dir, fetch: registry.fetch });
      expect(outcome.status).toBe('declined');
      if (outcome.status === 'declined') expect(outcome.breaking.map((step) => step.id)).toEqual(['add-notes']);
      expect(await snapshot(dir)).toEqual(before);
    });

    it('are asked about, with the steps, and applied only when confirmed', async () => {
      const registry = await memoryRegistry({ breaking: true });
      const dir = await projectAt100(registry);
      const before = await snapshot(dir);
      const asked: string[][] = [];
      const no = await migrateProject({
        client: registry.client,
        projectDir: dir,
        confirmBreaking: (steps) => (asked.push(steps.map((step) => step.id)), false),
        fetch: registry.fetch,
      });
      expect(no.status).toBe('declined');
      expect(await snapshot(dir)).toEqual(before);

      const yes = await migrateProject({ client: registry.client, projectDir: dir, confirmBreaking: () => Promise.resolve(true), fetch: registry.fetch });
      expect(asked).toEqual([['add-notes']]);
      expect(yes.status).toBe('applied');
      if (yes.status === 'applied') expect(yes.applied.warnings).toEqual(['1 breaking migration step: review the migration guide before applying']);
      expect((await lockOf(dir)).template.version).toBe('1.1.0');
    });

    it('are not asked about in a dry run', async () => {
      const registry = await memoryRegistry({ breaking: true });
      const dir = await projectAt100(registry);
      const outcome = await migrateProject({
        client: registry.client,
        projectDir: dir,
        dryRun: true,
        confirmBreaking: () => {
          throw new Error('asked');
        },
        fetch: registry.fetch,
      });
      expect(outcome.status).toBe('planned');
    });
  });

  it('fails, changing nothing, when the plan fails (a step updates a file the user removed)', async () => {
    const registry = await memoryRegistry();
    const dir = await projectAt100(registry);
    await rm(path.join(dir, 'README.md'));
    const before = await snapshot(dir);
    const plans: MigrationPlan[] = [];
    const outcome = await migrateProject({ client: registry.client, projectDir: dir, onPlan: (plan) => plans.push(plan), fetch: registry.fetch });
    expect(outcome.status).toBe('plan-failed');
    expect(plans[0]?.result.errors).toEqual(['step add-notes: cannot update "README.md": the file does not exist']);
    expect(await snapshot(dir)).toEqual(before);
  });

  it('throws ProjectLockError for a folder that was not generated', async () => {
    const registry = await memoryRegistry();
    const dir = await tempDir();
    const error = await migrateProject({ client: registry.client, projectDir: dir, fetch: registry.fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProjectLockError);
    expect((error as Error).message).toBe(`${path.join(dir, '.template-lock.json')} not found: this folder was not generated by template-registry`);
    expect(registry.requests).toEqual([]);
  });

  it('throws TemplateNotFoundError for a target version the registry does not have, and refuses a malformed one', async () => {
    const registry = await memoryRegistry();
    const dir = await projectAt100(registry);
    const missing = await migrateProject({ client: registry.client, projectDir: dir, to: '2.0.0', fetch: registry.fetch }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TemplateNotFoundError);
    expect((missing as Error).message).toBe(`template ${TEMPLATE_ID}@2.0.0 not found in the registry`);
    await expect(migrateProject({ client: registry.client, projectDir: dir, to: '2.0', fetch: registry.fetch })).rejects.toThrow(/MAJOR\.MINOR\.PATCH without leading zeros, each number at most 15 digits \(got "2\.0"\)/);
    await expect(migrateProject({ client: registry.client, projectDir: dir, to: '01.1.0', fetch: registry.fetch })).rejects.toThrow(/without leading zeros.*\(got "01\.1\.0"\)/);
  });
});
