import path from 'node:path';

import { isVersionControlName, reservedPathProblem } from '../core/reserved-paths.js';
import { schemaErrors, type SchemaName } from '../core/schemas.js';
import { describeSchemaErrors } from '../core/messages.js';
import { escapePointerSegment } from '../core/json-source.js';
import type { RuleViolation } from '../core/messages.js';
import { locateViolations, type CheckedJson, type ValidationProblem } from '../core/validation.js';
import { isRecord } from '../core/is-record.js';
import { checkContent, checkParseLimit, type ContentScope, type ContentText, type PartialsText } from './content-check.js';
import { createEngine, ExpressionEvaluator } from './expression.js';
import { checkExpressions, scopeNames } from './expression-check.js';
import { checkMigrationChain, checkMigrationStep, type StepVersions } from './migration-check.js';
import { analysisBudget, judgePattern } from './patterns.js';
import { verbatimRule } from './text-files.js';
import { MANIFEST_FILE, MAX_JSON_FILE_BYTES, templateTreeOf, treePath, type TemplateTree } from './tree.js';

export { MANIFEST_FILE, MAX_JSON_FILE_BYTES };
export const VARIABLES_FILE = 'template.vars.json';
export const PROMPTS_FILE = 'template.prompts.json';
/** The folder of a template's declarative migration steps. */
export const MIGRATIONS_FOLDER = 'migrations';
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

/** A JSON document of the template, as the tree read it, checked against its schema. */
async function checkJsonFile(
  tree: TemplateTree,
  file: string,
  schema: SchemaName,
  errors: TemplateValidationError[],
): Promise<CheckedJson | undefined> {
  const read = await tree.json(file);
  if (read.problem?.code === 'FILE_TOO_LARGE') {
    errors.push({ file, pointer: '', message: read.problem.message, code: 'FILE_TOO_LARGE' });
    return undefined;
  }
  if (read.problem?.code === 'INVALID_JSON') {
    const { line, column } = read.problem;
    errors.push({ file, pointer: '', message: read.problem.message, code: 'INVALID_JSON', ...(line !== undefined && column !== undefined ? { line, column } : {}) });
    return { problems: [] };
  }
  // A missing or unreadable file is reported as a missing file by the caller.
  if (read.positions === undefined) return undefined;
  // Parsed once, by the tree; checked here.
  const problems = locateViolations(file, describeSchemaErrors(schemaErrors(schema, read.value)), read.positions);
  errors.push(...problems);
  return { value: read.value, positions: read.positions, problems };
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
 * Every path under a folder of the tree and the text of each file rendered as Liquid
 * (`text-files.ts`: UTF-8 text, not binary; not `verbatim`).
 */
async function readContent(tree: TemplateTree, folder: string, verbatim: (source: string) => boolean = () => false): Promise<{ paths: string[]; texts: ContentText[] }> {
  const paths: string[] = [];
  const texts: ContentText[] = [];
  const base = treePath(folder) ?? '';
  for (const entry of tree.below(folder)) {
    paths.push(entry.path);
    if (entry.kind !== 'file' || entry.unread || verbatim(entry.path)) continue;
    const text = await tree.liquidText(base === '' ? entry.path : `${base}/${entry.path}`).catch(() => undefined);
    if (text !== undefined) texts.push({ path: entry.path, text });
  }
  return { paths, texts };
}

/**
 * The manifest's `partials` folder and its Liquid texts; undefined without one. A partials folder
 * inside the content folder (or the content folder itself) would be generated too: an error.
 */
async function readPartials(
  tree: TemplateTree,
  folder: unknown,
  contentFolder: string,
  positions: CheckedJson['positions'] | undefined,
  errors: TemplateValidationError[],
): Promise<PartialsText | undefined> {
  if (typeof folder !== 'string' || folder === '') return undefined;
  const key = treePath(folder);
  if (key === undefined || tree.kindOf(key) !== 'directory') return undefined; // reported with the manifest's other paths
  const contentKey = treePath(contentFolder) ?? '';
  if (contentKey === '' || key === contentKey || key.startsWith(`${contentKey}/`)) {
    const message = `names a folder inside the content folder (got ${JSON.stringify(folder)}): its files would be generated too; move the partials out of the content folder`;
    errors.push(...locateViolations(MANIFEST_FILE, [{ pointer: '/partials', message, code: 'PARTIALS_IN_CONTENT' }], positions));
    return undefined;
  }
  const { texts } = await readContent(tree, key);
  return { folder: path.posix.normalize(folder.replace(/\\/g, '/')).replace(/\/$/, ''), texts };
}

/** The migrations folder's step files: schema, content (Liquid, paths, versions) and the steps together. */
async function checkMigrations(tree: TemplateTree, errors: TemplateValidationError[], deep: boolean): Promise<void> {
  if (tree.kindOf(MIGRATIONS_FOLDER) !== 'directory') return;
  const stepFiles = tree
    .below(MIGRATIONS_FOLDER)
    .filter((entry) => !entry.path.includes('/') && entry.path.endsWith('.json'))
    .map((entry) => entry.path)
    .sort();
  const engine = createEngine();
  const versions: StepVersions[] = [];
  const positions = new Map<string, CheckedJson['positions']>();
  for (const name of stepFiles) {
    const file = `${MIGRATIONS_FOLDER}/${name}`;
    const checked = await checkJsonFile(tree, file, 'migration-step', errors);
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
export async function validateTemplate(dir: string | TemplateTree, options: ValidateOptions = {}): Promise<TemplateValidationResult> {
  const deep = options.deep ?? true;
  const tree = await templateTreeOf(dir);
  const shown = tree.given;
  const errors: TemplateValidationError[] = [];
  if (!tree.isFolder) {
    const message = tree.rootKind === 'missing' ? `template folder ${shown} does not exist` : `${shown} is not a folder`;
    return { valid: false, errors: [{ file: '.', pointer: '', message, code: 'NOT_A_DIRECTORY' }] };
  }

  for (const file of REQUIRED_FILES) {
    const kind = tree.kindOf(file);
    // A required file the reader refused (a link out of the template, ...) is reported as that.
    if (kind !== 'file' && !tree.problemAt(file)) {
      const what = file === MANIFEST_FILE ? 'the template manifest is missing' : 'required file is missing';
      errors.push({ file, pointer: '', message: kind === 'missing' ? what : 'must be a file', code: 'MISSING_FILE' });
    }
  }

  const manifestChecked = await checkJsonFile(tree, MANIFEST_FILE, 'template-manifest', errors);
  const manifest = manifestChecked?.value;
  const customization = (manifest as { customization?: { variables?: unknown; prompts?: unknown } } | undefined)?.customization;
  const variablesFile = typeof customization?.variables === 'string' ? customization.variables : VARIABLES_FILE;
  const promptsFile = typeof customization?.prompts === 'string' ? customization.prompts : PROMPTS_FILE;

  // Paths the manifest names: inside the template (a link out of it counts as outside), and there.
  const reportedAt = new Set<string>();
  for (const named of namedPaths(manifest)) {
    const key = treePath(named.value);
    const refused = key === undefined ? undefined : tree.problemAt(key);
    if (key === undefined || refused?.code === 'LINK_OUTSIDE_TEMPLATE') {
      if (refused) reportedAt.add(refused.path);
      const message = `must be a relative path inside the template (got ${JSON.stringify(named.value)})`;
      errors.push(...locateViolations(MANIFEST_FILE, [{ pointer: named.pointer, message, code: 'PATH_OUTSIDE_TEMPLATE' }], manifestChecked?.positions));
    } else if (tree.kindOf(key) !== named.kind) {
      const message = `names ${named.kind === 'file' ? 'a file' : 'a folder'} that does not exist (got ${JSON.stringify(named.value)})`;
      errors.push(...locateViolations(MANIFEST_FILE, [{ pointer: named.pointer, message, code: 'FILE_NOT_FOUND' }], manifestChecked?.positions));
    }
  }
  // The reader's refusals (links out of the folder, broken or looping links, special files), each once.
  for (const problem of tree.problems) {
    if (!reportedAt.has(problem.path)) errors.push({ file: problem.path, pointer: '', message: problem.reason, code: problem.code });
  }

  // A customized path outside the template was reported above; it is not read.
  const variables = treePath(variablesFile) === undefined ? undefined : await checkJsonFile(tree, path.normalize(variablesFile), 'template-variables', errors);
  const prompts = treePath(promptsFile) === undefined ? undefined : await checkJsonFile(tree, path.normalize(promptsFile), 'template-prompts', errors);
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
    const contentKey = treePath(folder);
    if (contentKey !== undefined && tree.kindOf(contentKey) === 'directory') {
      const verbatim = verbatimRule(Array.isArray(manifest.verbatim) ? manifest.verbatim.filter((glob): glob is string => typeof glob === 'string' && glob !== '') : undefined);
      const content = await readContent(tree, contentKey, verbatim);
      const partials = await readPartials(tree, manifest.partials, contentKey, manifestChecked?.positions, errors);
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
  await checkMigrations(tree, errors, deep);

  return { valid: errors.length === 0, errors };
}
