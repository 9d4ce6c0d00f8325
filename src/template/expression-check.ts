/**
 * Checks every expression of a template as written in its JSON files: variable `condition`s and
 * computed defaults, `computed` values, prompt `when`s, the manifest's `files[].when` and `tasks[].when`. Each must be well formed
 * (see ExpressionEvaluator.check) and name only what it can see: conditions name variables;
 * the others variables and computed values (declared, or the standard ones computed from
 * `projectName`). Works on documents of any shape (a field of the wrong type is skipped; the
 * schema reports it).
 */
import { escapePointerSegment } from '../core/json-source.js';
import { isRecord } from '../core/is-record.js';
import type { RuleViolation } from '../core/messages.js';
import { ExpressionError, ExpressionEvaluator, isComputedDefault, type ExpressionKind } from './expression.js';
import { implicitComputed } from './standard-variables.js';
import { didYouMean } from './suggest.js';

export interface ExpressionDocuments {
  manifest?: { file: string; value: unknown };
  variables?: { file: string; value: unknown };
  prompts?: { file: string; value: unknown };
}

/** One expression and where it is written. */
export interface ExpressionSite {
  file: string;
  pointer: string;
  text: string;
  kind: ExpressionKind;
  /** Conditions and computed defaults of variables are worked out before any computed value, so they may name variables only. */
  names: 'variables' | 'all';
  /** How messages name it: `when of prompt "database"`. */
  label: string;
}

const entriesOf = (value: unknown): [string, unknown][] => (isRecord(value) ? Object.entries(value) : []);
const field = (value: unknown, key: string): unknown => (isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** Every expression of the three documents, in file order. */
function expressionSites(documents: ExpressionDocuments): ExpressionSite[] {
  const sites: ExpressionSite[] = [];
  const { manifest, variables, prompts } = documents;
  if (variables) {
    for (const [name, definition] of entriesOf(field(variables.value, 'variables'))) {
      const condition = text(field(definition, 'condition'));
      const pointer = `/variables/${escapePointerSegment(name)}/condition`;
      if (condition) sites.push({ file: variables.file, pointer, text: condition, kind: 'condition', names: 'variables', label: `condition of variable "${name}"` });
      const fallback = field(definition, 'default');
      if (isComputedDefault(fallback)) {
        sites.push({ file: variables.file, pointer: `/variables/${escapePointerSegment(name)}/default`, text: fallback, kind: 'default', names: 'variables', label: `default of variable "${name}"` });
      }
    }
    for (const [name, expression] of entriesOf(field(variables.value, 'computed'))) {
      const value = text(expression);
      const pointer = `/computed/${escapePointerSegment(name)}`;
      if (value) sites.push({ file: variables.file, pointer, text: value, kind: 'value', names: 'all', label: `computed value "${name}"` });
    }
  }
  if (prompts) {
    const list = field(prompts.value, 'prompts');
    (Array.isArray(list) ? list : []).forEach((prompt: unknown, index) => {
      const when = text(field(prompt, 'when'));
      const name = text(field(prompt, 'name')) ?? `#${index}`;
      if (when) sites.push({ file: prompts.file, pointer: `/prompts/${index}/when`, text: when, kind: 'condition', names: 'all', label: `when of prompt "${name}"` });
    });
  }
  if (manifest) {
    const rules = field(manifest.value, 'files');
    (Array.isArray(rules) ? rules : []).forEach((rule: unknown, index) => {
      const when = text(field(rule, 'when'));
      const name = text(field(rule, 'path')) ?? `#${index}`;
      if (when) sites.push({ file: manifest.file, pointer: `/files/${index}/when`, text: when, kind: 'condition', names: 'all', label: `when of files rule "${name}"` });
    });
    const tasks = field(manifest.value, 'tasks');
    (Array.isArray(tasks) ? tasks : []).forEach((task: unknown, index) => {
      const when = text(field(task, 'when'));
      const name = text(field(task, 'description')) ?? `#${index}`;
      if (when) sites.push({ file: manifest.file, pointer: `/tasks/${index}/when`, text: when, kind: 'condition', names: 'all', label: `when of task "${name}"` });
    });
  }
  return sites;
}

/** The names expressions may read: the variables, and the computed values (declared and implicit). */
export function scopeNames(variablesDocument: unknown): { variables: string[]; computed: string[] } {
  const variables = entriesOf(field(variablesDocument, 'variables')).map(([name]) => name);
  const declared = entriesOf(field(variablesDocument, 'computed')).map(([name]) => name);
  return { variables, computed: [...declared, ...Object.keys(implicitComputed(variables, declared))] };
}

/** A problem of one expression, in the file that holds it. */
export interface ExpressionProblem extends RuleViolation {
  file: string;
}

/**
 * The problems of every expression: INVALID_EXPRESSION for one that is not well formed (what is
 * wrong, and how to write it), UNKNOWN_VARIABLE for a name it cannot see (with the closest known
 * name; only when the variables file could be read).
 */
export function checkExpressions(documents: ExpressionDocuments, evaluator = new ExpressionEvaluator()): ExpressionProblem[] {
  const names = scopeNames(documents.variables?.value);
  const variables = new Set(names.variables);
  const all = new Set([...names.variables, ...names.computed]);
  const namesKnown = isRecord(field(documents.variables?.value, 'variables'));
  const problems: ExpressionProblem[] = [];
  for (const site of expressionSites(documents)) {
    let references: string[];
    try {
      references = evaluator.references(site.text, site.kind);
    } catch (error) {
      const reason = error instanceof ExpressionError ? error.message : String(error);
      const how =
        site.kind === 'condition'
          ? 'write it as values joined by operators, e.g. features contains "docker"'
          : site.kind === 'default'
            ? 'write it as text with {{ value }} placeholders, e.g. {{ projectName | snake_case }}'
            : 'write it as a value with filters, e.g. projectName | package_name';
      problems.push({ file: site.file, pointer: site.pointer, code: 'INVALID_EXPRESSION', message: `${site.label} does not parse: ${reason.replace(/^cannot parse "(?:[^"\\]|\\.)*": /, '')}; ${how}` });
      continue;
    }
    // Without a readable variables file every name would look unknown; its own problem is reported instead.
    if (!namesKnown) continue;
    const known = site.names === 'variables' ? variables : all;
    for (const name of references) {
      if (known.has(name)) continue;
      const message = all.has(name)
        ? `${site.label} names computed value "${name}"; a ${site.kind === 'default' ? 'default' : 'condition'} of a variable can only name variables (they are resolved before computed values)`
        : `${site.label} names unknown variable "${name}"${didYouMean(name, known)}; declare it in ${documents.variables?.file ?? 'the variables file'} or fix the spelling`;
      problems.push({ file: site.file, pointer: site.pointer, code: 'UNKNOWN_VARIABLE', message });
    }
  }
  return problems;
}
