import { ExpressionEvaluator, isComputedDefault } from './expression.js';
import { firstLine } from '../core/errors.js';
import type { LoadedTemplate, VariableDefinition } from './load.js';
import { matchPattern } from './patterns.js';

export type Answers = Record<string, unknown>;

export interface AnswerProblem {
  /** Dotted path of the answer: `projectName`, `author.email`, `features[1]`. */
  name: string;
  message: string;
}

/** Every bad answer at once, so the user can fix them in one go. */
export class AnswersError extends Error {
  constructor(readonly problems: AnswerProblem[]) {
    super(`invalid answers:\n${problems.map((p) => `  ${p.name}: ${p.message}`).join('\n')}`);
    this.name = 'AnswersError';
  }
}

export interface ResolveOptions {
  /** Share one evaluator between calls. */
  evaluator?: ExpressionEvaluator;
  /**
   * Secret variables whose value is not known and not needed (`update` rendering files that do
   * not use them): unless given, they take no default, are not checked and stay out of the
   * answers; those whose condition holds are listed in the result's `withheld`.
   */
  withhold?: ReadonlySet<string>;
}

export interface ResolvedAnswers {
  /** Given answers merged over defaults; variables whose condition is false are absent. */
  answers: Answers;
  /** Computed values, by name, in dependency order. */
  computed: Record<string, string>;
  /** The variables of `withhold` that apply (their condition holds) and were left out of `answers`. */
  withheld?: string[];
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function typeMatches(type: VariableDefinition['type'], value: unknown): boolean {
  switch (type) {
    case undefined:
      return true;
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
  }
}

/** The value of a variable before validation: the given answer, else the default; objects merge per property. */
export function valueOf(definition: VariableDefinition, given: unknown): unknown {
  if (definition.type === 'object' || definition.properties) {
    const base = isPlainObject(definition.default) ? definition.default : {};
    if (given !== undefined && !isPlainObject(given)) return given;
    const merged: Record<string, unknown> = { ...structuredClone(base) };
    for (const [key, property] of Object.entries(definition.properties ?? {})) {
      const value = valueOf(property, isPlainObject(given) && Object.hasOwn(given, key) ? given[key] : undefined);
      if (value !== undefined) merged[key] = value;
    }
    for (const [key, value] of Object.entries(isPlainObject(given) ? given : {})) {
      if (!Object.hasOwn(merged, key)) merged[key] = value;
    }
    return Object.keys(merged).length === 0 && given === undefined && definition.default === undefined ? undefined : merged;
  }
  return given !== undefined ? given : structuredClone(definition.default);
}

/** ` (got "...")` for a message about a value; nothing for a secret, whose value is never shown. */
function got(definition: VariableDefinition, value: unknown): string {
  return definition.secret ? '' : ` (got ${JSON.stringify(value)})`;
}

/** Checks one value against its definition; pushes a problem per broken rule. */
export function checkValue(
  name: string,
  definition: VariableDefinition,
  value: unknown,
  problems: AnswerProblem[],
  extraPattern?: { source: string; message?: string },
): void {
  if (value === undefined || value === null) {
    if (definition.required) problems.push({ name, message: `is required${definition.env ? ` (give it with --set or the environment variable ${definition.env})` : ''}` });
    return;
  }
  if (!typeMatches(definition.type, value)) {
    problems.push({ name, message: `must be ${definition.type === 'array' || definition.type === 'object' || definition.type === 'integer' ? 'an' : 'a'} ${definition.type}${got(definition, value)}` });
    return;
  }
  if (definition.required && (value === '' || (Array.isArray(value) && value.length === 0))) {
    problems.push({ name, message: 'is required and must not be empty' });
  }
  const allowed = definition.enum;
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      const itemName = `${name}[${index}]`;
      if (allowed && !allowed.some((choice) => choice === item)) {
        problems.push({ name: itemName, message: `must be one of ${allowed.map((c) => JSON.stringify(c)).join(', ')}${got(definition, item)}` });
      }
      if (definition.items) checkValue(itemName, definition.items, item, problems);
      if (typeof item === 'string') checkPattern(itemName, definition, item, problems, extraPattern);
    });
  } else if (allowed && !allowed.some((choice) => choice === value)) {
    problems.push({ name, message: `must be one of ${allowed.map((c) => JSON.stringify(c)).join(', ')}${got(definition, value)}` });
  }
  if (typeof value === 'string') checkPattern(name, definition, value, problems, extraPattern);
  if (isPlainObject(value)) {
    for (const [key, property] of Object.entries(definition.properties ?? {})) {
      checkValue(`${name}.${key}`, property, value[key], problems);
    }
  }
}

function checkPattern(
  name: string,
  definition: VariableDefinition,
  value: string,
  problems: AnswerProblem[],
  extraPattern?: { source: string; message?: string },
): void {
  const rules = [
    ...(definition.validation ? [{ source: definition.validation, message: definition.invalidMessage }] : []),
    ...(extraPattern && extraPattern.source !== definition.validation ? [extraPattern] : []),
  ];
  for (const rule of rules) {
    const outcome = matchPattern(rule.source, value);
    if ('refused' in outcome) problems.push({ name, message: outcome.refused });
    else if (!outcome.matches) problems.push({ name, message: `${rule.message ?? `must match ${rule.source}`}${got(definition, value)}` });
  }
}

/**
 * The value of a top-level variable before validation, as `valueOf`, but a computed default
 * (`"{{ projectName | snake_case }}"`) is worked out in `scope` (the answers before it) and typed
 * like the variable (`"true"` for a boolean is true). Throws ExpressionError when it cannot be
 * worked out.
 */
export function answerOrDefault(definition: VariableDefinition, given: unknown, scope: object, evaluator: ExpressionEvaluator): unknown {
  if (given !== undefined || !isComputedDefault(definition.default)) return valueOf(definition, given);
  const text = evaluator.interpolate(definition.default, scope);
  const type = definition.type;
  if (type === undefined || type === 'string') return text;
  // A placeholder that renders nothing (a variable left out by its condition) gives no default.
  return text.trim() === '' ? undefined : coerce(definition, text.trim(), '');
}

/**
 * Merges given answers with the template's defaults, drops variables whose condition is false,
 * validates the whole set (types, enums, validation patterns, required values; defaults too) and
 * evaluates the computed values. Throws AnswersError listing every bad field.
 */
export function resolveAnswers(template: LoadedTemplate, given: Answers = {}, options: ResolveOptions = {}): ResolvedAnswers {
  const evaluator = options.evaluator ?? new ExpressionEvaluator();
  const problems: AnswerProblem[] = [];
  const answers: Answers = {};
  const withheld: string[] = [];

  for (const name of Object.keys(given)) {
    if (Object.hasOwn(template.computed, name)) problems.push({ name, message: 'is a computed value and cannot be answered' });
    else if (!Object.hasOwn(template.variables, name)) {
      problems.push({ name, message: `is not a variable of this template (variables: ${Object.keys(template.variables).join(', ')})` });
    }
  }

  const promptPatterns = new Map(
    template.prompts.filter((p) => p.validate).map((p) => [p.name, { source: p.validate ?? '', message: p.invalidMessage }]),
  );

  for (const name of template.variableOrder) {
    const definition = template.variables[name];
    if (!definition) continue;
    if (definition.condition && !evaluator.condition(definition.condition, answers)) continue;
    const answer = Object.hasOwn(given, name) ? given[name] : undefined;
    if (answer === undefined && options.withhold?.has(name)) {
      withheld.push(name);
      continue;
    }
    let value: unknown;
    try {
      // Variables come in an order where those a default reads are resolved before it.
      value = answerOrDefault(definition, answer, answers, evaluator);
    } catch (error) {
      problems.push({ name, message: `its default ${JSON.stringify(definition.default)} cannot be worked out: ${firstLine(error)}` });
      continue;
    }
    checkValue(name, definition, value, problems, promptPatterns.get(name));
    if (value !== undefined) answers[name] = value;
  }
  if (problems.length > 0) throw new AnswersError(problems);

  const computed: Record<string, string> = {};
  for (const name of template.computedOrder) {
    const expression = template.computed[name];
    if (expression !== undefined) computed[name] = evaluator.value(expression, { ...answers, ...computed });
  }
  return { answers, computed, ...(options.withhold ? { withheld } : {}) };
}

function coerce(definition: VariableDefinition | undefined, raw: string, name: string): unknown {
  const type = definition?.type;
  if (type === 'array') {
    if (raw.trim().startsWith('[')) return parseJson(raw, name, definition);
    return raw.split(',').map((item) => item.trim()).filter((item) => item !== '');
  }
  if (type === 'boolean') {
    if (/^(true|yes|y|1|on)$/i.test(raw)) return true;
    if (/^(false|no|n|0|off)$/i.test(raw)) return false;
    return raw;
  }
  if (type === 'number' || type === 'integer') {
    const number = Number(raw);
    return raw.trim() !== '' && Number.isFinite(number) ? number : raw;
  }
  if (type === 'object') return parseJson(raw, name, definition);
  return raw;
}

function parseJson(raw: string, name: string, definition: VariableDefinition | undefined): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    throw new AnswersError([{ name, message: `must be JSON${definition ? got(definition, raw) : ` (got ${JSON.stringify(raw)})`}` }]);
  }
}

/**
 * Turns `--set key=value` arguments into answers, typed by the variables' definitions:
 * arrays from comma lists (`features=api,docker`), booleans, numbers, and nested keys
 * (`author.email=a@b.c`). Later arguments win.
 */
export function parseSetArguments(
  pairs: readonly string[],
  variables: Readonly<Record<string, VariableDefinition>>,
  into: Answers = {},
): Answers {
  const result: Answers = structuredClone(into);
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) throw new AnswersError([{ name: pair, message: 'must be key=value' }]);
    const key = pair.slice(0, equals).trim();
    const raw = pair.slice(equals + 1);
    const [head = '', ...rest] = key.split('.');
    if (['__proto__', 'constructor', 'prototype'].some((bad) => key.split('.').includes(bad))) {
      throw new AnswersError([{ name: key, message: 'is not an allowed name' }]);
    }
    let definition = variables[head];
    if (rest.length === 0) {
      result[head] = coerce(definition, raw, key);
      continue;
    }
    const existing = result[head];
    let target: Record<string, unknown> = isPlainObject(existing) ? existing : {};
    result[head] = target;
    rest.forEach((segment, index) => {
      definition = definition?.properties?.[segment];
      if (index === rest.length - 1) target[segment] = coerce(definition, raw, key);
      else {
        const inner = target[segment];
        const next: Record<string, unknown> = isPlainObject(inner) ? inner : {};
        target[segment] = next;
        target = next;
      }
    });
  }
  return result;
}
