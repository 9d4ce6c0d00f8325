import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import { isVersionControlName, reservedPathProblem } from '../core/reserved-paths.js';
import type { SchemaName } from '../core/schemas.js';
import { escapePointerSegment } from '../core/json-source.js';
import type { RuleViolation } from '../core/messages.js';
import { checkJsonText, locateViolations, type CheckedJson, type ValidationProblem } from '../core/validation.js';
import { isRecord } from '../core/is-record.js';
import { checkContent, checkParseLimit, type ContentScope, type ContentText, type PartialsText } from './content-check.js';
import { createEngine, ExpressionEvaluator } from './expression.js';
import { checkExpressions, scopeNames } from './expression-check.js';
import { checkMigrationChain, checkMigrationStep, type StepVersions } from './migration-check.js';
import { isInside, resolveInsideRoot } from './paths.js';
import { analysisBudget, judgePattern } from './patterns.js';
import { liquidTextOf, verbatimRule } from './text-files.js';

export const MANIFEST_FILE = 'template.json';
export const VARIABLES_FILE = 'template.vars.json';
export const PROMPTS_FILE = 'template.prompts.json';
/** The folder of a template's declarative migration steps. */
export const MIGRATIONS_FOLDER = 'migrations';
/** The largest JSON file of a template (as the server takes a manifest part). */
const MAX_JSON_FILE_BYTES = 1024 * 1024;
export const REQUIRED_FILES = [MANIFEST_FILE, 'README.md', 'CHANGELOG.md', VARIABLES_FILE, PROMPTS_FILE] as const;

/** A problem in a template file (see ValidationProblem: file, pointer, message, code, position). */
export type TemplateValidationError = ValidationProblem;

export interface TemplateValidationResult {
  valid: boolean;
  errors: TemplateValidationError[];
}

export interface ValidateOptions {
  /**
   * Also read the content folder (Liquid syntax, unknown filters and unknown variables of every
   * text file and path name) and check the migration steps beyond their schema (Liquid, paths,
   * versions, overlapping and unreachable steps). Default true; loading a template to generate
   * from it skips these (rendering reports a broken file on its own).
   */
  deep?: boolean;
}

/** The content folder when the manifest names none. */
const DEFAULT_CONTENT = 'template';

async function kindOf(file: string): Promise<'file' | 'directory' | 'other' | 'missing'> {
  try {
    const info = await stat(file);
    if (info.isFile()) return 'file';
    if (info.isDirectory()) return 'directory';
    return 'other';
  } catch {
    return 'missing';
  }
}

/** A JSON document of the template, read and checked against its schema. */
async function checkJsonFile(
  root: string,
  file: string,
  schema: SchemaName,
  errors: TemplateValidationError[],
): Promise<CheckedJson | undefined> {
  let text: string;
  try {
    const size = (await stat(path.join(root, file))).size;
    if (size > MAX_JSON_FILE_BYTES) {
      errors.push({ file, pointer: '', message: `is ${size} bytes; a template's JSON files are at most ${MAX_JSON_FILE_BYTES} bytes (1 MiB) each`, code: 'FILE_TOO_LARGE' });
      return undefined;
    }
    text = await readFile(path.join(root, file), 'utf8');
  } catch {
    return undefined; // reported as a missing file by the caller
  }
  const checked = checkJsonText(file, text, schema);
  errors.push(...checked.problems);
  return checked;
}

/**
 * Names no variable, computed value or prompt may have: every JavaScript object already has a
 * property by that name, so an answer under it could not be told from that property.
 */
const RESERVED_VARIABLE_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);


/** Every variable, property, computed value and prompt of the two files named by a reserved name. */
function reservedNames(variables: CheckedJson | undefined, variablesFile: string, prompts: CheckedJson | undefined, promptsFile: string): TemplateValidationError[] {
  const found: RuleViolation[] = [];
  const problem = (pointer: string, name: string, what: string): RuleViolation => ({
    pointer,
    code: 'RESERVED_NAME',
    message: `${what} ${JSON.stringify(name)} has a reserved name (${[...RESERVED_VARIABLE_NAMES].join(', ')} name properties every object has): rename it`,
  });
  const walk = (properties: unknown, pointer: string, what: string): void => {
    if (!isRecord(properties)) return;
    for (const [name, definition] of Object.entries(properties)) {
      const at = `${pointer}/${escapePointerSegment(name)}`;
      if (RESERVED_VARIABLE_NAMES.has(name)) found.push(problem(at, name, what));
      if (isRecord(definition)) walk(definition.properties, `${at}/properties`, 'property');
    }
  };
  const problems: TemplateValidationError[] = [];
  if (isRecord(variables?.value)) {
    walk(variables.value.variables, '/variables', 'variable');
    for (const name of Object.keys(isRecord(variables.value.computed) ? variables.value.computed : {})) {
      if (RESERVED_VARIABLE_NAMES.has(name)) found.push(problem(`/computed/${escapePointerSegment(name)}`, name, 'computed value'));
    }
    problems.push(...locateViolations(variablesFile, found.splice(0), variables.positions));
  }
  if (isRecord(prompts?.value) && Array.isArray(prompts.value.prompts)) {
    prompts.value.prompts.forEach((prompt: unknown, index) => {
      if (isRecord(prompt) && typeof prompt.name === 'string' && RESERVED_VARIABLE_NAMES.has(prompt.name)) found.push(problem(`/prompts/${index}/name`, prompt.name, 'prompt'));
    });
    problems.push(...locateViolations(promptsFile, found, prompts.positions));
  }
  return problems;
}

/**
 * Every validation pattern of the two files that may not run (patterns.ts): unsupported or prone to
 * catastrophic backtracking. One that does not compile is the schema's finding (`format: regex`).
 */
function refusedPatterns(variables: CheckedJson | undefined, variablesFile: string, prompts: CheckedJson | undefined, promptsFile: string): TemplateValidationError[] {
  const budget = analysisBudget(); // bounds the time all of one template's patterns take to judge
  const check = (found: RuleViolation[], pointer: string, source: unknown, what: string): void => {
    if (typeof source !== 'string') return;
    const judgement = judgePattern(source, budget);
    if (judgement.runnable || judgement.code === 'INVALID_REGEX') return;
    found.push({ pointer, code: judgement.code, message: `${what} ${JSON.stringify(source)} is refused: ${judgement.reason}` });
  };
  const problems: TemplateValidationError[] = [];
  if (isRecord(variables?.value)) {
    const found: RuleViolation[] = [];
    const walk = (definition: unknown, pointer: string, label: string): void => {
      if (!isRecord(definition)) return;
      check(found, `${pointer}/validation`, definition.validation, `validation of variable "${label}"`);
      walk(definition.items, `${pointer}/items`, `${label}[]`);
      if (isRecord(definition.properties)) {
        for (const [key, property] of Object.entries(definition.properties)) walk(property, `${pointer}/properties/${escapePointerSegment(key)}`, `${label}.${key}`);
      }
    };
    for (const [name, definition] of Object.entries(isRecord(variables.value.variables) ? variables.value.variables : {})) {
      walk(definition, `/variables/${escapePointerSegment(name)}`, name);
    }
    problems.push(...locateViolations(variablesFile, found, variables.positions));
  }
  if (isRecord(prompts?.value) && Array.isArray(prompts.value.prompts)) {
    const found: RuleViolation[] = [];
    prompts.value.prompts.forEach((prompt: unknown, index) => {
      if (!isRecord(prompt)) return;
      const name = typeof prompt.name === 'string' ? prompt.name : `#${index}`;
      check(found, `/prompts/${index}/validate`, prompt.validate, `validate of prompt "${name}"`);
    });
    problems.push(...locateViolations(promptsFile, found, prompts.positions));
  }
  return problems;
}

/** What content files may name: every variable and computed value, and the properties of object variables. */
function contentScope(variables: CheckedJson | undefined, variablesFile: string): ContentScope | undefined {
  const document = variables?.value;
  if (!isRecord(document) || !isRecord(document.variables)) return undefined;
  const names = scopeNames(document);
  const properties = new Map<string, ReadonlySet<string>>();
  for (const [name, definition] of Object.entries(document.variables)) {
    if (!isRecord(definition) || !isRecord(definition.properties) || Object.keys(definition.properties).length === 0) continue;
    // An object's default may carry properties the definition does not list; they are there too.
    properties.set(name, new Set([...Object.keys(definition.properties), ...Object.keys(isRecord(definition.default) ? definition.default : {})]));
  }
  return { names: new Set([...names.variables, ...names.computed]), properties, variablesFile };
}

/**
 * Every path under a folder and the text of each file rendered as Liquid (not binary, valid UTF-8,
 * not `verbatim`); symbolic links are not followed.
 */
async function readContent(dir: string, verbatim: (source: string) => boolean = () => false): Promise<{ paths: string[]; texts: ContentText[] }> {
  const paths: string[] = [];
  const texts: ContentText[] = [];
  const walk = async (relative: string): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(path.join(dir, relative), { withFileTypes: true });
    } catch {
      return; // a missing content folder is reported as such
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const source = relative === '' ? entry.name : `${relative}/${entry.name}`;
      paths.push(source);
      if (entry.isDirectory()) await walk(source);
      else if (entry.isFile()) {
        if (verbatim(source)) continue;
        const bytes = await readFile(path.join(dir, source)).catch(() => undefined);
        // Binary files and files that are not UTF-8 are copied, never rendered.
        const text = bytes && liquidTextOf(bytes);
        if (text !== undefined) texts.push({ path: source, text });
      }
    }
  };
  await walk('');
  return { paths, texts };
}

/**
 * The manifest's `partials` folder and its Liquid texts; undefined without one. A partials folder
 * inside the content folder (or the content folder itself) would be generated too: an error.
 */
async function readPartials(
  root: string,
  folder: unknown,
  contentDir: string,
  positions: CheckedJson['positions'] | undefined,
  errors: TemplateValidationError[],
): Promise<PartialsText | undefined> {
  if (typeof folder !== 'string' || folder === '') return undefined;
  const dir = await resolveInsideRoot(root, folder);
  if (!dir || (await kindOf(dir)) !== 'directory') return undefined; // reported with the manifest's other paths
  if (isInside(contentDir, dir)) {
    const message = `names a folder inside the content folder (got ${JSON.stringify(folder)}): its files would be generated too; move the partials out of the content folder`;
    errors.push(...locateViolations(MANIFEST_FILE, [{ pointer: '/partials', message, code: 'PARTIALS_IN_CONTENT' }], positions));
    return undefined;
  }
  const { texts } = await readContent(dir);
  return { folder: path.posix.normalize(folder.replace(/\\/g, '/')).replace(/\/$/, ''), texts };
}

/** The migrations folder's step files: schema, content (Liquid, paths, versions) and the steps together. */
async function checkMigrations(root: string, errors: TemplateValidationError[], deep: boolean): Promise<void> {
  if ((await kindOf(path.join(root, MIGRATIONS_FOLDER))) !== 'directory') return;
  const stepFiles = (await readdir(path.join(root, MIGRATIONS_FOLDER))).filter((f) => f.endsWith('.json')).sort();
  const engine = createEngine();
  const versions: StepVersions[] = [];
  const positions = new Map<string, CheckedJson['positions']>();
  for (const name of stepFiles) {
    const file = `${MIGRATIONS_FOLDER}/${name}`;
    const checked = await checkJsonFile(root, file, 'migration-step', errors);
    if (!deep || !checked || !isRecord(checked.value)) continue;
    errors.push(...locateViolations(file, checkMigrationStep(checked.value, engine), checked.positions));
    const { fromVersion, toVersion } = checked.value;
    if (typeof fromVersion === 'string' && typeof toVersion === 'string') versions.push({ file, fromVersion, toVersion });
    positions.set(file, checked.positions);
  }
  for (const { file, ...violation } of deep ? checkMigrationChain(versions) : []) {
    errors.push(...locateViolations(file, [violation], positions.get(file)));
  }
}

interface NamedPath {
  pointer: string;
  value: string;
  kind: 'file' | 'directory';
}

function namedPaths(manifest: unknown): NamedPath[] {
  if (typeof manifest !== 'object' || manifest === null) return [];
  const m = manifest as Record<string, unknown>;
  const pick = (pointer: string, value: unknown, kind: 'file' | 'directory'): NamedPath[] =>
    typeof value === 'string' && value !== '' ? [{ pointer, value, kind }] : [];
  const object = (value: unknown): Record<string, unknown> =>
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  return [
    ...pick('/changelog', m.changelog, 'file'),
    ...pick('/customization/variables', object(m.customization).variables, 'file'),
    ...pick('/customization/prompts', object(m.customization).prompts, 'file'),
    ...pick('/migration/guide', object(m.migration).guide, 'file'),
    ...pick('/content', m.content, 'directory'),
    ...pick('/partials', m.partials, 'directory'),
  ];
}

/**
 * Checks a template folder: the five required files, the manifest, variables and prompts files
 * against their schemas (every error, not just the first), that the paths the manifest names
 * exist inside the template, reserved names, and that every condition, `when` and computed value
 * is well formed and names only known variables. Unless `options.deep` is false, also every
 * content file and path name (Liquid syntax, unknown filters, unknown variables) and the
 * migration steps (Liquid, paths, versions, overlapping and unreachable steps). Problems carry
 * their line and column. Never throws for a bad template; only for an I/O failure it cannot
 * explain.
 */
export async function validateTemplate(dir: string, options: ValidateOptions = {}): Promise<TemplateValidationResult> {
  const deep = options.deep ?? true;
  const root = path.resolve(dir);
  const errors: TemplateValidationError[] = [];
  const rootKind = await kindOf(root);
  if (rootKind !== 'directory') {
    const message = rootKind === 'missing' ? `template folder ${dir} does not exist` : `${dir} is not a folder`;
    return { valid: false, errors: [{ file: '.', pointer: '', message, code: 'NOT_A_DIRECTORY' }] };
  }

  for (const file of REQUIRED_FILES) {
    const kind = await kindOf(path.join(root, file));
    if (kind !== 'file') {
      const what = file === MANIFEST_FILE ? 'the template manifest is missing' : 'required file is missing';
      const message = kind === 'missing' ? what : 'must be a file';
      errors.push({ file, pointer: '', message, code: 'MISSING_FILE' });
    }
  }

  const manifestChecked = await checkJsonFile(root, MANIFEST_FILE, 'template-manifest', errors);
  const manifest = manifestChecked?.value;
  const customization = (manifest as { customization?: { variables?: unknown; prompts?: unknown } } | undefined)?.customization;
  const variablesFile = typeof customization?.variables === 'string' ? customization.variables : VARIABLES_FILE;
  const promptsFile = typeof customization?.prompts === 'string' ? customization.prompts : PROMPTS_FILE;

  for (const named of namedPaths(manifest)) {
    const target = await resolveInsideRoot(root, named.value);
    if (!target) {
      const message = `must be a relative path inside the template (got ${JSON.stringify(named.value)})`;
      errors.push(...locateViolations(MANIFEST_FILE, [{ pointer: named.pointer, message, code: 'PATH_OUTSIDE_TEMPLATE' }], manifestChecked?.positions));
    } else if ((await kindOf(target)) !== named.kind) {
      const message = `names ${named.kind === 'file' ? 'a file' : 'a folder'} that does not exist (got ${JSON.stringify(named.value)})`;
      errors.push(...locateViolations(MANIFEST_FILE, [{ pointer: named.pointer, message, code: 'FILE_NOT_FOUND' }], manifestChecked?.positions));
    }
  }

  // A customized path outside the template was reported above; it is not read.
  const variables = (await resolveInsideRoot(root, variablesFile)) === undefined ? undefined : await checkJsonFile(root, path.normalize(variablesFile), 'template-variables', errors);
  const prompts = (await resolveInsideRoot(root, promptsFile)) === undefined ? undefined : await checkJsonFile(root, path.normalize(promptsFile), 'template-prompts', errors);
  errors.push(...reservedNames(variables, path.normalize(variablesFile), prompts, path.normalize(promptsFile)));
  errors.push(...refusedPatterns(variables, path.normalize(variablesFile), prompts, path.normalize(promptsFile)));

  // Every condition, when and computed value: well formed, naming only what it can see.
  const evaluator = new ExpressionEvaluator();
  const documents = {
    ...(manifestChecked?.value !== undefined ? { manifest: { file: MANIFEST_FILE, value: manifestChecked.value } } : {}),
    ...(variables?.value !== undefined ? { variables: { file: path.normalize(variablesFile), value: variables.value } } : {}),
    ...(prompts?.value !== undefined ? { prompts: { file: path.normalize(promptsFile), value: prompts.value } } : {}),
  };
  const positionsOf = new Map([
    [MANIFEST_FILE, manifestChecked?.positions],
    [path.normalize(variablesFile), variables?.positions],
    [path.normalize(promptsFile), prompts?.positions],
  ]);
  for (const { file, ...violation } of checkExpressions(documents, evaluator)) {
    errors.push(...locateViolations(file, [violation], positionsOf.get(file)));
  }

  if (deep && isRecord(manifest)) {
    const folder = typeof manifest.content === 'string' && manifest.content !== '' ? manifest.content : DEFAULT_CONTENT;
    const contentDir = await resolveInsideRoot(root, folder);
    if (contentDir && (await kindOf(contentDir)) === 'directory') {
      const verbatim = verbatimRule(Array.isArray(manifest.verbatim) ? manifest.verbatim.filter((glob): glob is string => typeof glob === 'string' && glob !== '') : undefined);
      const content = await readContent(contentDir, verbatim);
      const partials = await readPartials(root, manifest.partials, contentDir, manifestChecked?.positions, errors);
      const contentFolder = path.posix.normalize(folder.replace(/\\/g, '/')).replace(/\/$/, '');
      for (const reserved of content.paths.filter((p) => isVersionControlName(p.slice(p.lastIndexOf('/') + 1)))) {
        errors.push({ file: `${contentFolder}/${reserved}`, pointer: '', code: 'RESERVED_PATH', message: reservedPathProblem(reserved) ?? 'is reserved' });
      }
      errors.push(...checkContent(contentFolder, content.texts, content.paths, contentScope(variables, path.normalize(variablesFile)), evaluator.engine, partials));
      // Every text and name create parses, under the limit it parses them with: refused now, not at generation.
      errors.push(...checkParseLimit(contentFolder, content.texts, content.paths));
    }
  }

  // The message printed after generation is Liquid too, rendered with the same names (a content
  // check: generation of a template published before it still prints the default instead).
  if (deep && isRecord(manifest) && typeof manifest.nextSteps === 'string') {
    const found = checkContent('', [{ path: 'nextSteps', text: manifest.nextSteps }], [], contentScope(variables, path.normalize(variablesFile)), evaluator.engine);
    const violations = found.map((problem) => ({ pointer: '/nextSteps', code: problem.code, message: problem.message }));
    errors.push(...locateViolations(MANIFEST_FILE, violations, manifestChecked?.positions));
  }

  // Declarative migration steps ship in migrations/, one JSON file per step.
  await checkMigrations(root, errors, deep);

  return { valid: errors.length === 0, errors };
}
