import { readdir } from 'node:fs/promises';
import path from 'node:path';

import { unlessMissing } from '../core/files.js';

import { resolveAnswers, type Answers, type ResolvedAnswers } from './answers.js';
import { ExpressionEvaluator } from './expression.js';
import { loadTemplate, type LoadedTemplate } from './load.js';
import { FolderNotEmptyError, writeFolderAtomically } from './write-folder.js';
import { LOCK_FILE, serializeLock, sha256Hex, type LockedSigner, type TemplateLock } from './lock.js';
import { renderTemplate, type RenderOptions } from './render.js';
import { withoutSecrets } from './secrets.js';
import { plannedTasks, type PlannedTask } from './tasks.js';

export interface GenerateOptions extends RenderOptions {
  /** Write into a folder that already has files (same-named files are replaced). */
  force?: boolean;
  /** Where the template came from (a registry id@version), recorded in the lock file. */
  source?: string;
  /** Secret variables generated without a value when not answered (`test` has no secret to give); see ResolveOptions. */
  withhold?: ReadonlySet<string>;
  /** Who signed the template's verified build provenance, pinned in the lock file. */
  signer?: LockedSigner;
  now?: () => Date;
}

export interface GenerateResult {
  outDir: string;
  template: { name: string; version: string };
  /** The answers, without secret ones (they are in the files, and nowhere else). */
  answers: Answers;
  /** The computed values, without those that read a secret. */
  computed: Record<string, string>;
  files: { path: string; sha256: string; size: number }[];
  lockFile: string;
  /** The template's tasks whose `when` holds for these answers, in order; generating runs none. */
  tasks: PlannedTask[];
}

export class OutputNotEmptyError extends Error {
  constructor(readonly outDir: string) {
    super(`output folder ${outDir} is not empty; use --force to write into it`);
    this.name = 'OutputNotEmptyError';
  }
}

/** Throws OutputNotEmptyError when `outDir` has entries and `force` is not set (a missing folder is fine). */
export async function checkOutputFolder(outDir: string, force: boolean): Promise<void> {
  const existing = await unlessMissing(readdir(path.resolve(outDir)));
  if (existing && existing.length > 0 && !force) throw new OutputNotEmptyError(outDir);
}

/**
 * Generates a project from a template: resolves the answers (defaults, conditions, computed
 * values, validation), renders every file in memory, writes them into a staging folder beside
 * `outDir` with `.template-lock.json`, and only then moves the result into place. An error at any
 * point leaves no half-written project behind.
 */
export async function generateProject(
  templateDir: string | LoadedTemplate,
  outDir: string,
  answers: Answers = {},
  options: GenerateOptions = {},
): Promise<GenerateResult> {
  const evaluator = options.evaluator ?? new ExpressionEvaluator();
  const template = typeof templateDir === 'string' ? await loadTemplate(templateDir, evaluator) : templateDir;
  const target = path.resolve(outDir);
  await checkOutputFolder(outDir, options.force ?? false);

  const resolved: ResolvedAnswers = resolveAnswers(template, answers, { evaluator, ...(options.withhold ? { withhold: options.withhold } : {}) });
  const rendered = await renderTemplate(template, resolved, { ...options, evaluator });
  const files = rendered.map((file) => ({ path: file.path, sha256: sha256Hex(file.content), size: file.content.length }));
  const tasks = plannedTasks(template.manifest, { ...resolved.answers, ...resolved.computed }, evaluator);
  // Secrets are rendered into the files above; what is written or returned holds none of them.
  const shown = withoutSecrets(template, resolved, evaluator);
  const lock: TemplateLock = {
    lockfileVersion: 1,
    template: {
      name: template.manifest.name,
      version: template.manifest.version,
      ...(options.source ? { source: options.source } : {}),
    },
    generatedAt: (options.now?.() ?? new Date()).toISOString(),
    answers: shown.answers,
    computed: shown.computed,
    files: Object.fromEntries(files.map((f) => [f.path, { sha256: f.sha256, size: f.size }])),
    ...(options.signer ? { signer: { repository: options.signer.repository, workflow: options.signer.workflow, issuer: options.signer.issuer } } : {}),
  };

  const output = [...rendered.map((file) => ({ path: file.path, content: file.content, mode: file.mode })), { path: LOCK_FILE, content: serializeLock(lock) }];
  try {
    await writeFolderAtomically(target, output, { force: options.force ?? false });
  } catch (error) {
    if (error instanceof FolderNotEmptyError) throw new OutputNotEmptyError(outDir);
    throw error;
  }

  return {
    outDir: target,
    template: { name: template.manifest.name, version: template.manifest.version },
    answers: shown.answers,
    computed: shown.computed,
    files,
    lockFile: path.join(target, LOCK_FILE),
    tasks,
  };
}
