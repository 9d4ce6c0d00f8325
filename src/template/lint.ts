/**
 * `lintTemplate(dir)`: checks a template folder beyond its schemas, for the mistakes a schema
 * cannot see (a prompt for a variable that does not exist, choices that disagree with an enum, a
 * default that breaks its own validation, an unsafe regular expression, an expression that names
 * an unknown variable, a change log without the manifest's version, a variable nothing uses).
 *
 * Every problem `validateTemplate` finds is a finding too, reported once: schema problems under
 * `schema` (naming the field), the others under their own rule ids (`expression-invalid`,
 * `unknown-reference`, `liquid-syntax`, `unknown-variable`, `regex-invalid`, `regex-unsafe`, `migration-step`);
 * see RULE_OF_VALIDATION_CODE.
 *
 * The design keeps I/O at the edges:
 *   1. `readTemplateSources(dir)` does all the reading (validation, JSON documents with their
 *      positions, the change log, the content folder's texts and path names);
 *   2. `buildLintModel(sources)` turns the raw, possibly schema-invalid documents into a defensive
 *      model (fields of the wrong type are simply absent) and parses every expression once;
 *   3. every rule in `LINT_RULES` is a small pure function from that model to findings that name a
 *      file and a JSON pointer; `runLintRules` turns pointers into line/column and sorts.
 * A rule that needs a document that could not be read or parsed finds nothing; the `schema` rule
 * reports why the document is missing. Lint never throws for a bad template.
 */
import path from 'node:path';


import {
  escapePointerSegment,
  nearestPosition,
  type SourcePosition,
} from '../core/json-source.js';
import { compareText } from '../core/listing.js';
import { VERSION_PATTERN } from '../core/versions.js';
import { findChangelogSection } from '../core/changelog.js';
import { firstLine } from '../core/errors.js';
import { isRecord } from '../core/is-record.js';
import { ExpressionEvaluator, isComputedDefault, type ExpressionKind } from './expression.js';
import { DEFAULT_CONTENT_FOLDER, dependencyOrder } from './load.js';
import { HABIT_RULES } from './lint-habits.js';
import { analysisBudget, judgePattern, matchPattern, patternSyntaxError, type AnalysisBudget } from './patterns.js';
import { holdsLiquidMarkers, verbatimRule } from './text-files.js';
import { templateTreeOf, treePath, type TemplateTree } from './tree.js';
import { standardShapeMismatches } from './standard-variables.js';
import {
  MANIFEST_FILE,
  PROMPTS_FILE,
  VARIABLES_FILE,
  validateTemplate,
  type TemplateValidationError,
} from './validate.js';

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

export type LintSeverity = 'error' | 'warning';

export interface LintFinding {
  /** The file, relative to the template folder (`.` for the folder itself). */
  file: string;
  /** 1-based; where the JSON value concerned starts, 1:1 when there is no better place. */
  line: number;
  column: number;
  severity: LintSeverity;
  /** Kebab-case rule id, e.g. `prompt-unknown-variable`. */
  rule: string;
  message: string;
  /** JSON pointer inside `file`, when the finding concerns one value of a JSON document. */
  pointer?: string;
}

/** `template.prompts.json:12:15 error unknown-reference when of prompt "database" names unknown variable "feature"` */
export function formatLintFinding(finding: LintFinding): string {
  return `${finding.file}:${finding.line}:${finding.column} ${finding.severity} ${finding.rule} ${finding.message}`;
}

export interface LintResult {
  findings: LintFinding[];
  errorCount: number;
  warningCount: number;
}

/** What a rule reports: where (file and pointer, or an explicit position) and what. */
export interface LintDraft {
  file: string;
  message: string;
  /** The rule id to report under, when not the reporting rule's own (the schema rule reports validateTemplate's checks under their own ids). */
  rule?: string;
  pointer?: string;
  line?: number;
  column?: number;
}

export interface LintRule {
  id: string;
  severity: LintSeverity;
  check: (model: LintModel) => LintDraft[];
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/** A JSON document of the template as parsed, with where each value starts. */
export interface JsonDocument {
  file: string;
  value: unknown;
  positions: Map<string, SourcePosition>;
}

/** A problem reading a file that validateTemplate may not have reported itself. */
export interface ReadProblem {
  file: string;
  message: string;
  line?: number;
  column?: number;
}

/** Everything lint reads from disk; the only input of `buildLintModel`. */
export interface TemplateSources {
  /** False when the template folder is missing or not a folder: nothing else was read. */
  isFolder: boolean;
  validationErrors: TemplateValidationError[];
  readProblems: ReadProblem[];
  manifestFile: string;
  variablesFile: string;
  promptsFile: string;
  /** Parsed JSON documents by file name; a file that could not be read or parsed is absent. */
  documents: Map<string, JsonDocument>;
  changelog?: { file: string; text: string };
  /** The content folder; absent when the manifest could not be read. */
  content?: ContentModel;
}

export interface ContentModel {
  /** Folder name relative to the template root, as the manifest names it. */
  folder: string;
  /** Every file and folder path under it, `/`-separated, relative to it. */
  paths: string[];
  /** The files rendered as Liquid (binary files, files that are not UTF-8 and `verbatim` files are left out). */
  texts: { path: string; text: string }[];
  /** Files copied byte for byte because they are not valid UTF-8 (nor binary, nor `verbatim`) that hold `{{` or `{%`, with the line of the first. */
  nonUtf8Liquid?: { path: string; line: number }[];
  /** The manifest's `partials` folder (as it names it) and its Liquid texts, paths relative to it. */
  partials?: { folder: string; texts: { path: string; text: string }[] };
}

/** A variable definition (or the `items`/`properties` definition inside one), fields of the wrong type left out. */
export interface LintVariable {
  /** JSON pointer of the definition in the variables file. */
  pointer: string;
  type?: string;
  hasDefault: boolean;
  default?: unknown;
  validation?: string;
  enum?: unknown[];
  items?: LintVariable;
  properties: Map<string, LintVariable>;
  condition?: string;
  /** `"secret": true`. */
  secret: boolean;
  /** The environment variable the answer can come from (`env`). */
  env?: string;
}

export interface LintPrompt {
  index: number;
  pointer: string;
  name?: string;
  type?: string;
  validate?: string;
  when?: string;
  choices: { value: unknown; pointer: string }[];
  /** True when `choices` is an array (even an empty one). */
  hasChoices: boolean;
}

export interface LintManifest {
  file: string;
  version?: string;
  /** Declared features; undefined when the manifest has no `features` array. */
  features?: string[];
  changelog: string;
  content: string;
  files: { pointer: string; path?: string; when?: string }[];
  /** The `verbatim` globs (strings only). */
  verbatim: string[];
  partials?: string;
  /** The post-generation tasks: where each is and its `when`. */
  tasks: { pointer: string; description?: string; when?: string }[];
}

export type ExpressionOwner =
  | { kind: 'prompt'; name: string }
  | { kind: 'condition'; name: string }
  | { kind: 'computed'; name: string }
  | { kind: 'files'; name: string }
  /** The computed default of a variable. */
  | { kind: 'default'; name: string }
  | { kind: 'task'; name: string };

/** One expression of the template, parsed once. */
export interface LintExpression {
  file: string;
  pointer: string;
  text: string;
  kind: ExpressionKind;
  owner: ExpressionOwner;
  /** How messages name it: `when of prompt "database"`. */
  label: string;
  /** The names it reads; absent when it does not parse. */
  references?: string[];
  /** Why it does not parse. */
  error?: string;
}

export interface LintModel {
  isFolder: boolean;
  validationErrors: TemplateValidationError[];
  readProblems: ReadProblem[];
  positions: Map<string, Map<string, SourcePosition>>;
  manifest?: LintManifest;
  variables?: { file: string; variables: Map<string, LintVariable>; computed: Map<string, { pointer: string; text: string }> };
  prompts?: { file: string; prompts: LintPrompt[] };
  changelog?: { file: string; text: string };
  content?: ContentModel;
  expressions: LintExpression[];
}

const own = (object: Record<string, unknown>, key: string): unknown => (Object.hasOwn(object, key) ? object[key] : undefined);
const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const nonEmpty = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const esc = escapePointerSegment;
const show = (value: unknown): string => JSON.stringify(value) ?? String(value);

function toVariable(raw: unknown, pointer: string): LintVariable {
  const o = isRecord(raw) ? raw : {};
  const items = own(o, 'items');
  const properties = own(o, 'properties');
  const values = own(o, 'enum');
  return {
    pointer,
    type: stringOf(own(o, 'type')),
    hasDefault: Object.hasOwn(o, 'default'),
    default: own(o, 'default'),
    validation: stringOf(own(o, 'validation')),
    enum: Array.isArray(values) ? values : undefined,
    items: isRecord(items) ? toVariable(items, `${pointer}/items`) : undefined,
    properties: new Map(
      isRecord(properties)
        ? Object.entries(properties)
            .filter(([, value]) => isRecord(value))
            .map(([key, value]) => [key, toVariable(value, `${pointer}/properties/${esc(key)}`)])
        : [],
    ),
    condition: stringOf(own(o, 'condition')),
    secret: own(o, 'secret') === true,
    env: nonEmpty(own(o, 'env')),
  };
}

function toManifest(file: string, value: unknown): LintManifest {
  const m = isRecord(value) ? value : {};
  const features = own(m, 'features');
  const files = own(m, 'files');
  const verbatim = own(m, 'verbatim');
  const partials = nonEmpty(own(m, 'partials'));
  const tasks = own(m, 'tasks');
  return {
    file,
    version: stringOf(own(m, 'version')),
    features: Array.isArray(features) ? features.filter((f): f is string => typeof f === 'string') : undefined,
    changelog: nonEmpty(own(m, 'changelog')) ?? 'CHANGELOG.md',
    content: nonEmpty(own(m, 'content')) ?? DEFAULT_CONTENT_FOLDER,
    files: Array.isArray(files)
      ? files.map((rule, index) => {
          const r = isRecord(rule) ? rule : {};
          return { pointer: `/files/${index}`, path: stringOf(own(r, 'path')), when: nonEmpty(own(r, 'when')) };
        })
      : [],
    verbatim: Array.isArray(verbatim) ? verbatim.filter((glob): glob is string => typeof glob === 'string' && glob !== '') : [],
    ...(partials !== undefined ? { partials } : {}),
    tasks: Array.isArray(tasks)
      ? tasks.map((task, index) => {
          const t = isRecord(task) ? task : {};
          return { pointer: `/tasks/${index}`, description: nonEmpty(own(t, 'description')), when: nonEmpty(own(t, 'when')) };
        })
      : [],
  };
}

function toPrompts(value: unknown): LintPrompt[] {
  const prompts = isRecord(value) ? own(value, 'prompts') : undefined;
  if (!Array.isArray(prompts)) return [];
  return prompts.map((raw, index) => {
    const p = isRecord(raw) ? raw : {};
    const pointer = `/prompts/${index}`;
    const choices = own(p, 'choices');
    return {
      index,
      pointer,
      name: nonEmpty(own(p, 'name')),
      type: stringOf(own(p, 'type')),
      validate: stringOf(own(p, 'validate')),
      when: nonEmpty(own(p, 'when')),
      hasChoices: Array.isArray(choices),
      choices: Array.isArray(choices)
        ? choices.flatMap((choice, j) =>
            isRecord(choice) && Object.hasOwn(choice, 'value')
              ? [{ value: choice.value, pointer: `${pointer}/choices/${j}/value` }]
              : [],
          )
        : [],
    };
  });
}

/** Turns what was read into the model the rules work on; parses every expression once. */
function buildLintModel(sources: TemplateSources, evaluator = new ExpressionEvaluator()): LintModel {
  const positions = new Map([...sources.documents].map(([file, doc]) => [file, doc.positions]));
  const manifestDoc = sources.documents.get(sources.manifestFile);
  const variablesDoc = sources.documents.get(sources.variablesFile);
  const promptsDoc = sources.documents.get(sources.promptsFile);

  const manifest = manifestDoc ? toManifest(sources.manifestFile, manifestDoc.value) : undefined;

  let variables: LintModel['variables'];
  if (variablesDoc) {
    const v = isRecord(variablesDoc.value) ? variablesDoc.value : {};
    const defs = own(v, 'variables');
    const computed = own(v, 'computed');
    variables = {
      file: sources.variablesFile,
      variables: new Map(
        isRecord(defs)
          ? Object.entries(defs).map(([name, def]) => [name, toVariable(def, `/variables/${esc(name)}`)])
          : [],
      ),
      computed: new Map(
        isRecord(computed)
          ? Object.entries(computed)
              .filter((entry): entry is [string, string] => typeof entry[1] === 'string' && entry[1] !== '')
              .map(([name, text]) => [name, { pointer: `/computed/${esc(name)}`, text }])
          : [],
      ),
    };
  }
  const prompts = promptsDoc ? { file: sources.promptsFile, prompts: toPrompts(promptsDoc.value) } : undefined;

  const expressions: LintExpression[] = [];
  const add = (
    file: string,
    pointer: string,
    text: string,
    kind: ExpressionKind,
    owner: ExpressionOwner,
    label: string,
  ): void => {
    const expression: LintExpression = { file, pointer, text, kind, owner, label };
    try {
      expression.references = evaluator.references(text, kind);
    } catch (error) {
      expression.error = firstLine(error);
    }
    expressions.push(expression);
  };
  if (variables) {
    for (const [name, def] of variables.variables) {
      if (def.condition) {
        add(variables.file, `${def.pointer}/condition`, def.condition, 'condition', { kind: 'condition', name }, `condition of variable "${name}"`);
      }
      if (isComputedDefault(def.default)) {
        add(variables.file, `${def.pointer}/default`, def.default, 'default', { kind: 'default', name }, `default of variable "${name}"`);
      }
    }
    for (const [name, { pointer, text }] of variables.computed) {
      add(variables.file, pointer, text, 'value', { kind: 'computed', name }, `computed value "${name}"`);
    }
  }
  for (const prompt of prompts?.prompts ?? []) {
    if (prompt.when) {
      const name = prompt.name ?? `#${prompt.index}`;
      add(prompts?.file ?? PROMPTS_FILE, `${prompt.pointer}/when`, prompt.when, 'condition', { kind: 'prompt', name }, `when of prompt "${name}"`);
    }
  }
  for (const rule of manifest?.files ?? []) {
    if (rule.when) {
      const name = rule.path ?? rule.pointer;
      add(manifest?.file ?? MANIFEST_FILE, `${rule.pointer}/when`, rule.when, 'condition', { kind: 'files', name }, `when of files rule "${name}"`);
    }
  }
  for (const task of manifest?.tasks ?? []) {
    if (task.when) {
      const name = task.description ?? task.pointer;
      add(manifest?.file ?? MANIFEST_FILE, `${task.pointer}/when`, task.when, 'condition', { kind: 'task', name }, `when of task "${name}"`);
    }
  }

  return {
    isFolder: sources.isFolder,
    validationErrors: sources.validationErrors,
    readProblems: sources.readProblems,
    positions,
    ...(manifest ? { manifest } : {}),
    ...(variables ? { variables } : {}),
    ...(prompts ? { prompts } : {}),
    ...(sources.changelog ? { changelog: sources.changelog } : {}),
    ...(sources.content ? { content: sources.content } : {}),
    expressions,
  };
}

// ---------------------------------------------------------------------------------------------
// Rules (pure)
// ---------------------------------------------------------------------------------------------

/** A variable and every definition nested in it (`items`, `properties`), with a dotted label. */
function* walkVariables(variables: Map<string, LintVariable>): Generator<{ label: string; top: string; def: LintVariable }> {
  const visit = function* (label: string, top: string, def: LintVariable): Generator<{ label: string; top: string; def: LintVariable }> {
    yield { label, top, def };
    if (def.items) yield* visit(`${label}[]`, top, def.items);
    for (const [key, property] of def.properties) yield* visit(`${label}.${key}`, top, property);
  };
  for (const [name, def] of variables) yield* visit(name, name, def);
}

/** Every regular expression the template declares: variable `validation`s and prompt `validate`s. */
function regexesOf(model: LintModel): { file: string; pointer: string; source: string; label: string }[] {
  const found: { file: string; pointer: string; source: string; label: string }[] = [];
  if (model.variables) {
    for (const { label, def } of walkVariables(model.variables.variables)) {
      if (def.validation !== undefined) {
        found.push({ file: model.variables.file, pointer: `${def.pointer}/validation`, source: def.validation, label: `validation of variable "${label}"` });
      }
    }
  }
  for (const prompt of model.prompts?.prompts ?? []) {
    if (prompt.validate !== undefined) {
      found.push({
        file: model.prompts?.file ?? PROMPTS_FILE,
        pointer: `${prompt.pointer}/validate`,
        source: prompt.validate,
        label: `validate of prompt "${prompt.name ?? `#${prompt.index}`}"`,
      });
    }
  }
  return found;
}

/** A default exists when it is written, or (objects) when every property has one. */
function hasEffectiveDefault(def: LintVariable): boolean {
  return def.hasDefault || (def.properties.size > 0 && [...def.properties.values()].every(hasEffectiveDefault));
}

/**
 * validateTemplate's checks that have a lint rule id of their own; their findings come from
 * validation (with its positions) and are reported once, under that id.
 */
const RULE_OF_VALIDATION_CODE: Readonly<Record<string, string>> = {
  INVALID_EXPRESSION: 'expression-invalid',
  UNKNOWN_VARIABLE: 'unknown-reference',
  LIQUID_SYNTAX: 'liquid-syntax',
  UNKNOWN_FILTER: 'liquid-syntax',
  UNKNOWN_CONTENT_VARIABLE: 'unknown-variable',
  INVALID_REGEX: 'regex-invalid',
  UNSAFE_PATTERN: 'regex-unsafe',
  UNSUPPORTED_PATTERN: 'regex-unsafe',
  LIQUID: 'migration-step',
  VERSION_ORDER: 'migration-step',
  PATH_OUTSIDE_PROJECT: 'migration-step',
  MIGRATION_OVERLAP: 'migration-step',
  MIGRATION_UNREACHABLE: 'migration-step',
};

const schemaRule: LintRule = {
  id: 'schema',
  severity: 'error',
  check: (model) => {
    // regex-invalid says more about a pattern JavaScript cannot compile; the schema's finding would repeat it.
    const compiledBadly = new Set(regexesOf(model).filter(({ source }) => patternSyntaxError(source) !== undefined).map(({ file, pointer }) => `${file}\0${pointer}`));
    const drafts: LintDraft[] = model.validationErrors
      .filter((error) => !(error.code === 'INVALID_REGEX' && compiledBadly.has(`${error.file}\0${error.pointer}`)))
      .map((error) => {
        const rule = RULE_OF_VALIDATION_CODE[error.code];
        // A schema message is about the value at the pointer ("is required"): name it, as validate does.
        const message = rule === undefined && error.pointer !== '' ? `${error.pointer}: ${error.message}` : error.message;
        return {
          file: error.file,
          message,
          ...(rule !== undefined ? { rule } : {}),
          ...(error.pointer !== '' ? { pointer: error.pointer } : {}),
          ...(error.line !== undefined && error.column !== undefined ? { line: error.line, column: error.column } : {}),
        };
      });
    const reported = new Set(model.validationErrors.map((error) => error.file));
    for (const problem of model.readProblems) {
      if (!reported.has(problem.file)) drafts.push({ ...problem });
    }
    return drafts;
  },
};

const promptUnknownVariable: LintRule = {
  id: 'prompt-unknown-variable',
  severity: 'error',
  check: ({ variables, prompts }) => {
    if (!variables || !prompts) return [];
    return prompts.prompts.flatMap((prompt) => {
      if (prompt.name === undefined || variables.variables.has(prompt.name)) return [];
      const message = variables.computed.has(prompt.name)
        ? `prompt "${prompt.name}" names computed value "${prompt.name}"; only variables can be asked for`
        : `prompt "${prompt.name}" names unknown variable "${prompt.name}"`;
      return [{ file: prompts.file, pointer: `${prompt.pointer}/name`, message }];
    });
  },
};

const variableWithoutPrompt: LintRule = {
  id: 'variable-without-prompt',
  severity: 'error',
  check: ({ variables, prompts }) => {
    if (!variables || !prompts) return [];
    const prompted = new Set(prompts.prompts.map((p) => p.name));
    return [...variables.variables].flatMap(([name, def]) =>
      // A variable read from the environment (a secret CI gives) has a source of its own.
      hasEffectiveDefault(def) || prompted.has(name) || variables.computed.has(name) || def.env !== undefined
        ? []
        : [{ file: variables.file, pointer: def.pointer, message: `variable "${name}" has no default and no prompt` }],
    );
  },
};

const choicesMatchEnum: LintRule = {
  id: 'choices-match-enum',
  severity: 'error',
  check: ({ variables, prompts }) => {
    if (!variables || !prompts) return [];
    const drafts: LintDraft[] = [];
    for (const prompt of prompts.prompts) {
      if (prompt.type !== 'select' && prompt.type !== 'multiselect') continue;
      const variable = prompt.name === undefined ? undefined : variables.variables.get(prompt.name);
      const allowed = variable?.enum ?? variable?.items?.enum;
      if (!variable || !allowed || !prompt.hasChoices) continue;
      for (const choice of prompt.choices) {
        if (!allowed.some((value) => value === choice.value)) {
          drafts.push({
            file: prompts.file,
            pointer: choice.pointer,
            message: `choice ${show(choice.value)} is not in the enum of variable "${prompt.name}"`,
          });
        }
      }
      for (const value of allowed) {
        if (!prompt.choices.some((choice) => choice.value === value)) {
          drafts.push({
            file: prompts.file,
            pointer: `${prompt.pointer}/choices`,
            message: `enum value ${show(value)} has no choice in prompt "${prompt.name}"`,
          });
        }
      }
    }
    return drafts;
  },
};

/** Checks one default value against its definition; array defaults item by item, objects property by property. */
function checkDefault(
  def: LintVariable,
  value: unknown,
  pointer: string,
  label: string,
  promptPattern: { source: string; prompt: string } | undefined,
  budget: AnalysisBudget,
): { pointer: string; message: string }[] {
  const problems: { pointer: string; message: string }[] = [];
  // `subject` names the value in messages: `default "x" of variable "a"`, `item "x" of the default of variable "a"`.
  const checkString = (text: string, at: string, subject: string): void => {
    const rules = [
      ...(def.validation !== undefined ? [{ source: def.validation, how: 'its validation' }] : []),
      ...(promptPattern ? [{ source: promptPattern.source, how: `the validate pattern of prompt "${promptPattern.prompt}"` }] : []),
    ];
    for (const rule of rules) {
      // A pattern that may not run is regex-invalid's or regex-unsafe's business.
      if (!judgePattern(rule.source, budget).runnable) continue;
      const outcome = matchPattern(rule.source, text);
      if ('refused' in outcome) problems.push({ pointer: at, message: `${subject} ${outcome.refused}` });
      else if (!outcome.matches) problems.push({ pointer: at, message: `${subject} does not match ${rule.how} /${rule.source}/` });
    }
  };
  const inEnum = (item: unknown): boolean => !def.enum || def.enum.some((allowed) => allowed === item);
  const notInEnum = (subject: string): string => `${subject} is not in its enum (${(def.enum ?? []).map(show).join(', ')})`;

  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      const at = `${pointer}/${index}`;
      const subject = `item ${show(item)} of the default of variable "${label}"`;
      if (!inEnum(item)) problems.push({ pointer: at, message: notInEnum(subject) });
      if (typeof item === 'string') checkString(item, at, subject);
      if (def.items) problems.push(...checkDefault(def.items, item, at, `${label}[${index}]`, undefined, budget));
    });
  } else if (isRecord(value)) {
    if (!inEnum(value)) problems.push({ pointer, message: notInEnum(`default of variable "${label}"`) });
    for (const [key, property] of def.properties) {
      if (Object.hasOwn(value, key)) {
        problems.push(...checkDefault(property, value[key], `${pointer}/${esc(key)}`, `${label}.${key}`, undefined, budget));
      }
    }
  } else {
    const subject = `default ${show(value)} of variable "${label}"`;
    if (!inEnum(value)) problems.push({ pointer, message: notInEnum(subject) });
    if (typeof value === 'string') checkString(value, pointer, subject);
  }
  return problems;
}

const defaultInvalid: LintRule = {
  id: 'default-invalid',
  severity: 'error',
  check: ({ variables, prompts }) => {
    if (!variables) return [];
    const patterns = new Map<string, { source: string; prompt: string }>();
    for (const prompt of prompts?.prompts ?? []) {
      if (prompt.name !== undefined && prompt.validate !== undefined && !patterns.has(prompt.name)) {
        patterns.set(prompt.name, { source: prompt.validate, prompt: prompt.name });
      }
    }
    const drafts: LintDraft[] = [];
    // Patterns validate judged are remembered; one it could not judge within its budget is not run here either.
    const budget = analysisBudget();
    for (const { label, top, def } of walkVariables(variables.variables)) {
      // A computed default is checked as an expression; its value is known only from the answers.
      if (!def.hasDefault || (label === top && isComputedDefault(def.default))) continue;
      // The prompt's pattern applies to the variable it answers, not to definitions nested in it.
      const pattern = label === top ? patterns.get(top) : undefined;
      for (const problem of checkDefault(def, def.default, `${def.pointer}/default`, label, pattern, budget)) {
        drafts.push({ file: variables.file, ...problem });
      }
    }
    return drafts;
  },
};

const regexInvalid: LintRule = {
  id: 'regex-invalid',
  severity: 'error',
  check: (model) =>
    regexesOf(model).flatMap(({ file, pointer, source, label }) => {
      const error = patternSyntaxError(source);
      return error === undefined ? [] : [{ file, pointer, message: `${label} is not a valid regular expression: ${error}` }];
    }),
};

function cycles(
  model: LintModel,
  owner: 'computed' | 'condition',
  pointerOf: (name: string) => string,
  describe: (cycle: string[]) => string,
): LintDraft[] {
  const variables = model.variables;
  if (!variables) return [];
  const dependencies = new Map<string, string[]>();
  const names = owner === 'computed' ? [...variables.computed.keys()] : [...variables.variables.keys()];
  for (const name of names) dependencies.set(name, []);
  for (const expression of model.expressions) {
    // A variable waits for what its condition and its computed default read.
    const kind = expression.owner.kind === 'default' && owner === 'condition' ? 'condition' : expression.owner.kind;
    if (kind === owner) dependencies.set(expression.owner.name, [...(dependencies.get(expression.owner.name) ?? []), ...(expression.references ?? [])]);
  }
  const drafts: LintDraft[] = [];
  dependencyOrder(dependencies, (cycle) =>
    drafts.push({ file: variables.file, pointer: pointerOf(cycle[0] ?? ''), message: describe(cycle) }),
  );
  return drafts;
}

const computedCycle: LintRule = {
  id: 'computed-cycle',
  severity: 'error',
  check: (model) =>
    cycles(
      model,
      'computed',
      (name) => `/computed/${esc(name)}`,
      (cycle) => `computed values depend on each other in a cycle: ${cycle.join(' -> ')}`,
    ),
};

/** Not in the brief's list, but loadTemplate rejects it, so a clean lint must too. */
const conditionCycle: LintRule = {
  id: 'condition-cycle',
  severity: 'error',
  check: (model) =>
    cycles(
      model,
      'condition',
      (name) => `/variables/${esc(name)}/${model.expressions.some((e) => e.owner.kind === 'default' && e.owner.name === name) ? 'default' : 'condition'}`,
      (cycle) =>
        `${cycle.some((name) => model.expressions.some((e) => e.owner.kind === 'default' && e.owner.name === name)) ? 'conditions and computed defaults' : 'conditions'} depend on each other in a cycle: ${cycle.join(' -> ')}`,
    ),
};

/** Not in the brief's list, but loadTemplate rejects it, so a clean lint must too. */
const duplicateName: LintRule = {
  id: 'duplicate-name',
  severity: 'error',
  check: ({ variables }) =>
    variables
      ? [...variables.computed].flatMap(([name, { pointer }]) =>
          variables.variables.has(name)
            ? [{ file: variables.file, pointer, message: `computed value "${name}" has the name of a variable` }]
            : [],
        )
      : [],
};

const FEATURE_VARIABLE = 'features';
/** `features contains "docker"` (or single quotes): the literal is a feature name. */
const CONTAINS_FEATURE = /\bfeatures\s+contains\s+(?:"([^"]*)"|'([^']*)')/g;

const featureNotDeclared: LintRule = {
  id: 'feature-not-declared',
  severity: 'error',
  check: (model) => {
    const { manifest, variables, prompts } = model;
    if (!manifest) return [];
    const declared = new Set(manifest.features ?? []);
    const named: { file: string; pointer: string; value: string; where: string }[] = [];
    const features = variables?.variables.get(FEATURE_VARIABLE);
    // A `features` of another shape is the template's own variable, not the list of its features.
    if (features?.type !== undefined && features.type !== 'array') return [];
    if (variables && features) {
      const strings = (values: unknown, pointer: string, where: string): void => {
        if (typeof values === 'string') named.push({ file: variables.file, pointer, value: values, where });
        if (!Array.isArray(values)) return;
        values.forEach((value, index) => {
          if (typeof value === 'string') named.push({ file: variables.file, pointer: `${pointer}/${index}`, value, where });
        });
      };
      strings(features.enum, `${features.pointer}/enum`, `the enum of variable "${FEATURE_VARIABLE}"`);
      strings(features.items?.enum, `${features.pointer}/items/enum`, `the items enum of variable "${FEATURE_VARIABLE}"`);
      strings(features.default, `${features.pointer}/default`, `the default of variable "${FEATURE_VARIABLE}"`);
      for (const prompt of prompts?.prompts ?? []) {
        if (prompt.name !== FEATURE_VARIABLE) continue;
        for (const choice of prompt.choices) {
          if (typeof choice.value === 'string') {
            named.push({ file: prompts?.file ?? PROMPTS_FILE, pointer: choice.pointer, value: choice.value, where: `a choice of prompt "${FEATURE_VARIABLE}"` });
          }
        }
      }
    }
    for (const expression of model.expressions) {
      for (const match of expression.text.matchAll(CONTAINS_FEATURE)) {
        const value = match[1] ?? match[2] ?? '';
        named.push({ file: expression.file, pointer: expression.pointer, value, where: expression.label });
      }
    }
    const seen = new Set<string>();
    return named.flatMap(({ file, pointer, value, where }) => {
      const key = `${file}\0${pointer}\0${value}`;
      if (declared.has(value) || seen.has(key)) return [];
      seen.add(key);
      return [{ file, pointer, message: `feature ${show(value)} named in ${where} is not declared in the manifest features` }];
    });
  },
};

const escapeRegex = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** True when the change log has a `## 1.2.0`, `## [1.2.0]`, `## [1.2.0] - 2026-01-31` or `## v1.2.0` heading. */
/** True when the changelog has a heading for the version (the same rule the release notes use). */
export function changelogHasVersion(text: string, version: string): boolean {
  return findChangelogSection(text, version) !== undefined;
}

/**
 * A warning, not an error: the spec asks for no change log entry, so a version without one is
 * published (its release notes say so); a registry server may still require one
 * (`--require-changelog-entry`).
 */
const changelogMissingVersion: LintRule = {
  id: 'changelog-missing-version',
  severity: 'warning',
  check: ({ manifest, changelog }) => {
    if (!manifest?.version || !changelog || !VERSION_PATTERN.test(manifest.version)) return [];
    if (changelogHasVersion(changelog.text, manifest.version)) return [];
    return [
      {
        file: changelog.file,
        message: `has no section for version ${manifest.version} of the manifest (add a heading such as "## [${manifest.version}] - YYYY-MM-DD")`,
      },
    ];
  },
};

const WORD = /\w+/g;

/**
 * A name counts as used by content when it occurs as a whole word (a word-boundary search) in a
 * content file's text or in a path under the content folder. That is deliberately simple: a name
 * that only appears in prose or inside a string literal counts as used too, which can hide an
 * unused variable but never flags a used one. Expressions are exact: their parsed references count,
 * except an expression's references to its own owner; an unparsable expression falls back to the
 * word search.
 */
const variableUnused: LintRule = {
  id: 'variable-unused',
  severity: 'warning',
  check: (model) => {
    const { variables, content } = model;
    if (!variables || !model.manifest) return [];
    const words = new Set<string>();
    // The partials are rendered into content files: what they read is used.
    const texts = [...(content?.texts ?? []), ...(content?.partials?.texts ?? [])];
    for (const text of [...(content?.paths ?? []), ...texts.map((t) => t.text)]) {
      for (const [word] of text.matchAll(WORD)) words.add(word);
    }
    const usedBy = (name: string): boolean => {
      if (/^\w+$/.test(name) ? words.has(name) : texts.some((t) => new RegExp(`\\b${escapeRegex(name)}\\b`).test(t.text))) {
        return true;
      }
      return model.expressions.some((expression) => {
        if (expression.owner.name === name && expression.owner.kind !== 'files' && expression.owner.kind !== 'task') return false;
        return expression.references
          ? expression.references.includes(name)
          : new RegExp(`\\b${escapeRegex(name)}\\b`).test(expression.text);
      });
    };
    const drafts: LintDraft[] = [];
    for (const [name, def] of variables.variables) {
      if (!usedBy(name)) {
        drafts.push({ file: variables.file, pointer: def.pointer, message: `variable "${name}" is not used by any content file, expression or computed value` });
      }
    }
    for (const [name, { pointer }] of variables.computed) {
      if (!usedBy(name)) {
        drafts.push({ file: variables.file, pointer, message: `computed value "${name}" is not used by any content file, expression or other computed value` });
      }
    }
    return drafts;
  },
};

/**
 * A standard name (the spec's projectName, description, author, features, database) declared with
 * another shape. Allowed (a template may declare any variables), but readers and tools that know
 * the standard names would be misled, so it is a warning.
 */
const standardVariableShape: LintRule = {
  id: 'standard-variable-shape',
  severity: 'warning',
  check: ({ variables }) => {
    if (!variables) return [];
    const shape = (def: LintVariable): Record<string, unknown> => ({
      type: def.type,
      ...(def.items ? { items: shape(def.items) } : {}),
      properties: Object.fromEntries([...def.properties].map(([key, property]) => [key, shape(property)])),
    });
    return [...variables.variables].flatMap(([name, def]) =>
      standardShapeMismatches(name, shape(def)).map((mismatch) => ({ file: variables.file, pointer: `${def.pointer}${mismatch.at}`, message: mismatch.message })),
    );
  },
};

/** A `confirm` prompt answers yes or no: its variable must be a boolean. */
const confirmNotBoolean: LintRule = {
  id: 'confirm-not-boolean',
  severity: 'error',
  check: ({ variables, prompts }) => {
    if (!variables || !prompts) return [];
    return prompts.prompts.flatMap((prompt) => {
      const variable = prompt.name === undefined ? undefined : variables.variables.get(prompt.name);
      if (prompt.type !== 'confirm' || !variable || variable.type === 'boolean') return [];
      return [{ file: prompts.file, pointer: `${prompt.pointer}/type`, message: `prompt "${prompt.name}" is a confirm (yes or no), but variable "${prompt.name}" is ${variable.type === undefined ? 'untyped' : `a ${variable.type}`}; declare it "type": "boolean"` }];
    });
  },
};

/**
 * A computed default is worked out from the answers before it: one that reads a variable asked
 * later would be shown with that variable's default, not with what the user is about to answer.
 */
const defaultOrder: LintRule = {
  id: 'default-order',
  severity: 'error',
  check: ({ variables, prompts, expressions }) => {
    if (!variables || !prompts) return [];
    const askedAt = new Map<string, number>();
    prompts.prompts.forEach((prompt, index) => {
      if (prompt.name !== undefined && !askedAt.has(prompt.name)) askedAt.set(prompt.name, index);
    });
    const drafts: LintDraft[] = [];
    for (const expression of expressions) {
      if (expression.owner.kind !== 'default') continue;
      const reader = expression.owner.name;
      for (const name of expression.references ?? []) {
        const readerAt = askedAt.get(reader);
        const readAt = askedAt.get(name);
        if (readerAt === undefined || readAt === undefined || readAt < readerAt) continue;
        drafts.push({
          file: expression.file,
          pointer: expression.pointer,
          message: `${expression.label} reads "${name}", which is asked after it (prompt ${readAt + 1}, "${reader}" is prompt ${readerAt + 1}); ask "${name}" first`,
        });
      }
    }
    return drafts;
  },
};

/** A secret is written nowhere: a default computed from one would carry it into the lock file. */
const secretInDefault: LintRule = {
  id: 'secret-in-default',
  severity: 'error',
  check: ({ variables, expressions }) => {
    if (!variables) return [];
    const secrets = new Set([...variables.variables].filter(([, def]) => def.secret).map(([name]) => name));
    return expressions.flatMap((expression) => {
      if (expression.owner.kind !== 'default' || variables.variables.get(expression.owner.name)?.secret) return [];
      const read = (expression.references ?? []).filter((name) => secrets.has(name));
      return read.map((name) => ({
        file: expression.file,
        pointer: expression.pointer,
        message: `${expression.label} reads secret "${name}": the value would be written to the lock file; make "${expression.owner.name}" a secret too, or compute it another way`,
      }));
    });
  },
};

/** Every rule, in the order they run (findings are sorted afterwards). */
export const LINT_RULES: readonly LintRule[] = [
  schemaRule,
  promptUnknownVariable,
  variableWithoutPrompt,
  choicesMatchEnum,
  defaultInvalid,
  regexInvalid,
  computedCycle,
  conditionCycle,
  duplicateName,
  featureNotDeclared,
  changelogMissingVersion,
  standardVariableShape,
  variableUnused,
  ...HABIT_RULES,
  confirmNotBoolean,
  defaultOrder,
  secretInDefault,
];

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/** Runs rules over a model: positions from the JSON documents, sorted by file, line, column. */
function runLintRules(model: LintModel, rules: readonly LintRule[] = LINT_RULES): LintResult {
  const active = model.isFolder ? rules : rules.filter((rule) => rule.id === 'schema');
  const findings: LintFinding[] = [];
  for (const rule of active) {
    let drafts: LintDraft[];
    try {
      drafts = rule.check(model);
    } catch (error) {
      // A rule must not take the whole lint down; say which one failed instead.
      drafts = [{ file: '.', message: `rule ${rule.id} could not run: ${firstLine(error)}` }];
    }
    for (const draft of drafts) {
      const position =
        draft.line !== undefined && draft.column !== undefined
          ? { line: draft.line, column: draft.column }
          : (draft.pointer !== undefined ? nearestPosition(model.positions.get(draft.file), draft.pointer) : undefined) ?? {
              line: 1,
              column: 1,
            };
      findings.push({
        file: draft.file,
        line: position.line,
        column: position.column,
        severity: rule.severity,
        rule: draft.rule ?? rule.id,
        message: draft.message,
        ...(draft.pointer !== undefined && draft.pointer !== '' ? { pointer: draft.pointer } : {}),
      });
    }
  }
  findings.sort(
    (a, b) =>
      compareText(a.file, b.file) ||
      a.line - b.line ||
      a.column - b.column ||
      compareText(a.rule, b.rule) ||
      compareText(a.message, b.message),
  );
  return {
    findings,
    errorCount: findings.filter((f) => f.severity === 'error').length,
    warningCount: findings.filter((f) => f.severity === 'warning').length,
  };
}

// ---------------------------------------------------------------------------------------------
// Reading (the only I/O)
// ---------------------------------------------------------------------------------------------

/** A JSON document as the tree read it (the one reader of a template's JSON files), or a read problem. */
async function readJsonDocument(tree: TemplateTree, file: string, problems: ReadProblem[]): Promise<JsonDocument | undefined> {
  if (treePath(file) === undefined) return undefined; // validateTemplate reports a path outside the template
  const read = await tree.json(file);
  if (read.value !== undefined && read.positions) return { file, value: read.value, positions: read.positions };
  // A missing or refused file is validateTemplate's finding; a file too large for JSON is too.
  if (read.problem?.code === 'INVALID_JSON') problems.push({ file, message: read.problem.message, ...(read.problem.line !== undefined && read.problem.column !== undefined ? { line: read.problem.line, column: read.problem.column } : {}) });
  else if (read.problem?.code === 'UNREADABLE') problems.push({ file, message: read.problem.message });
  return undefined;
}

/** The line of the first `{{` or `{%` in bytes that are not decoded (a line ends at byte 0x0A in every encoding lint meets). */
function lineOfLiquidMarker(bytes: Buffer): number {
  const first = Math.min(...[bytes.indexOf('{{'), bytes.indexOf('{%')].filter((index) => index >= 0));
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i >= 0 && i < first; i = bytes.indexOf(0x0a, i + 1)) line++;
  return line;
}

async function readContent(tree: TemplateTree, folder: string, verbatim: (source: string) => boolean = () => false): Promise<ContentModel> {
  const content: ContentModel = { folder, paths: [], texts: [] };
  const nonUtf8Liquid: { path: string; line: number }[] = [];
  const base = treePath(folder);
  if (base === undefined) return content;
  for (const entry of tree.below(base)) {
    content.paths.push(entry.path);
    if (entry.kind !== 'file' || entry.unread || verbatim(entry.path)) continue;
    try {
      const file = base === '' ? entry.path : `${base}/${entry.path}`;
      const text = await tree.liquidText(file);
      if (text !== undefined) content.texts.push({ path: entry.path, text });
      else if (!(await tree.binary(file))) {
        // Text in another encoding: read whole; a binary file's bulk is never read.
        const bytes = await tree.bytes(file);
        if (holdsLiquidMarkers(bytes)) nonUtf8Liquid.push({ path: entry.path, line: lineOfLiquidMarker(bytes) });
      }
    } catch {
      // An unreadable file cannot use a variable.
    }
  }
  return nonUtf8Liquid.length > 0 ? { ...content, nonUtf8Liquid } : content;
}

/** All the reading lint does: validation, the JSON documents, the change log and the content folder. */
async function readTemplateSources(dir: string | TemplateTree): Promise<TemplateSources> {
  const tree = await templateTreeOf(dir);
  const validation = await validateTemplate(tree);
  const readProblems: ReadProblem[] = [];
  const documents = new Map<string, JsonDocument>();
  const base = { validationErrors: validation.errors, readProblems, documents, manifestFile: MANIFEST_FILE };

  const isFolder = tree.isFolder;
  if (!isFolder) return { ...base, isFolder, variablesFile: VARIABLES_FILE, promptsFile: PROMPTS_FILE };

  const manifest = await readJsonDocument(tree, MANIFEST_FILE, readProblems);
  if (manifest) documents.set(MANIFEST_FILE, manifest);
  const m = isRecord(manifest?.value) ? manifest.value : {};
  const customization = isRecord(own(m, 'customization')) ? (own(m, 'customization') as Record<string, unknown>) : {};
  // Named as validateTemplate names them, so that its errors and our positions agree.
  const variablesFile = path.normalize(nonEmpty(own(customization, 'variables')) ?? VARIABLES_FILE);
  const promptsFile = path.normalize(nonEmpty(own(customization, 'prompts')) ?? PROMPTS_FILE);
  for (const file of new Set([variablesFile, promptsFile])) {
    const doc = await readJsonDocument(tree, file, readProblems);
    if (doc) documents.set(file, doc);
  }

  const manifestModel = manifest ? toManifest(MANIFEST_FILE, manifest.value) : undefined;
  let changelog: TemplateSources['changelog'];
  const changelogFile = manifestModel?.changelog ?? 'CHANGELOG.md';
  if (tree.kindOf(changelogFile) === 'file') {
    // A missing change log is validateTemplate's finding; this rule then has nothing to read.
    const text = await tree.bytes(changelogFile).then((bytes) => bytes.toString('utf8'), () => undefined);
    if (text !== undefined) changelog = { file: path.normalize(changelogFile), text };
  }
  let content = manifestModel ? await readContent(tree, manifestModel.content, verbatimRule(manifestModel.verbatim)) : undefined;
  if (content && manifestModel?.partials !== undefined) {
    // A partials folder that is missing or misplaced is validateTemplate's finding; its texts are read when there are any.
    const partials = await readContent(tree, manifestModel.partials);
    content = { ...content, partials: { folder: path.posix.normalize(manifestModel.partials.replace(/\\/g, '/')).replace(/\/$/, ''), texts: partials.texts } };
  }

  return {
    ...base,
    isFolder,
    variablesFile,
    promptsFile,
    ...(changelog ? { changelog } : {}),
    ...(content ? { content } : {}),
  };
}

/**
 * Lints a template folder: every `validateTemplate` error, then the rules in `LINT_RULES`.
 * Findings are sorted by file, line and column. Never throws for a bad template.
 */
export async function lintTemplate(dir: string | TemplateTree): Promise<LintResult> {
  const sources = await readTemplateSources(dir);
  return runLintRules(buildLintModel(sources));
}
