import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { AnswersError, resolveAnswers, type Answers, type ResolvedAnswers } from './answers.js';
import { comparisonsOf, ExpressionEvaluator } from './expression.js';
import { generateProject } from './generate.js';
import { loadTemplate, type LoadedTemplate, type VariableDefinition } from './load.js';
import { isJsonChecked, jsoncRule, jsonProblems } from './json-files.js';
import { isInside } from './paths.js';
import { RenderError } from './render.js';
import { isBinary } from './text-files.js';
import { templateTreeOf, TemplateTree } from './tree.js';
import { secretVariables } from './secrets.js';
import { runTasks, type TaskOutcome } from './tasks.js';
import { errorMessage } from '../core/errors.js';

/** One answer set of the matrix and what it is there to exercise. */
export interface AnswerSet {
  name: string;
  /** The answers given (before defaults and computed values). */
  given: Answers;
  /** Coverage targets this set reaches, e.g. `database=mysql`, `features∋docker`, `condition of database: true`. */
  covers: string[];
}

export interface AnswerMatrix {
  sets: AnswerSet[];
  /** Targets no valid answer set reaches (the report then fails). */
  uncovered: string[];
}

export interface CommandOutcome {
  command: string;
  exitCode: number | null;
  timedOut: boolean;
  /** The last 4 KiB of the command's combined output. */
  output: string;
}

export interface AnswerSetReport extends AnswerSet {
  answers: Answers;
  computed: Record<string, string>;
  passed: boolean;
  problems: string[];
  files: number;
  command?: CommandOutcome;
  /** The template's tasks that applied to this set, run in its project before the command. */
  tasks?: TaskOutcome[];
  /** Where the project was generated, when kept. */
  projectDir?: string;
}

export interface TestTemplateReport {
  template: { name: string; version: string };
  /** Every answer set passed and every coverage target was reached. */
  passed: boolean;
  sets: AnswerSetReport[];
  uncovered: string[];
  /** With `packedFiles`: what the archive leaves out (so the generated projects lack it too), and why. */
  leftOut?: { path: string; reason: string }[];
}

/**
 * The files a template's archive will hold: `selectPackFiles` of the pack layer gives them (this
 * layer cannot call it), so that test generation runs on exactly what is published.
 */
export interface PackedFiles {
  /** Paths relative to the template folder, `/`-separated, `template.json` among them. */
  files: readonly string[];
  /** What the archive leaves out and why (shown in the report). */
  leftOut?: readonly { path: string; reason: string }[];
}

export interface TestTemplateOptions {
  /** Shell command to run inside each generated project; defaults to the manifest's `test.command`. */
  command?: string;
  /** Time limit of the command per answer set; defaults to the manifest's `test.timeoutSeconds`, else 300 s. */
  timeoutMs?: number;
  /** Keep the generated projects (their folders are in the report). */
  keep?: boolean;
  /**
   * Generate from these files of the template folder only (copied apart first), as the archive
   * will hold them; default every file of the folder. `template-registry test` and the publish
   * pipeline pass what `pack` would pack.
   */
  packedFiles?: PackedFiles;
  /** Run the template's tasks in each project (default true); `taskTimeoutMs` bounds each (default 10 minutes). */
  runTasks?: boolean;
  taskTimeoutMs?: number;
}

/** Secrets without a default: test generation has no value to give them, so they render empty. */
const untestedSecrets = (template: LoadedTemplate): Set<string> =>
  new Set(secretVariables(template).filter((name) => template.variables[name]?.default === undefined));

/** The values a variable can take that the matrix must try: its enum, its items' enum, else its prompt's choices. */
function domainOf(template: LoadedTemplate, name: string, definition: VariableDefinition): unknown[] | undefined {
  const values = definition.enum ?? definition.items?.enum;
  if (values) return values;
  const choices = template.prompts.find((p) => p.name === name && p.choices)?.choices;
  return choices?.map((c) => c.value);
}

interface Target {
  key: string;
  reached: (resolved: ResolvedAnswers, evaluator: ExpressionEvaluator) => boolean;
}

function targetsOf(template: LoadedTemplate): Target[] {
  const targets: Target[] = [];
  const conditionTargets = (label: string, expression: string, scopeOf: (r: ResolvedAnswers) => object): void => {
    for (const outcome of [true, false]) {
      targets.push({
        key: `${label}: ${String(outcome)}`,
        reached: (resolved, evaluator) => evaluator.condition(expression, scopeOf(resolved)) === outcome,
      });
    }
  };
  for (const name of template.variableOrder) {
    const definition = template.variables[name];
    if (!definition) continue;
    const domain = domainOf(template, name, definition);
    if (definition.type === 'array' && domain) {
      for (const value of domain) {
        targets.push({
          key: `${name}∋${String(value)}`,
          reached: (r) => Array.isArray(r.answers[name]) && (r.answers[name] as unknown[]).includes(value),
        });
      }
    } else if (domain) {
      for (const value of domain) targets.push({ key: `${name}=${String(value)}`, reached: (r) => r.answers[name] === value });
    } else if (definition.type === 'boolean') {
      for (const value of [true, false]) targets.push({ key: `${name}=${String(value)}`, reached: (r) => r.answers[name] === value });
    }
    // A condition is evaluated against the answers known before the variable is resolved.
    if (definition.condition) conditionTargets(`condition of ${name}`, definition.condition, (r) => r.answers);
  }
  const full = (r: ResolvedAnswers): object => ({ ...r.answers, ...r.computed });
  template.prompts.forEach((prompt) => {
    if (prompt.when) conditionTargets(`when of prompt ${prompt.name}`, prompt.when, full);
  });
  (template.manifest.files ?? []).forEach((rule) => conditionTargets(`files rule ${rule.path}`, rule.when, full));
  return targets;
}

/** What test generation tries, in order, for a variable the user must answer (it has no default). */
function sampleValues(template: LoadedTemplate, name: string, definition: VariableDefinition): unknown[] {
  const domain = domainOf(template, name, definition);
  if (definition.type === 'array') return domain ? [[domain[0]], []] : [[], [name]];
  if (domain) return domain;
  switch (definition.type) {
    case 'boolean':
      return [false, true];
    case 'number':
    case 'integer':
      return [0, 1];
    case 'object':
      return [{}];
    default:
      return [name, 'example', 'x', '0'];
  }
}

/** True when resolving `given` finds nothing wrong with the answer to `name` (other answers may still be missing). */
function answerAccepted(template: LoadedTemplate, given: Answers, name: string, evaluator: ExpressionEvaluator): boolean {
  try {
    resolveAnswers(template, given, { evaluator, withhold: untestedSecrets(template) });
    return true;
  } catch (error) {
    if (!(error instanceof AnswersError)) return false;
    return !error.problems.some((problem) => problem.name === name || problem.name.startsWith(`${name}.`) || problem.name.startsWith(`${name}[`));
  }
}

/**
 * Answers for the variables that have no default, which a user must give and test generation has no
 * user to ask: the first of a few plain values (the first enum value, false, 0, the variable's own
 * name, "example", ...) that its rules accept. A variable none of them fits stays unanswered (the
 * sets then fail to resolve, as before); a secret without a default renders empty instead.
 */
function sampleAnswers(template: LoadedTemplate, evaluator: ExpressionEvaluator): Answers {
  const samples: Answers = {};
  const withheld = untestedSecrets(template);
  for (const name of template.variableOrder) {
    const definition = template.variables[name];
    if (!definition || definition.default !== undefined || withheld.has(name)) continue;
    const value = sampleValues(template, name, definition).find((candidate) => answerAccepted(template, { ...samples, [name]: candidate }, name, evaluator));
    if (value !== undefined) samples[name] = value;
  }
  return samples;
}

/** Answer sets that try every value of every select-like variable with the most features on. */
function candidateSets(template: LoadedTemplate, evaluator: ExpressionEvaluator): { name: string; given: Answers }[] {
  const samples = sampleAnswers(template, evaluator);
  return candidatesOverDefaults(template, evaluator).map((candidate) => ({ name: candidate.name, given: { ...samples, ...candidate.given } }));
}

/** The candidate answer sets, each over the defaults (a variable without one is answered by `candidateSets`). */
function candidatesOverDefaults(template: LoadedTemplate, evaluator: ExpressionEvaluator): { name: string; given: Answers }[] {
  const everything: Answers = {};
  const nothing: Answers = {};
  const selects: { name: string; values: unknown[] }[] = [];
  for (const name of template.variableOrder) {
    const definition = template.variables[name];
    if (!definition) continue;
    const domain = domainOf(template, name, definition);
    if (definition.type === 'array' && domain) {
      everything[name] = [...domain];
      nothing[name] = [];
    } else if (domain) {
      selects.push({ name, values: domain });
    } else if (definition.type === 'boolean') {
      everything[name] = !(definition.default ?? false);
      nothing[name] = definition.default ?? false;
    }
  }
  const rounds = Math.max(1, ...selects.map((s) => s.values.length));
  const candidates: { name: string; given: Answers }[] = [{ name: 'defaults', given: {} }];
  for (let round = 0; round < rounds; round++) {
    const given: Answers = { ...everything };
    for (const select of selects) given[select.name] = select.values[round % select.values.length];
    candidates.push({ name: `all options, choice ${round + 1}`, given });
  }
  candidates.push({ name: 'no options', given: nothing });
  // A condition comparing a variable with a literal (`port > 1024`, `license == "MIT"`) is tried
  // with answers on both sides of it, over the defaults and over all options.
  for (const { name, value } of literalAnswers(template, evaluator)) {
    const shown = Array.isArray(value) ? `[${value.map(String).join(',')}]` : JSON.stringify(value);
    candidates.push({ name: `${name}=${shown}`, given: { [name]: value } });
    candidates.push({ name: `all options, ${name}=${shown}`, given: { ...everything, [name]: value } });
  }
  return candidates;
}

/** Every expression that decides something: variable conditions, prompt `when`s, `files` rules. */
function conditionsOf(template: LoadedTemplate): string[] {
  return [
    ...Object.values(template.variables).flatMap((definition) => (definition.condition ? [definition.condition] : [])),
    ...template.prompts.flatMap((prompt) => (prompt.when ? [prompt.when] : [])),
    ...(template.manifest.files ?? []).map((rule) => rule.when),
  ];
}

/** Answers taken from the literals the template's conditions compare variables with, typed like each variable. */
function literalAnswers(template: LoadedTemplate, evaluator: ExpressionEvaluator): { name: string; value: unknown }[] {
  const answers: { name: string; value: unknown }[] = [];
  const seen = new Set<string>();
  const add = (name: string, value: unknown): void => {
    const key = `${name}\0${JSON.stringify(value)}`;
    if (seen.has(key)) return;
    seen.add(key);
    answers.push({ name, value });
  };
  for (const expression of conditionsOf(template)) {
    for (const { name, operator, value } of comparisonsOf(expression, evaluator.engine)) {
      const definition = Object.hasOwn(template.variables, name) ? template.variables[name] : undefined;
      if (!definition) continue;
      const type = definition.type;
      if (type === 'array') {
        if (operator === 'contains') add(name, [value]);
      } else if ((type === 'number' || type === 'integer') && typeof value === 'number') {
        for (const near of [value - 1, value, value + 1]) add(name, near);
      } else if (type === 'string' && typeof value === 'string') {
        add(name, value);
        if (operator === 'contains') add(name, '');
        // The other side of an (in)equality, which the default may not be (`author == "me"` with the default "me").
        if (operator === '==' || operator === '!=') {
          add(name, '');
          add(name, value === 'other' ? 'another' : 'other');
        }
      } else if (type === undefined || (type === 'boolean' && typeof value === 'boolean')) {
        add(name, value);
      }
    }
  }
  return answers;
}

/**
 * Picks answer sets for test generation: the defaults, then as few further sets as it takes
 * (greedily) to reach every select and multiselect value and both outcomes of every condition,
 * `when` and files rule. Sets that fail validation are never used.
 */
export function buildAnswerMatrix(template: LoadedTemplate, evaluator = new ExpressionEvaluator()): AnswerMatrix {
  const targets = targetsOf(template);
  const covered = new Set<string>();
  const sets: AnswerSet[] = [];
  for (const candidate of candidateSets(template, evaluator)) {
    let resolved: ResolvedAnswers;
    try {
      resolved = resolveAnswers(template, candidate.given, { evaluator, withhold: untestedSecrets(template) });
    } catch {
      continue;
    }
    const reached = targets.filter((t) => t.reached(resolved, evaluator)).map((t) => t.key);
    const fresh = reached.filter((key) => !covered.has(key));
    if (candidate.name !== 'defaults' && fresh.length === 0) continue;
    for (const key of reached) covered.add(key);
    sets.push({ name: `set ${sets.length + 1} (${candidate.name})`, given: candidate.given, covers: reached });
  }
  return { sets, uncovered: targets.map((t) => t.key).filter((key) => !covered.has(key)) };
}

/**
 * Problems a generated file shows: a JSON file that does not parse (comments and trailing commas
 * allowed in JSONC files: see `isJsoncPath`, and `isJsonc` for a template's `jsonc` globs), at its
 * line. Braces in the output are whatever the template's Liquid produced (`{% raw %}`, a verbatim
 * file, an answer): a Liquid mistake is an error of rendering or of `validate`, never a brace left
 * in a file.
 */
function checkGeneratedFile(relativePath: string, content: Buffer, isJsonc?: (relativePath: string) => boolean): string[] {
  if (!isJsonChecked(relativePath) || isBinary(content)) return [];
  return jsonProblems(relativePath, content.toString('utf8'), isJsonc);
}

const OUTPUT_TAIL = 4096;

/** Runs a shell command in a folder with a time limit; kills the whole process group on timeout. */
function runCommand(command: string, cwd: string, timeoutMs: number): Promise<CommandOutcome> {
  return new Promise((resolve) => {
    // node:child_process is loaded by the first run, not at import.
    const child = process.getBuiltinModule('node:child_process').spawn(command, { cwd, shell: true, detached: process.platform !== 'win32', stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let timedOut = false;
    const append = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-OUTPUT_TAIL);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid !== undefined) process.kill(process.platform === 'win32' ? child.pid : -child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.on('error', (error) => append(Buffer.from(String(error))));
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ command, exitCode, timedOut, output });
    });
  });
}

/** Copies `files` (relative, `/`-separated) of the template's tree into `into`, with their modes: the template as its archive will hold it. */
async function copyPackedFiles(tree: TemplateTree, into: string, files: readonly string[]): Promise<void> {
  for (const file of files) {
    const target = path.join(into, ...file.split('/'));
    if (!isInside(into, target) || tree.kindOf(file) !== 'file') throw new Error(`packed file ${JSON.stringify(file)} is not a file inside the template folder`);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, await tree.bytes(file));
    await chmod(target, await tree.mode(file));
  }
}

/**
 * Test-generates a template: renders it into temporary folders for each answer set of the
 * matrix, checks the files, and runs the test command (if any) inside each project. With
 * `packedFiles`, from those files of the template only (what its archive will hold).
 */
export async function testTemplate(dir: string | TemplateTree | LoadedTemplate, options: TestTemplateOptions = {}): Promise<TestTemplateReport> {
  const evaluator = new ExpressionEvaluator();
  const workDir = await mkdtemp(path.join(tmpdir(), 'template-test-'));
  const reports: AnswerSetReport[] = [];
  try {
    let template: LoadedTemplate;
    if (options.packedFiles) {
      const staged = path.join(workDir, 'template');
      const tree = typeof dir === 'string' || dir instanceof TemplateTree ? await templateTreeOf(dir) : dir.tree;
      await copyPackedFiles(tree, staged, options.packedFiles.files);
      template = await loadTemplate(staged, evaluator);
    } else {
      template = typeof dir === 'string' || dir instanceof TemplateTree ? await loadTemplate(dir, evaluator) : dir;
    }
    const matrix = buildAnswerMatrix(template, evaluator);
    const isJsonc = jsoncRule(template.manifest.jsonc);
    const command = options.command ?? template.manifest.test?.command;
    const timeoutMs = options.timeoutMs ?? (template.manifest.test?.timeoutSeconds ?? 300) * 1000;
    for (const [index, set] of matrix.sets.entries()) {
      const projectDir = path.join(workDir, `set-${index + 1}`);
      const report: AnswerSetReport = { ...set, answers: {}, computed: {}, passed: false, problems: [], files: 0 };
      reports.push(report);
      try {
        const result = await generateProject(template, projectDir, set.given, { evaluator, withhold: untestedSecrets(template) });
        report.answers = result.answers;
        report.computed = result.computed;
        report.files = result.files.length;
        for (const file of result.files) {
          report.problems.push(...checkGeneratedFile(file.path, await readFile(path.join(projectDir, file.path)), isJsonc));
        }
        if (result.tasks.length > 0 && options.runTasks !== false) {
          report.tasks = await runTasks(result.tasks, projectDir, options.taskTimeoutMs !== undefined ? { timeoutMs: options.taskTimeoutMs } : {});
          for (const task of report.tasks.filter((t) => t.status === 'failed' || t.status === 'timed-out')) {
            report.problems.push(`task "${task.description}" ${task.status === 'timed-out' ? 'timed out' : task.error ?? `exited with ${String(task.exitCode)}`}: ${task.run.join(' ')}`);
          }
        }
        if (command) {
          report.command = await runCommand(command, projectDir, timeoutMs);
          if (report.command.timedOut) report.problems.push(`command timed out after ${timeoutMs} ms: ${command}`);
          else if (report.command.exitCode !== 0) {
            report.problems.push(`command exited with ${String(report.command.exitCode)}: ${command}`);
          }
        }
      } catch (error) {
        // A file whose Liquid does not render is named with its line: `src/app.ts:12: its content cannot be rendered: ...`.
        report.problems.push(error instanceof RenderError && error.line !== undefined ? `${error.file}:${error.line}: ${error.reason}` : errorMessage(error));
      }
      report.passed = report.problems.length === 0;
      if (options.keep) report.projectDir = projectDir;
    }
    return {
      template: { name: template.manifest.name, version: template.manifest.version },
      // An outcome no valid answer set reaches is a condition that can never (or always) hold: a mistake.
      passed: reports.length > 0 && reports.every((r) => r.passed) && matrix.uncovered.length === 0,
      sets: reports,
      uncovered: matrix.uncovered,
      ...(options.packedFiles ? { leftOut: [...(options.packedFiles.leftOut ?? [])] } : {}),
    };
  } finally {
    if (!options.keep) await rm(workDir, { recursive: true, force: true });
  }
}
