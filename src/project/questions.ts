/**
 * The questions a registry template asks, for `info`: the registry entry does not hold them, the
 * template's prompts file in its archive does. The archive is downloaded and verified as `create`
 * does (same URL rules, integrity, size and unpacking limits) into a temp folder that is removed
 * in the end; nothing of it runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { downloadTemplate, type DownloadLimits, type ProvenanceOutcome, type ProvenancePolicy, type RegistryClient } from '../client/index.js';
import type { TemplateEntry } from '../core/schema-types.js';
import { valueOf } from '../template/answers.js';
import { loadTemplate, type LoadedTemplate, type VariableDefinition } from '../template/index.js';

/** One question of a template, with what its variable says about the answer. */
export interface TemplateQuestion {
  /** The variable it answers (the name `--set name=value` takes). */
  name: string;
  message: string;
  type: 'input' | 'select' | 'multiselect' | 'confirm';
  /** For select and multiselect: the label shown and the value it gives. */
  choices?: { name: string; value: string }[];
  /** The answer when none is given. */
  default?: unknown;
  /** The variable's type (`string`, `array`, ...), when declared. */
  valueType?: string;
  /** Asked only when this expression is true (the prompt's `when`). */
  when?: string;
  /** The variable exists only when this expression is true (its `condition`). */
  condition?: string;
  /** A regular expression the answer must match (the prompt's `validate`, else the variable's `validation`). */
  pattern?: string;
  required?: boolean;
  /** The answer is a secret: typed without echo, written nowhere. */
  secret?: boolean;
  /** The environment variable the answer can also come from. */
  env?: string;
}

/** A variable no question asks: it takes its default unless `--set` or `--answers` gives it. */
export interface UnaskedVariable {
  name: string;
  valueType?: string;
  default?: unknown;
  description?: string;
  condition?: string;
}

export interface TemplateQuestions {
  questions: TemplateQuestion[];
  unasked: UnaskedVariable[];
  /** What the provenance check of the archive found (set when it was downloaded). */
  provenance?: ProvenanceOutcome;
}

/** A variable's value when nothing answers it (an object's from its properties' defaults). */
const defaultOf = (variable: VariableDefinition | undefined): unknown => (variable ? valueOf(variable, undefined) : undefined);

/** The questions of a loaded template, in the order they are asked, and the variables none asks. */
export function questionsOf(template: LoadedTemplate): TemplateQuestions {
  const asked = new Set<string>();
  const questions = template.prompts.map((prompt): TemplateQuestion => {
    asked.add(prompt.name);
    const variable = Object.hasOwn(template.variables, prompt.name) ? template.variables[prompt.name] : undefined;
    const pattern = prompt.validate ?? variable?.validation;
    const fallback = defaultOf(variable);
    return {
      name: prompt.name,
      message: prompt.message,
      type: prompt.type,
      ...(prompt.choices ? { choices: prompt.choices.map((choice) => ({ name: choice.name, value: choice.value })) } : {}),
      ...(fallback !== undefined ? { default: fallback } : {}),
      ...(variable?.type ? { valueType: variable.type } : {}),
      ...(prompt.when ? { when: prompt.when } : {}),
      ...(variable?.condition ? { condition: variable.condition } : {}),
      ...(pattern ? { pattern } : {}),
      ...(variable?.required ? { required: true } : {}),
      ...(variable?.secret ? { secret: true } : {}),
      ...(variable?.env ? { env: variable.env } : {}),
    };
  });
  const unasked = Object.entries(template.variables)
    .filter(([name]) => !asked.has(name))
    .map(([name, variable]): UnaskedVariable => ({
      name,
      ...(variable.type ? { valueType: variable.type } : {}),
      ...(defaultOf(variable) !== undefined ? { default: defaultOf(variable) } : {}),
      ...(variable.description ? { description: variable.description } : {}),
      ...(variable.condition ? { condition: variable.condition } : {}),
    }));
  return { questions, unasked };
}

export interface FetchQuestionsOptions {
  /** The registry the entry comes from (its URL decides which archive URLs are accepted). */
  client: RegistryClient;
  entry: TemplateEntry;
  fetch?: typeof globalThis.fetch;
  /** Stops the download (a time limit, Ctrl-C). */
  signal?: AbortSignal;
  limits?: DownloadLimits;
  /** How the template's provenance is checked (default `warn`, the public-good root). */
  provenance?: ProvenancePolicy;
}

/**
 * Downloads and verifies the entry's archive into a temp folder, loads the template and returns
 * its questions. Throws what `downloadTemplate` and `loadTemplate` throw (DownloadError,
 * IntegrityError, UnsafeArchiveError, TemplateLoadError).
 */
export async function fetchTemplateQuestions(options: FetchQuestionsOptions): Promise<TemplateQuestions> {
  const work = await mkdtemp(path.join(tmpdir(), 'template-info-'));
  try {
    const downloaded = await downloadTemplate(options.entry, path.join(work, 'template'), {
      documentUrl: options.client.registryUrl,
      // Reading the questions is not a use of the template: the server does not count it.
      purpose: 'inspect',
      allowUnverified: true,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.provenance ? { provenance: options.provenance } : {}),
    });
    return { ...questionsOf(await loadTemplate(downloaded.dir)), provenance: downloaded.provenance };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
