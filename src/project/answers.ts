/**
 * The answers a user gives up front, before any question is asked: an object, a JSON file of
 * answers, and `key=value` pairs typed by the template's variables (later ones win).
 */
import { readFile } from 'node:fs/promises';

import { errorMessage } from '../core/errors.js';
import { parseSetArguments, type Answers, type LoadedTemplate } from '../template/index.js';

/** A file of answers that cannot be read or is not a JSON object; `file` names it. */
export class AnswersFileError extends Error {
  constructor(
    message: string,
    readonly file: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'AnswersFileError';
  }
}

/** Reads a JSON file holding an object of answers; throws AnswersFileError naming the file and the problem. */
export async function readAnswersFile(file: string): Promise<Answers> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new AnswersFileError(`cannot read ${file}`, file, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AnswersFileError(`${file} is not valid JSON (${errorMessage(error)})`, file, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AnswersFileError(`${file} must hold a JSON object of answers`, file);
  }
  return value as Answers;
}

export interface GivenAnswers {
  /** Answers as an object. */
  answers?: Answers;
  /** A JSON file of answers (`--answers FILE`); its answers override `answers`. */
  answersFile?: string;
  /** `key=value` pairs (`--set`), typed by the template's variables; they override the others. */
  set?: readonly string[];
  /**
   * The environment a variable's `env` names is read from, for a variable none of the above
   * answers (the CLI passes its process's environment); unset, no environment is read.
   */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The answers given up front, merged in that order and typed by the template's variables; then,
 * for a variable still unanswered whose definition names an environment variable (`"env":
 * "MY_TOKEN"`, meant for secrets), that variable's value when it is set and not empty.
 */
export async function givenAnswers(template: LoadedTemplate, given: GivenAnswers): Promise<Answers> {
  const fromFile = given.answersFile === undefined ? {} : await readAnswersFile(given.answersFile);
  const answers = parseSetArguments(given.set ?? [], template.variables, { ...given.answers, ...fromFile });
  const fromEnv = Object.entries(template.variables).flatMap(([name, definition]) => {
    const value = definition.env === undefined ? undefined : given.env?.[definition.env];
    return value === undefined || value === '' || Object.hasOwn(answers, name) ? [] : [`${name}=${value}`];
  });
  return fromEnv.length === 0 ? answers : parseSetArguments(fromEnv, template.variables, answers);
}
