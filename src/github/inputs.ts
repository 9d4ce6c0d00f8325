/**
 * Reading a GitHub Action's inputs from the environment the runner gives, the way @actions/core
 * does, as pure functions of that environment. Both actions parse their inputs with these.
 */

import { parseHttpUrl } from '../core/http-url.js';

/** A cell of a job summary table. */
export type SummaryCell = string | { data: string; header?: boolean };

/** The part of @actions/core both actions use; tests pass a recording fake. */
export interface ActionCoreBase {
  setOutput(name: string, value: string): void;
  setSecret(secret: string): void;
  setFailed(message: string): void;
  info(message: string): void;
  summary: {
    addHeading(text: string, level?: number): unknown;
    addTable(rows: SummaryCell[][]): unknown;
    addRaw(text: string, addEOL?: boolean): unknown;
    write(): Promise<unknown>;
  };
}

/** The environment of an action run (`process.env`, or a test's own). */
export type ActionEnv = Readonly<Record<string, string | undefined>>;

/** An input is missing or breaks its rule; the message names the input. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

/** Reads an input the way @actions/core does: `INPUT_<NAME>` upper-cased, spaces to `_`, hyphens kept. */
export function readInput(env: ActionEnv, name: string): string {
  return (env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

/** A YAML 1.2 core-schema boolean, as core.getBooleanInput accepts; the default when empty. */
export function readBooleanInput(env: ActionEnv, name: string, fallback: boolean): boolean {
  const value = readInput(env, name);
  if (value === '') return fallback;
  if (['true', 'True', 'TRUE'].includes(value)) return true;
  if (['false', 'False', 'FALSE'].includes(value)) return false;
  throw new InputError(`input ${name} must be true or false (got ${JSON.stringify(value)})`);
}

/** A list input: one item per line or comma-separated; blanks dropped. */
export function readListInput(env: ActionEnv, name: string): string[] {
  return readInput(env, name)
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Throws InputError unless `value` is an http(s) URL. */
export function checkHttpUrlInput(name: string, value: string): void {
  if (!parseHttpUrl(value)) {
    throw new InputError(`input ${name} must be an http(s) URL (got ${JSON.stringify(value)})`);
  }
}
