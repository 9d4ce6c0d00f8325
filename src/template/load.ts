import path from 'node:path';

import type { TemplateManifest, TemplatePrompts, TemplateVariables } from '../core/schema-types.js';
import { escapePointerSegment } from '../core/json-source.js';
import { formatValidationErrorAt } from '../core/validation.js';
import { ExpressionError, ExpressionEvaluator, isComputedDefault, type ExpressionKind } from './expression.js';
import { implicitComputed } from './standard-variables.js';
import { templateTreeOf, treePath, type TemplateTree } from './tree.js';
import {
  MANIFEST_FILE,
  PROMPTS_FILE,
  VARIABLES_FILE,
  validateTemplate,
  type TemplateValidationError,
} from './validate.js';

export type VariableDefinition = TemplateVariables['variables'][string];
export type PromptDefinition = TemplatePrompts['prompts'][number];

export const DEFAULT_CONTENT_FOLDER = 'template';

/** A template read from disk and checked: schemas, files, and every expression's references. */
export interface LoadedTemplate {
  root: string;
  manifest: TemplateManifest;
  variables: Record<string, VariableDefinition>;
  computed: Record<string, string>;
  prompts: PromptDefinition[];
  /** Absolute path of the folder whose files become the project. */
  contentDir: string;
  /** The template folder as read once (`readTemplateTree`): rendering lists and reads the content folder from it. */
  tree: TemplateTree;
  /** The content folder as the tree names it (`/`-separated, relative to the root). */
  contentFolder: string;
  /** Absolute path of the manifest's `partials` folder, which `render`/`include` read from; absent without one. */
  partialsDir?: string;
  /** File names as the template names them, for messages. */
  files: { variables: string; prompts: string };
  /** Variable names in the order their conditions and computed defaults allow them to be resolved. */
  variableOrder: string[];
  /** Computed names in dependency order. */
  computedOrder: string[];
}

export class TemplateLoadError extends Error {
  constructor(readonly errors: TemplateValidationError[]) {
    super(`template is invalid:\n${errors.map((e) => `  ${formatValidationErrorAt(e)}`).join('\n')}`);
    this.name = 'TemplateLoadError';
  }
}

/** A JSON document of a template already validated: the tree's parsed value. */
async function readJson<T>(tree: TemplateTree, file: string): Promise<T> {
  return (await tree.json(file)).value as T;
}

/**
 * Orders names so that each comes after the names it depends on. Reports a cycle through `onCycle`
 * with the names on it, and leaves those names out.
 */
export function dependencyOrder(
  dependencies: ReadonlyMap<string, readonly string[]>,
  onCycle: (cycle: string[]) => void,
): string[] {
  const order: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, trail: string[]): boolean => {
    const seen = state.get(name);
    if (seen === 'done') return true;
    if (seen === 'visiting') {
      onCycle([...trail.slice(trail.indexOf(name)), name]);
      return false;
    }
    state.set(name, 'visiting');
    let ok = true;
    for (const dependency of dependencies.get(name) ?? []) {
      if (dependencies.has(dependency)) ok = visit(dependency, [...trail, name]) && ok;
    }
    state.set(name, 'done');
    if (ok) order.push(name);
    return ok;
  };
  for (const name of dependencies.keys()) visit(name, []);
  return order;
}

/**
 * Reads a template folder and checks it as a whole: validateTemplate's checks (but the content
 * folder's and the migration steps'), then that every condition, `when` and computed expression
 * parses and names only known variables, and that no computed value or condition depends on
 * itself. `computed` holds the declared computed values and the standard ones (`packageName`,
 * `className`) a template with a `projectName` gets. Throws TemplateLoadError listing every problem.
 */
export async function loadTemplate(dir: string | TemplateTree, evaluator = new ExpressionEvaluator()): Promise<LoadedTemplate> {
  const tree = await templateTreeOf(dir);
  const root = tree.root;
  // The content folder and the migration steps are not read here: rendering reports a broken file itself.
  const validation = await validateTemplate(tree, { deep: false });
  if (!validation.valid) throw new TemplateLoadError(validation.errors);

  const manifest = await readJson<TemplateManifest>(tree, MANIFEST_FILE);
  const variablesFile = manifest.customization?.variables ?? VARIABLES_FILE;
  const promptsFile = manifest.customization?.prompts ?? PROMPTS_FILE;
  const variablesDoc = await readJson<TemplateVariables>(tree, variablesFile);
  const promptsDoc = await readJson<TemplatePrompts>(tree, promptsFile);
  const variables = variablesDoc.variables;
  const declaredComputed = variablesDoc.computed ?? {};
  // packageName and className come with every projectName, declared or not.
  const computed = { ...declaredComputed, ...implicitComputed(Object.keys(variables), Object.keys(declaredComputed)) };
  const errors: TemplateValidationError[] = [];

  const variableNames = new Set(Object.keys(variables));
  const allNames = new Set([...variableNames, ...Object.keys(computed)]);

  const referencesOf = (
    file: string,
    pointer: string,
    expression: string,
    kind: ExpressionKind,
    known: ReadonlySet<string>,
    what: string,
  ): string[] => {
    let names: string[];
    try {
      names = evaluator.references(expression, kind);
    } catch (error) {
      const message = error instanceof ExpressionError ? error.message : String(error);
      errors.push({ file, pointer, message: `${what}: ${message}`, code: 'INVALID_EXPRESSION' });
      return [];
    }
    for (const name of names) {
      if (!known.has(name)) {
        errors.push({
          file,
          pointer,
          message: `${what} names unknown variable "${name}" (known: ${[...known].join(', ') || 'none'})`,
          code: 'UNKNOWN_VARIABLE',
        });
      }
    }
    return names.filter((name) => known.has(name));
  };

  for (const name of Object.keys(computed)) {
    if (variableNames.has(name)) {
      errors.push({
        file: variablesFile,
        pointer: `/computed/${escapePointerSegment(name)}`,
        message: `computed value "${name}" has the name of a variable`,
        code: 'DUPLICATE_NAME',
      });
    }
  }

  // A variable is resolved after those its condition and its computed default read.
  const conditionDependencies = new Map<string, string[]>();
  const defaultReaders = new Set<string>();
  for (const [name, definition] of Object.entries(variables)) {
    const at = `/variables/${escapePointerSegment(name)}`;
    const fromCondition = definition.condition
      ? referencesOf(variablesFile, `${at}/condition`, definition.condition, 'condition', variableNames, `condition of "${name}"`)
      : [];
    const fromDefault = isComputedDefault(definition.default)
      ? referencesOf(variablesFile, `${at}/default`, definition.default, 'default', variableNames, `default of "${name}"`)
      : [];
    if (fromDefault.length > 0) defaultReaders.add(name);
    conditionDependencies.set(name, [...new Set([...fromCondition, ...fromDefault])]);
  }
  const variableOrder = dependencyOrder(conditionDependencies, (cycle) =>
    errors.push({
      file: variablesFile,
      pointer: `/variables/${escapePointerSegment(cycle[0] ?? '')}/${defaultReaders.has(cycle[0] ?? '') ? 'default' : 'condition'}`,
      message: `${cycle.some((name) => defaultReaders.has(name)) ? 'conditions and computed defaults' : 'conditions'} depend on each other in a cycle: ${cycle.join(' -> ')}`,
      code: 'CYCLE',
    }),
  );

  const computedDependencies = new Map<string, string[]>();
  for (const [name, expression] of Object.entries(computed)) {
    const pointer = `/computed/${escapePointerSegment(name)}`;
    computedDependencies.set(name, referencesOf(variablesFile, pointer, expression, 'value', allNames, `computed "${name}"`));
  }
  const computedOrder = dependencyOrder(computedDependencies, (cycle) =>
    errors.push({
      file: variablesFile,
      pointer: `/computed/${escapePointerSegment(cycle[0] ?? '')}`,
      message: `computed values depend on each other in a cycle: ${cycle.join(' -> ')}`,
      code: 'CYCLE',
    }),
  );

  promptsDoc.prompts.forEach((prompt, index) => {
    if (prompt.when) {
      referencesOf(promptsFile, `/prompts/${index}/when`, prompt.when, 'condition', allNames, `when of prompt "${prompt.name}"`);
    }
  });
  (manifest.files ?? []).forEach((rule, index) => {
    referencesOf(MANIFEST_FILE, `/files/${index}/when`, rule.when, 'condition', allNames, `when of files rule "${rule.path}"`);
  });
  (manifest.tasks ?? []).forEach((task, index) => {
    if (task.when) referencesOf(MANIFEST_FILE, `/tasks/${index}/when`, task.when, 'condition', allNames, `when of task "${task.description}"`);
  });

  if (errors.length > 0) throw new TemplateLoadError(errors);

  return {
    root,
    manifest,
    variables,
    computed,
    prompts: promptsDoc.prompts,
    contentDir: path.join(root, manifest.content ?? DEFAULT_CONTENT_FOLDER),
    tree,
    contentFolder: treePath(manifest.content ?? DEFAULT_CONTENT_FOLDER) ?? DEFAULT_CONTENT_FOLDER,
    ...(manifest.partials !== undefined ? { partialsDir: path.join(root, manifest.partials) } : {}),
    files: { variables: variablesFile, prompts: promptsFile },
    variableOrder,
    computedOrder,
  };
}
