import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

import type { SchemaName } from '../core/schemas.js';
import { checkJsonText, type ValidationProblem } from '../core/validation.js';
import { resolveInsideRoot } from './paths.js';

export const MANIFEST_FILE = 'template.json';
export const VARIABLES_FILE = 'template.vars.json';
export const PROMPTS_FILE = 'template.prompts.json';
/** The folder of a template's declarative migration steps. */
export const MIGRATIONS_FOLDER = 'migrations';
export const REQUIRED_FILES = [MANIFEST_FILE, 'README.md', 'CHANGELOG.md', VARIABLES_FILE, PROMPTS_FILE] as const;

/** A problem in a template file (see ValidationProblem: file, pointer, message, code, position). */
export type TemplateValidationError = ValidationProblem;

export interface TemplateValidationResult {
  valid: boolean;
  errors: TemplateValidationError[];
}

async function kindOf(file: string): Promise<'file' | 'directory' | 'other' | 'missing'> {
  try {
    const info = await stat(file);
    if (info.isFile()) return 'file';
    if (info.isDirectory()) return 'directory';
    return 'other';
  } catch {
    return 'missing';
  }
}

/** A JSON document of the template, read and checked against its schema. */
async function checkJsonFile(
  root: string,
  file: string,
  schema: SchemaName,
  errors: TemplateValidationError[],
): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path.join(root, file), 'utf8');
  } catch {
    return undefined; // reported as a missing file by the caller
  }
  const checked = checkJsonText(file, text, schema);
  errors.push(...checked.problems);
  return checked.value;
}

interface NamedPath {
  pointer: string;
  value: string;
  kind: 'file' | 'directory';
}

function namedPaths(manifest: unknown): NamedPath[] {
  if (typeof manifest !== 'object' || manifest === null) return [];
  const m = manifest as Record<string, unknown>;
  const pick = (pointer: string, value: unknown, kind: 'file' | 'directory'): NamedPath[] =>
    typeof value === 'string' && value !== '' ? [{ pointer, value, kind }] : [];
  const object = (value: unknown): Record<string, unknown> =>
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  return [
    ...pick('/changelog', m.changelog, 'file'),
    ...pick('/customization/variables', object(m.customization).variables, 'file'),
    ...pick('/customization/prompts', object(m.customization).prompts, 'file'),
    ...pick('/migration/guide', object(m.migration).guide, 'file'),
    ...pick('/content', m.content, 'directory'),
  ];
}

/**
 * Checks a template folder: the five required files, the manifest, variables and prompts files
 * against their schemas (every error, not just the first), and that the paths the manifest names
 * exist inside the template. Never throws for a bad template; only for an I/O failure it cannot
 * explain.
 */
export async function validateTemplate(dir: string): Promise<TemplateValidationResult> {
  const root = path.resolve(dir);
  const errors: TemplateValidationError[] = [];
  const rootKind = await kindOf(root);
  if (rootKind !== 'directory') {
    const message = rootKind === 'missing' ? `template folder ${dir} does not exist` : `${dir} is not a folder`;
    return { valid: false, errors: [{ file: '.', pointer: '', message, code: 'NOT_A_DIRECTORY' }] };
  }

  for (const file of REQUIRED_FILES) {
    const kind = await kindOf(path.join(root, file));
    if (kind !== 'file') {
      const what = file === MANIFEST_FILE ? 'the template manifest is missing' : 'required file is missing';
      const message = kind === 'missing' ? what : 'must be a file';
      errors.push({ file, pointer: '', message, code: 'MISSING_FILE' });
    }
  }

  const manifest = await checkJsonFile(root, MANIFEST_FILE, 'template-manifest', errors);
  const customization = (manifest as { customization?: { variables?: unknown; prompts?: unknown } } | undefined)?.customization;
  const variablesFile = typeof customization?.variables === 'string' ? customization.variables : VARIABLES_FILE;
  const promptsFile = typeof customization?.prompts === 'string' ? customization.prompts : PROMPTS_FILE;

  for (const named of namedPaths(manifest)) {
    const target = await resolveInsideRoot(root, named.value);
    if (!target) {
      errors.push({
        file: MANIFEST_FILE,
        pointer: named.pointer,
        message: `must be a relative path inside the template (got ${JSON.stringify(named.value)})`,
        code: 'PATH_OUTSIDE_TEMPLATE',
      });
    } else if ((await kindOf(target)) !== named.kind) {
      errors.push({
        file: MANIFEST_FILE,
        pointer: named.pointer,
        message: `names ${named.kind === 'file' ? 'a file' : 'a folder'} that does not exist (got ${JSON.stringify(named.value)})`,
        code: 'FILE_NOT_FOUND',
      });
    }
  }

  // A customized path outside the template was reported above; it is not read.
  if ((await resolveInsideRoot(root, variablesFile)) !== undefined) {
    await checkJsonFile(root, path.normalize(variablesFile), 'template-variables', errors);
  }
  if ((await resolveInsideRoot(root, promptsFile)) !== undefined) {
    await checkJsonFile(root, path.normalize(promptsFile), 'template-prompts', errors);
  }

  // Declarative migration steps ship in migrations/, one JSON file per step.
  if ((await kindOf(path.join(root, MIGRATIONS_FOLDER))) === 'directory') {
    const stepFiles = (await readdir(path.join(root, MIGRATIONS_FOLDER))).filter((f) => f.endsWith('.json')).sort();
    for (const file of stepFiles) await checkJsonFile(root, `${MIGRATIONS_FOLDER}/${file}`, 'migration-step', errors);
  }

  return { valid: errors.length === 0, errors };
}
