import type { input } from '@inquirer/prompts';

import { answerOrDefault, checkValue, type AnswerProblem, type Answers } from './answers.js';
import { ExpressionEvaluator } from './expression.js';
import type { LoadedTemplate, PromptDefinition, VariableDefinition } from './load.js';
import { matchPattern } from './patterns.js';

/** What a validate callback returns: true when the value is fine, else the message to show. */
export type PromptValidation = boolean | string | Promise<boolean | string>;

export interface PromptChoice {
  /** The label shown. */
  name: string;
  value: string;
}

export interface InputPromptOptions {
  message: string;
  default?: string;
  validate?: (value: string) => PromptValidation;
}

export interface SelectPromptOptions {
  message: string;
  choices: readonly PromptChoice[];
  default?: string;
}

export interface CheckboxPromptOptions {
  message: string;
  choices: readonly (PromptChoice & { checked?: boolean })[];
  required?: boolean;
}

export interface ConfirmPromptOptions {
  message: string;
  /** The answer Enter gives: shown as (Y/n) when true, (y/N) when false. */
  default: boolean;
}

export interface PasswordPromptOptions {
  message: string;
  validate?: (value: string) => PromptValidation;
}

/** The subset of @inquirer/prompts that promptForAnswers uses; tests pass their own. */
export interface Prompter {
  input(options: InputPromptOptions): Promise<string>;
  select(options: SelectPromptOptions): Promise<string>;
  checkbox(options: CheckboxPromptOptions): Promise<string[]>;
  /** A yes/no question (a `confirm` prompt); without it, an input taking yes or no. */
  confirm?(options: ConfirmPromptOptions): Promise<boolean>;
  /** Text typed without echo (the question of a secret variable); without it, a secret cannot be asked. */
  password?(options: PasswordPromptOptions): Promise<string>;
}

/** Where inquirer reads keys and draws (defaults to the process's stdin and stdout). */
export type PromptContext = NonNullable<Parameters<typeof input>[1]>;

/** A Prompter backed by the real @inquirer/prompts functions. */
function inquirerPrompter(context?: PromptContext): Prompter {
  // Loaded at the first question, not with this module: the prompts (and their editor's text encodings) would be most of what importing the API costs.
  const prompts = (): Promise<typeof import('@inquirer/prompts')> => import('@inquirer/prompts');
  return {
    input: async (options) => (await prompts()).input(options, context),
    select: async (options) => (await prompts()).select({ ...options, choices: [...options.choices] }, context),
    checkbox: async (options) => (await prompts()).checkbox({ ...options, choices: [...options.choices] }, context),
    confirm: async (options) => (await prompts()).confirm(options, context),
    // No mask: not even the length of a secret is shown.
    password: async (options) => (await prompts()).password(options, context),
  };
}

export const defaultPrompter: Prompter = inquirerPrompter();

/** The user stopped the questions (Ctrl-C). */
export class PromptCancelledError extends Error {
  constructor(message = 'cancelled', options?: ErrorOptions) {
    super(message, options);
    this.name = 'PromptCancelledError';
  }
}

export interface PromptOptions {
  prompter?: Prompter;
  evaluator?: ExpressionEvaluator;
  /** Variables not to ask for (`update` leaves out the secrets no file it renders needs). */
  skip?: ReadonlySet<string>;
}

type Conversion = { value: unknown } | { error: string };

/** ` (got "...")` in a message about what was typed; nothing for a secret, which is never shown. */
const typed = (definition: VariableDefinition | undefined, text: string): string => (definition?.secret ? '' : ` (got ${JSON.stringify(text)})`);

/** Turns the text typed into an input prompt into a value of the variable's type. */
function fromText(definition: VariableDefinition | undefined, text: string): Conversion {
  const type = definition?.type;
  const trimmed = text.trim();
  if (type === undefined || type === 'string') return { value: text };
  if (trimmed === '') {
    return definition?.required ? { error: 'a value is required' } : { value: undefined };
  }
  switch (type) {
    case 'number':
    case 'integer': {
      const number = Number(trimmed);
      if (!Number.isFinite(number)) return { error: `must be a number${typed(definition, text)}` };
      if (type === 'integer' && !Number.isInteger(number)) return { error: `must be an integer${typed(definition, text)}` };
      return { value: number };
    }
    case 'boolean':
      if (/^(y|yes|true)$/i.test(trimmed)) return { value: true };
      if (/^(n|no|false)$/i.test(trimmed)) return { value: false };
      return { error: `answer yes or no${typed(definition, text)}` };
    case 'array':
      if (trimmed.startsWith('[')) return fromJson(trimmed, 'a JSON array');
      return { value: trimmed.split(',').map((item) => item.trim()).filter((item) => item !== '') };
    case 'object':
      return fromJson(trimmed, 'a JSON object');
  }
}

function fromJson(text: string, what: string): Conversion {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { error: `must be ${what}` };
  }
}

/** The text an input prompt offers as its default for a value. */
function toText(definition: VariableDefinition | undefined, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value) && definition?.type === 'array' && value.every((item) => typeof item === 'string' && !item.includes(','))) {
    return value.join(', ');
  }
  return JSON.stringify(value);
}

/** A select's choice value (always text) as a value of the variable's type. */
function fromChoice(definition: VariableDefinition | undefined, value: string): unknown {
  const type = definition?.type;
  if (type !== 'number' && type !== 'integer' && type !== 'boolean') return value;
  const conversion = fromText(definition, value);
  return 'value' in conversion ? conversion.value : value;
}

interface PatternRule {
  source: string;
  message: string;
}

/** The prompt's `validate` and the variable's `validation`, each with its message. */
function patternRules(prompt: PromptDefinition, definition: VariableDefinition | undefined): PatternRule[] {
  const rules: PatternRule[] = [];
  if (prompt.validate) {
    const sameAsVariable = prompt.validate === definition?.validation;
    rules.push({
      source: prompt.validate,
      message: prompt.invalidMessage ?? (sameAsVariable ? definition?.invalidMessage : undefined) ?? `must match ${prompt.validate}`,
    });
  }
  if (definition?.validation && definition.validation !== prompt.validate) {
    rules.push({ source: definition.validation, message: definition.invalidMessage ?? `must match ${definition.validation}` });
  }
  return rules;
}

const describeProblem = (problem: AnswerProblem): string => `${problem.name} ${problem.message}`;

/**
 * Checks what was typed into an input prompt; returns the value, or the message to show
 * (inquirer then shows it and asks again).
 */
function checkInput(prompt: PromptDefinition, definition: VariableDefinition | undefined, text: string): Conversion {
  const conversion = fromText(definition, text);
  if ('error' in conversion) return conversion;
  const { value } = conversion;
  const messages: string[] = [];
  const texts = typeof value === 'string' ? [value] : Array.isArray(value) ? value.filter((item) => typeof item === 'string') : [];
  if (texts.length > 0) {
    for (const rule of patternRules(prompt, definition)) {
      const outcomes = texts.map((text) => matchPattern(rule.source, text));
      const refused = outcomes.find((outcome) => 'refused' in outcome);
      if (refused && 'refused' in refused) messages.push(refused.refused);
      else if (outcomes.some((outcome) => 'matches' in outcome && !outcome.matches)) messages.push(rule.message);
    }
  }
  if (definition && value !== undefined) {
    // Type, enum and required checks; the patterns were checked above with their own messages.
    const problems: AnswerProblem[] = [];
    checkValue(prompt.name, { ...definition, validation: undefined }, value, problems);
    messages.push(...problems.map(describeProblem));
  }
  return messages.length > 0 ? { error: messages.join('; ') } : { value };
}

/**
 * The variables as they stand: answers so far merged over the defaults, without the variables
 * whose condition is false (listed in `inapplicable`), plus the computed values that can be
 * worked out from them. This is the scope a prompt's `when` is evaluated in.
 */
function currentScope(
  template: LoadedTemplate,
  answers: Answers,
  evaluator: ExpressionEvaluator,
): { scope: Answers; inapplicable: Set<string> } {
  const scope: Answers = {};
  const inapplicable = new Set<string>();
  for (const name of template.variableOrder) {
    const definition = template.variables[name];
    if (!definition) continue;
    if (definition.condition && !evaluator.condition(definition.condition, scope)) {
      inapplicable.add(name);
      continue;
    }
    let value: unknown;
    try {
      value = answerOrDefault(definition, Object.hasOwn(answers, name) ? answers[name] : undefined, scope, evaluator);
    } catch {
      // A default that cannot be worked out yet; resolveAnswers reports it.
    }
    if (value !== undefined) scope[name] = value;
  }
  for (const [name, value] of Object.entries(answers)) {
    if (!Object.hasOwn(template.variables, name) && !Object.hasOwn(scope, name)) scope[name] = value;
  }
  for (const name of template.computedOrder) {
    const expression = template.computed[name];
    if (expression === undefined) continue;
    try {
      scope[name] = evaluator.value(expression, scope);
    } catch {
      // A value that cannot be computed yet (a bad answer); resolveAnswers reports the answer.
    }
  }
  return { scope, inapplicable };
}

function isCancel(error: unknown): boolean {
  return error instanceof Error && error.name === 'ExitPromptError';
}

async function ask(
  prompter: Prompter,
  prompt: PromptDefinition,
  definition: VariableDefinition | undefined,
  current: unknown,
): Promise<{ value: unknown } | undefined> {
  const choices: PromptChoice[] = (prompt.choices ?? []).map((choice) => ({ name: choice.name, value: choice.value }));
  switch (prompt.type) {
    case 'confirm': {
      if (prompter.confirm) return { value: await prompter.confirm({ message: prompt.message, default: current === true }) };
      const text = await prompter.input({
        message: `${prompt.message} (yes/no)`,
        default: current === true ? 'yes' : 'no',
        validate: (typed) => /^(y|yes|true|n|no|false)$/i.test(typed.trim()) || 'answer yes or no',
      });
      return { value: /^(y|yes|true)$/i.test(text.trim()) };
    }
    case 'select': {
      const defaultChoice = choices.find((choice) => current !== undefined && fromChoice(definition, choice.value) === current);
      const answer = await prompter.select({
        message: prompt.message,
        choices,
        ...(defaultChoice ? { default: defaultChoice.value } : {}),
      });
      return { value: fromChoice(definition, answer) };
    }
    case 'multiselect': {
      const checked: unknown[] = Array.isArray(current) ? current : [];
      const answer = await prompter.checkbox({
        message: prompt.message,
        choices: choices.map((choice) => ({ ...choice, checked: checked.includes(fromChoice(definition?.items, choice.value)) })),
        ...(definition?.required ? { required: true } : {}),
      });
      return { value: answer.map((item) => fromChoice(definition?.items, item)) };
    }
    case 'input': {
      if (definition?.secret) return askSecret(prompter, prompt, definition, current);
      const defaultText = toText(definition, current);
      const text = await prompter.input({
        message: prompt.message,
        ...(defaultText !== undefined ? { default: defaultText } : {}),
        validate: (typed) => {
          const checked = checkInput(prompt, definition, typed);
          return 'error' in checked ? checked.error : true;
        },
      });
      const checked = checkInput(prompt, definition, text);
      // A real prompt only returns valid text; a scripted one may not. Convert what can be
      // converted and leave the rest to resolveAnswers, which reports every bad answer.
      if ('value' in checked) return checked.value === undefined ? undefined : { value: checked.value };
      const conversion = fromText(definition, text);
      return { value: 'value' in conversion ? conversion.value : text };
    }
  }
}

/**
 * Asks for a secret without echo. Nothing typed keeps the variable's default, when it has one (the
 * default itself is never shown).
 */
async function askSecret(
  prompter: Prompter,
  prompt: PromptDefinition,
  definition: VariableDefinition,
  current: unknown,
): Promise<{ value: unknown } | undefined> {
  if (!prompter.password) {
    throw new Error(`this prompter cannot ask for the secret "${prompt.name}" without echo; give it with --set${definition.env ? ` or the environment variable ${definition.env}` : ''}`);
  }
  const keepsDefault = (typed: string): boolean => typed === '' && current !== undefined;
  const text = await prompter.password({
    message: prompt.message,
    validate: (typed) => {
      if (keepsDefault(typed)) return true;
      const checked = checkInput(prompt, definition, typed);
      return 'error' in checked ? checked.error : true;
    },
  });
  if (keepsDefault(text)) return undefined;
  const checked = checkInput(prompt, definition, text);
  if ('value' in checked) return checked.value === undefined ? undefined : { value: checked.value };
  const conversion = fromText(definition, text);
  return { value: 'value' in conversion ? conversion.value : text };
}

/**
 * Asks the template's prompts in file order and returns `given` plus the answers. A prompt is
 * skipped when its variable is already given, when its `when` is false (evaluated against the
 * answers so far merged over the defaults) or when its variable's condition is false. Each prompt
 * offers the variable's current value as its default (a computed default worked out from the
 * answers so far). A `confirm` prompt asks yes or no; the `input` of a secret variable is typed
 * without echo. Throws PromptCancelledError on Ctrl-C.
 * The result still goes through resolveAnswers, which adds defaults and computed values.
 */
export async function promptForAnswers(
  template: LoadedTemplate,
  given: Answers,
  options: PromptOptions = {},
): Promise<Answers> {
  const prompter = options.prompter ?? defaultPrompter;
  const evaluator = options.evaluator ?? new ExpressionEvaluator();
  const answers: Answers = { ...given };

  for (const prompt of template.prompts) {
    if (Object.hasOwn(answers, prompt.name) || options.skip?.has(prompt.name)) continue;
    const definition = Object.hasOwn(template.variables, prompt.name) ? template.variables[prompt.name] : undefined;
    const { scope, inapplicable } = currentScope(template, answers, evaluator);
    // A variable whose condition is false is dropped by resolveAnswers: asking would be wasted.
    if (inapplicable.has(prompt.name)) continue;
    if (prompt.when && !evaluator.condition(prompt.when, scope)) continue;
    // The default offered: the variable's, a computed one worked out from the answers so far.
    const current = scope[prompt.name];

    let answer: { value: unknown } | undefined;
    try {
      answer = await ask(prompter, prompt, definition, current);
    } catch (error) {
      if (isCancel(error)) throw new PromptCancelledError('cancelled', { cause: error });
      throw error;
    }
    if (answer !== undefined) answers[prompt.name] = answer.value;
  }
  return answers;
}
