import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { confirm } from '@inquirer/prompts';
import type { Command } from 'commander';

import { RegistryClient } from '../../client/index.js';
import { downloadTemplate } from '../../client/download.js';
import { checkCompatibility } from '../../compat/index.js';
import type { TemplateEntry } from '../../core/schema-types.js';
import { compareVersions, isTemplateVersion } from '../../core/versions.js';
import { loadDeclarativeSteps, runMigrations } from '../../migrate/index.js';
import { latestEntries, sortEntries } from '../../core/listing.js';
import { generateProject, loadTemplate, readLock, type Answers } from '../../template/index.js';
import { promptForAnswers } from '../../template/prompts.js';
import { eventsUrl, parseTemplateSpec, registryUrlFrom, userCacheDir } from '../consumer-env.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { givenAnswers, reportTemplateError } from './generate.js';
import { errorMessage } from '../../core/errors.js';

interface RegistryFlags {
  registry?: string;
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

function clientFor(flags: RegistryFlags): RegistryClient {
  return new RegistryClient({ registryUrl: registryUrlFrom(flags.registry), cacheDir: userCacheDir() });
}

function latestPerTemplate(entries: readonly TemplateEntry[]): TemplateEntry[] {
  return sortEntries(latestEntries(entries));
}

function table(entries: readonly TemplateEntry[]): string {
  if (entries.length === 0) return 'no templates\n';
  const rows = entries.map((e) => [e.id, e.version, e.stability, String(e.stats?.downloads ?? 0), e.description]);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length), ['NAME', 'VERSION', 'STABILITY', 'DOWNLOADS'][i]?.length ?? 0));
  const line = (cells: string[]): string => cells.map((c, i) => (i < 4 ? c.padEnd(widths[i] ?? 0) : c)).join('  ');
  return `${[line(['NAME', 'VERSION', 'STABILITY', 'DOWNLOADS', 'DESCRIPTION']), ...rows.map(line)].join('\n')}\n`;
}

async function sendGenerationEvent(registryUrl: string, event: Record<string, unknown>): Promise<void> {
  if (process.env.DO_NOT_TRACK === '1') return;
  try {
    await fetch(eventsUrl(registryUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(3000),
    });
  } catch {
    // Analytics never stop a user's work; a static registry has no events route at all.
  }
}

function progress(io: CliIo): (received: number, total?: number) => void {
  if (!process.stderr.isTTY) return () => undefined;
  let last = -1;
  return (received, total) => {
    const percent = total ? Math.floor((received / total) * 100) : -1;
    if (percent === last) return;
    last = percent;
    io.stderr(`\rdownloading ${total ? `${percent}%` : `${received} bytes`}`);
    if (total && received >= total) io.stderr('\n');
  };
}

export function registerConsumer(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const registryOption = (command: Command): Command =>
    command.option('--registry <url>', 'registry document URL (env TEMPLATE_REGISTRY_URL)').option('--json', 'print JSON');

  registryOption(
    program
      .command('list')
      .description('list the templates of the registry (newest stable version of each)')
      .option('--category <category>', 'only this category')
      .option('--stability <stability>', 'only this stability')
      .option('--tag <tag>', 'only templates with this tag (repeatable: all must be present)', collect, [])
      .option('--feature <feature>', 'only templates with this feature (repeatable: all must be present)', collect, [])
      .option('--author <name>', 'only templates by this author')
      .option('--all-versions', 'list every version, not only the newest'),
  ).action(async (flags: RegistryFlags & { category?: string; stability?: string; tag: string[]; feature: string[]; author?: string; allVersions?: boolean }) => {
    const entries = await clientFor(flags).listTemplates({
      ...(flags.category ? { category: flags.category } : {}),
      ...(flags.stability ? { stability: flags.stability } : {}),
      ...(flags.tag.length > 0 ? { tags: flags.tag } : {}),
      ...(flags.feature.length > 0 ? { features: flags.feature } : {}),
      ...(flags.author ? { author: flags.author } : {}),
    });
    const shown = flags.allVersions ? entries : latestPerTemplate(entries);
    io.stdout(flags.json ? `${JSON.stringify(shown, null, 2)}\n` : table(shown));
    setExit(EXIT.ok);
  });

  registryOption(program.command('search').description('search templates by name, description, tags, features and category').argument('<terms...>', 'search terms')).action(
    async (terms: string[], flags: RegistryFlags) => {
      const shown = latestPerTemplate(await clientFor(flags).search(terms.join(' ')));
      io.stdout(flags.json ? `${JSON.stringify(shown, null, 2)}\n` : table(shown));
      setExit(EXIT.ok);
    },
  );

  registryOption(program.command('info').description('show a template (and its versions)').argument('<template>', 'id or id@version')).action(
    async (spec: string, flags: RegistryFlags) => {
      const { id, version } = parseTemplateSpec(spec);
      const client = clientFor(flags);
      const entry = await client.getTemplate(id, version);
      if (!entry) {
        io.stderr(`template ${spec} not found in the registry\n`);
        setExit(EXIT.failure);
        return;
      }
      const versions = (await client.listTemplates())
        .filter((e) => e.id === id)
        .map((e) => e.version)
        .sort((a, b) => compareVersions(b, a));
      if (flags.json) io.stdout(`${JSON.stringify({ ...entry, versions }, null, 2)}\n`);
      else {
        io.stdout(
          [
            `${entry.id}@${entry.version} (${entry.stability}, ${entry.category})`,
            entry.description,
            `author:    ${entry.author?.name ?? 'unknown'}`,
            `tags:      ${(entry.tags ?? []).join(', ')}`,
            `features:  ${(entry.features ?? []).join(', ')}`,
            `downloads: ${entry.stats?.downloads ?? 0}`,
            `archive:   ${entry.downloadUrl}`,
            ...(entry.integrity ? [`integrity: ${entry.integrity}`] : []),
            `versions:  ${versions.join(', ')}`,
          ].join('\n') + '\n',
        );
      }
      setExit(EXIT.ok);
    },
  );

  registryOption(
    program
      .command('create')
      .description('create a project from a registry template')
      .argument('<template>', 'id or id@version')
      .argument('[dir]', 'folder to create the project in (default: the template id)')
      .option('--set <key=value>', 'answer a variable (repeatable)', collect, [])
      .option('--answers <file>', 'JSON file of answers')
      .option('--defaults', 'do not ask: use the defaults')
      .option('--force', 'write into a folder that is not empty'),
  ).action(async (spec: string, dir: string | undefined, flags: RegistryFlags & { set: string[]; answers?: string; defaults?: boolean; force?: boolean }) => {
    const { id, version } = parseTemplateSpec(spec);
    const registryUrl = registryUrlFrom(flags.registry);
    const entry = await clientFor(flags).getTemplate(id, version);
    if (!entry) {
      io.stderr(`template ${spec} not found in the registry\n`);
      setExit(EXIT.failure);
      return;
    }
    const work = await mkdtemp(path.join(tmpdir(), 'template-create-'));
    const started = Date.now();
    let loaded = false;
    try {
      const downloaded = await downloadTemplate(entry, path.join(work, 'template'), { onProgress: progress(io) });
      const template = await loadTemplate(downloaded.dir);
      loaded = true;
      let answers: Answers = await givenAnswers(template, flags);
      if (!flags.defaults && process.stdin.isTTY) answers = await promptForAnswers(template, answers);
      const result = await generateProject(template, dir ?? id, answers, { force: flags.force ?? false, source: `${registryUrl}#${id}@${entry.version}` });
      await sendGenerationEvent(registryUrl, { type: 'generation', templateId: id, version: entry.version, success: true, duration: Date.now() - started, timestamp: new Date().toISOString() });
      io.stdout(
        flags.json
          ? `${JSON.stringify(result, null, 2)}\n`
          : `created ${result.outDir} from ${id}@${entry.version} (${result.files.length} files, integrity verified)\n`,
      );
      setExit(EXIT.ok);
    } catch (error) {
      if (loaded) {
        await sendGenerationEvent(registryUrl, { type: 'generation', templateId: id, version: entry.version, success: false, duration: Date.now() - started, timestamp: new Date().toISOString() });
      }
      setExit(reportTemplateError(error, io));
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  registryOption(
    program
      .command('migrate')
      .description('migrate the project in this folder (or --project) to a newer template version')
      .option('--to <version>', 'target version (default: the newest the registry selects)')
      .option('--project <dir>', 'project folder', '.')
      .option('--dry-run', 'show the plan and the diffs, change nothing')
      .option('--yes', 'apply breaking steps without asking')
      .option('--no-backup', 'do not keep the old files in .template-backups/'),
  ).action(async (flags: RegistryFlags & { to?: string; project: string; dryRun?: boolean; yes?: boolean; backup: boolean }) => {
    if (flags.to !== undefined && !isTemplateVersion(flags.to)) throw new UsageError(`--to must be MAJOR.MINOR.PATCH (got ${JSON.stringify(flags.to)})`);
    const lock = await readLock(flags.project).catch((error: unknown) => {
      throw new UsageError(errorMessage(error));
    });
    const id = lock.template.name;
    const current = lock.template.version;
    const target = await clientFor(flags).getTemplate(id, flags.to);
    if (!target) {
      io.stderr(`template ${id}${flags.to ? `@${flags.to}` : ''} not found in the registry\n`);
      setExit(EXIT.failure);
      return;
    }
    if (compareVersions(target.version, current) <= 0) {
      io.stdout(`${id} is at ${current}; nothing to migrate to (registry has ${target.version})\n`);
      setExit(EXIT.ok);
      return;
    }
    const work = await mkdtemp(path.join(tmpdir(), 'template-migrate-'));
    try {
      const downloaded = await downloadTemplate(target, path.join(work, 'template'), { onProgress: progress(io) });
      const migrationsDir = path.join(downloaded.dir, 'migrations');
      const steps = existsSync(migrationsDir)
        ? (await loadDeclarativeSteps(migrationsDir, { answers: { ...lock.answers, ...lock.computed } })).filter(
            (step) => compareVersions(step.toVersion, target.version) <= 0,
          )
        : [];
      const context = {
        projectPath: path.resolve(flags.project),
        currentVersion: current,
        targetVersion: target.version,
        templateId: id,
        config: lock.answers,
        backup: flags.backup,
      };
      const plan = await runMigrations(steps, { ...context, dryRun: true });
      io.stdout(`migration plan ${id} ${current} -> ${target.version}: ${plan.applied.length} step(s), ${plan.plan.length} file change(s)\n`);
      for (const file of plan.plan) io.stdout(`${file.diff}${file.diff.endsWith('\n') ? '' : '\n'}`);
      for (const warning of plan.warnings) io.stderr(`warning: ${warning}\n`);
      for (const error of plan.errors) io.stderr(`error: ${error}\n`);
      if (!plan.success) {
        setExit(EXIT.failure);
        return;
      }
      if (flags.dryRun) {
        if (flags.json) io.stdout(`${JSON.stringify(plan, null, 2)}\n`);
        setExit(EXIT.ok);
        return;
      }
      const breaking = steps.filter((s) => s.breaking && plan.applied.includes(s.id));
      if (breaking.length > 0 && !flags.yes) {
        if (!process.stdin.isTTY) {
          io.stderr(`${breaking.length} breaking step(s): review the migration guide, then run again with --yes\n`);
          setExit(EXIT.failure);
          return;
        }
        const go = await confirm({ message: `${breaking.length} breaking step(s) (${breaking.map((s) => s.id).join(', ')}). Apply them?`, default: false });
        if (!go) {
          io.stderr('nothing was changed\n');
          setExit(EXIT.failure);
          return;
        }
      }
      const result = await runMigrations(steps, { ...context, dryRun: false });
      for (const warning of result.warnings) io.stderr(`warning: ${warning}\n`);
      for (const error of result.errors) io.stderr(`error: ${error}\n`);
      if (flags.json) io.stdout(`${JSON.stringify(result, null, 2)}\n`);
      else if (result.success) {
        io.stdout(`migrated ${id} to ${target.version}: ${result.changes.length} change(s)${result.backupDir ? `; old files kept in ${result.backupDir}` : ''}\n`);
      }
      setExit(result.success ? EXIT.ok : EXIT.failure);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });

  registryOption(
    program
      .command('check-compat')
      .description('check a template against an environment (exit 1 when incompatible)')
      .argument('<template>', 'id or id@version')
      .option('--methodology-version <version>', 'methodology version to check')
      .option('--node-version <version>', 'node version to check (default: this one)', process.versions.node)
      .option('--npm-version <version>', 'npm version to check')
      .option('--platform <platform>', 'platform to check (default: this one)', process.platform),
  ).action(async (spec: string, flags: RegistryFlags & { methodologyVersion?: string; nodeVersion: string; npmVersion?: string; platform: string }) => {
    const { id, version } = parseTemplateSpec(spec);
    const templates = await clientFor(flags).listTemplates();
    const result = checkCompatibility({ templates }, id, {
      ...(flags.methodologyVersion ? { methodologyVersion: flags.methodologyVersion } : {}),
      nodeVersion: flags.nodeVersion,
      ...(flags.npmVersion ? { npmVersion: flags.npmVersion } : {}),
      platform: flags.platform,
    }, version ? { version } : {});
    if (flags.json) io.stdout(`${JSON.stringify(result, null, 2)}\n`);
    else {
      io.stdout(`${spec}: ${result.compatible ? 'compatible' : 'NOT compatible'}\n`);
      for (const issue of result.issues) io.stdout(`  issue: ${issue}\n`);
      for (const warning of result.warnings) io.stdout(`  warning: ${warning}\n`);
    }
    setExit(result.compatible ? EXIT.ok : EXIT.failure);
  });
}
