/**
 * What a template's catalog page shows besides its entries (`page` of `templates/<id>.json`, read
 * by catalog/page-text.ts): the README, the questions `create` asks and each version's change log
 * section, read from the archive of the version the page presents (its README and questions), and
 * of the highest version when that is another (the sections of the versions above the presented
 * one are only in their own change logs). Archives are strangers' files: read within the bounds of
 * archive/texts.ts, and what is kept is bounded again by catalog/page-text.ts's limits.
 */
import type { Readable } from 'node:stream';

import { readArchiveTexts } from '../archive/texts.js';
import { findChangelogSection } from '../core/changelog.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { compareVersions } from '../core/versions.js';
import { cutText, MAX_CHANGES_CHARS, MAX_CHANGES_VERSIONS, MAX_README_CHARS, readPageText, type PageQuestion, type TemplatePageText } from '../catalog/page-text.js';
import { isRecord } from '../core/is-record.js';

const README = 'README.md';
const DEFAULT_CHANGELOG = 'CHANGELOG.md';
const DEFAULT_PROMPTS = 'template.prompts.json';
const DEFAULT_VARIABLES = 'template.vars.json';

/** A version whose archive can be read: its manifest and how to open the archive. */
export interface PageSource {
  manifest: TemplateManifest;
  readArchive: () => Promise<Readable | undefined>;
}


function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function answerText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map(answerText).filter((item) => item !== undefined).join(', ');
  return undefined;
}

/** The questions of a prompts file, each with its variable's default and description. */
function questionsOf(promptsText: string | undefined, variablesText: string | undefined): PageQuestion[] {
  const prompts = parseJson(promptsText);
  const variablesDocument = parseJson(variablesText);
  const variables = isRecord(variablesDocument) && isRecord(variablesDocument.variables) ? variablesDocument.variables : {};
  if (!isRecord(prompts) || !Array.isArray(prompts.prompts)) return [];
  const questions: PageQuestion[] = [];
  for (const prompt of prompts.prompts) {
    if (!isRecord(prompt) || typeof prompt.name !== 'string' || typeof prompt.message !== 'string' || typeof prompt.type !== 'string') continue;
    const variable = Object.hasOwn(variables, prompt.name) && isRecord(variables[prompt.name]) ? (variables[prompt.name] as Record<string, unknown>) : {};
    const choices = Array.isArray(prompt.choices) ? prompt.choices.map((choice) => (isRecord(choice) ? answerText(choice.name) : answerText(choice))).filter((c): c is string => c !== undefined) : [];
    // A secret's default is never shown.
    const answer = variable.secret === true ? undefined : answerText(variable.default);
    const help = typeof variable.description === 'string' && variable.description !== prompt.message ? variable.description : undefined;
    questions.push({
      name: prompt.name,
      message: prompt.message,
      type: prompt.type,
      ...(choices.length > 0 ? { choices } : {}),
      ...(answer === undefined || answer === '' ? {} : { default: answer }),
      ...(help ? { help } : {}),
    });
  }
  return questions;
}

/** The change log section of each of `versions` that `changelog` has (highest versions first, at most MAX_CHANGES_VERSIONS). */
function changeSections(changelog: string | undefined, versions: readonly string[]): Record<string, string> {
  const changes: Record<string, string> = {};
  if (changelog === undefined) return changes;
  for (const version of [...versions].sort((a, b) => compareVersions(b, a)).slice(0, MAX_CHANGES_VERSIONS)) {
    const body = findChangelogSection(changelog, version)?.body;
    if (body) changes[version] = cutText(body, MAX_CHANGES_CHARS);
  }
  return changes;
}

const filesOf = (manifest: TemplateManifest) => ({
  changelog: manifest.changelog ?? DEFAULT_CHANGELOG,
  prompts: manifest.customization?.prompts ?? DEFAULT_PROMPTS,
  variables: manifest.customization?.variables ?? DEFAULT_VARIABLES,
});

async function textsOf(source: PageSource, names: string[]): Promise<Map<string, { text: string; cut: boolean }>> {
  const stream = await source.readArchive();
  if (!stream) return new Map();
  return readArchiveTexts(stream, names);
}

/**
 * The page text of a template: `presented` is the version its page presents, `highest` its
 * highest version (when another), `versions` every version it has. Undefined when the archive
 * cannot be read (the page shows the entries alone); a failure to read is `onProblem`'s to report.
 */
export async function readTemplatePageText(
  presented: PageSource,
  highest: PageSource | undefined,
  versions: readonly string[],
  onProblem: (message: string) => void = () => undefined,
): Promise<TemplatePageText | undefined> {
  const label = `${presented.manifest.name}@${presented.manifest.version}`;
  const files = filesOf(presented.manifest);
  let texts: Map<string, { text: string; cut: boolean }>;
  try {
    texts = await textsOf(presented, [README, files.changelog, files.prompts, files.variables]);
  } catch (error) {
    onProblem(`the catalog page of ${presented.manifest.name} shows no README: the archive of ${label} could not be read (${error instanceof Error ? error.message : String(error)})`);
    return undefined;
  }
  const changes = changeSections(texts.get(files.changelog)?.text, versions);
  if (highest && highest !== presented) {
    const newer = versions.filter((version) => compareVersions(version, presented.manifest.version) > 0);
    try {
      const highestChangelog = filesOf(highest.manifest).changelog;
      const section = changeSections((await textsOf(highest, [highestChangelog])).get(highestChangelog)?.text, newer);
      Object.assign(changes, section);
    } catch (error) {
      onProblem(`the change log of ${highest.manifest.name}@${highest.manifest.version} could not be read (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  const readme = texts.get(README);
  const questions = questionsOf(texts.get(files.prompts)?.text, texts.get(files.variables)?.text);
  // Through the page's own reader: the page reads back exactly what is written.
  return readPageText({
    version: presented.manifest.version,
    ...(readme ? { readme: readme.text, ...(readme.cut || readme.text.length > MAX_README_CHARS ? { readmeCut: true } : {}) } : {}),
    ...(questions.length > 0 ? { questions } : {}),
    ...(Object.keys(changes).length > 0 ? { changes } : {}),
  });
}
