/**
 * The JSON check of a generated project's files: which files are JSON with comments (JSONC), as
 * the tools that read them accept, and the problems of a file that does not parse, at its line.
 */
import type { ParseError } from 'jsonc-parser';

import { loadJsonc } from '../core/lazy/jsonc.load.js';
import { globMatcher } from '../core/glob.js';

/**
 * Files whose tools read comments and trailing commas: TypeScript's and JavaScript's project
 * files, VS Code's settings, dev container definitions, and any `.jsonc` file.
 */
function isJsoncPath(relativePath: string): boolean {
  const segments = relativePath.split('/');
  const base = segments.at(-1) ?? '';
  const parent = segments.at(-2);
  if (base.endsWith('.jsonc')) return true;
  if (!base.endsWith('.json')) return false;
  return (
    base.startsWith('tsconfig') ||
    base.startsWith('jsconfig') ||
    base === 'devcontainer.json' ||
    base === '.devcontainer.json' ||
    parent === '.vscode' ||
    parent === '.devcontainer'
  );
}

/** Whether the JSON check reads the file: `.json` (strictly) and the JSONC files. */
export function isJsonChecked(relativePath: string): boolean {
  return relativePath.endsWith('.json') || isJsoncPath(relativePath);
}

const lineAt = (text: string, offset: number): number => text.slice(0, Math.max(0, offset)).split('\n').length;

function firstError(text: string, options: { disallowComments: boolean; allowTrailingComma: boolean }): ParseError | undefined {
  const errors: ParseError[] = [];
  loadJsonc().parse(text, errors, { ...options, allowEmptyContent: false });
  return errors[0];
}

/**
 * The JSONC rule of a template: the known JSONC files (`isJsoncPath`) and the `.json` files its
 * manifest's `jsonc` globs name (paths in the generated project, matched in linear time).
 */
export function jsoncRule(globs: readonly string[] = []): (relativePath: string) => boolean {
  const listed = globs.map((glob) => globMatcher(glob));
  return (relativePath) => isJsoncPath(relativePath) || (relativePath.endsWith('.json') && listed.some((matches) => matches(relativePath)));
}

/**
 * Why a generated file named like JSON does not parse, as `path:line: ...`; none when it does.
 * JSONC files (see `isJsoncPath`, and those `isJsonc` adds) may hold comments and trailing commas;
 * every other `.json` file is read as strictly as `JSON.parse` reads it (a leading byte-order mark aside).
 */
export function jsonProblems(relativePath: string, text: string, isJsonc: (relativePath: string) => boolean = isJsoncPath): string[] {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const offsetOfBody = text.length - body.length;
  if (isJsonc(relativePath)) {
    const error = firstError(body, { disallowComments: false, allowTrailingComma: true });
    if (!error) return [];
    return [`${relativePath}:${lineAt(text, error.offset + offsetOfBody)}: not valid JSONC (${loadJsonc().printParseErrorCode(error.error)})`];
  }
  try {
    JSON.parse(body);
    return [];
  } catch (parseError) {
    // JSON.parse names no line; the same text read strictly by jsonc-parser says where it stops.
    const error = firstError(body, { disallowComments: true, allowTrailingComma: false });
    const line = error ? lineAt(text, error.offset + offsetOfBody) : 1;
    const reason = error ? loadJsonc().printParseErrorCode(error.error) : parseError instanceof Error ? parseError.message : String(parseError);
    return [`${relativePath}:${line}: not valid JSON (${reason})`];
  }
}
