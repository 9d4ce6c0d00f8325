/**
 * What a template's page shows besides its registry entries: its README, the questions `create`
 * asks, and each version's change log section. The generator reads them from the archive of the
 * version the page presents and writes them as `page` in `templates/<id>.json`; the page's script
 * reads them back from there (strangers' text: only the expected types are kept, within the limits).
 */
import { isObject } from './list.js';

/** The most characters of a README kept (the rest is cut, and the page says so). */
export const MAX_README_CHARS = 64 * 1024;
/** The most characters of one version's change log section kept. */
export const MAX_CHANGES_CHARS = 16 * 1024;
/** The most questions kept, and the most choices of one. */
const MAX_QUESTIONS = 100;
const MAX_CHOICES = 50;
/** The most characters of one question's texts (message, help, default, each choice). */
const MAX_QUESTION_CHARS = 500;
/** The most versions whose change log sections are kept. */
export const MAX_CHANGES_VERSIONS = 200;

/** One question `create` asks. */
export interface PageQuestion {
  /** The variable it answers. */
  name: string;
  /** What is asked. */
  message: string;
  /** `input`, `select`, `multiselect` or `confirm`. */
  type: string;
  /** The choices of a select or multiselect (their names). */
  choices?: string[];
  /** The default answer, as text. */
  default?: string;
  /** The variable's description, when it says more than the question. */
  help?: string;
}

/** `page` of a template's file. */
export interface TemplatePageText {
  /** The version whose archive the texts were read from (the one the page presents). */
  version: string;
  /** Its README (Markdown), at most MAX_README_CHARS. */
  readme?: string;
  /** True when the README was longer and was cut. */
  readmeCut?: boolean;
  /** The questions `create` asks, in order. */
  questions?: PageQuestion[];
  /** Each version's change log section (Markdown), by version, as that archive's change log has it. */
  changes?: Record<string, string>;
}

/** `text` cut at `max` characters (never in the middle of a surrogate pair). */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? '') ? max - 1 : max;
  return text.slice(0, end);
}

const text = (value: unknown, max: number): string | undefined => (typeof value === 'string' && value !== '' ? cutText(value, max) : undefined);

function readQuestion(raw: unknown): PageQuestion | undefined {
  if (!isObject(raw)) return undefined;
  const name = text(raw.name, MAX_QUESTION_CHARS);
  const message = text(raw.message, MAX_QUESTION_CHARS);
  const type = text(raw.type, 20);
  if (name === undefined || message === undefined || type === undefined) return undefined;
  const choices = Array.isArray(raw.choices)
    ? raw.choices
        .slice(0, MAX_CHOICES)
        .map((choice) => text(choice, MAX_QUESTION_CHARS))
        .filter((choice): choice is string => choice !== undefined)
    : undefined;
  const answer = text(raw.default, MAX_QUESTION_CHARS);
  const help = text(raw.help, MAX_QUESTION_CHARS);
  return { name, message, type, ...(choices && choices.length > 0 ? { choices } : {}), ...(answer === undefined ? {} : { default: answer }), ...(help === undefined ? {} : { help }) };
}

/** The `page` of a template's file as read by the page: undefined when it is not one. */
export function readPageText(raw: unknown): TemplatePageText | undefined {
  if (!isObject(raw) || typeof raw.version !== 'string') return undefined;
  const readme = text(raw.readme, MAX_README_CHARS);
  const questions = Array.isArray(raw.questions)
    ? raw.questions
        .slice(0, MAX_QUESTIONS)
        .map(readQuestion)
        .filter((question): question is PageQuestion => question !== undefined)
    : [];
  const changes: Record<string, string> = {};
  if (isObject(raw.changes)) {
    for (const [version, section] of Object.entries(raw.changes).slice(0, MAX_CHANGES_VERSIONS)) {
      const kept = text(section, MAX_CHANGES_CHARS);
      if (kept !== undefined && version !== '__proto__') changes[version] = kept;
    }
  }
  return {
    version: raw.version,
    ...(readme === undefined ? {} : { readme }),
    ...(raw.readmeCut === true ? { readmeCut: true } : {}),
    ...(questions.length > 0 ? { questions } : {}),
    ...(Object.keys(changes).length > 0 ? { changes } : {}),
  };
}
