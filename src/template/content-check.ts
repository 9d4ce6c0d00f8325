/**
 * Checks of a template's content folder that need no answers: every text file and every file or
 * folder name must parse as Liquid with the template's filters, and may only name what will be in
 * scope when it is rendered (the variables and computed values, loop variables, `assign` and
 * `capture` locals, the names a `render`/`include` passes). Found from the parsed Liquid tree
 * (liquidjs's static analysis); nothing is rendered or evaluated.
 */
import type { Liquid, Template } from 'liquidjs';

import { firstLine } from '../core/errors.js';
import type { SourcePosition } from '../core/json-source.js';
import { loadLiquidjs } from '../core/lazy/liquidjs.load.js';
import type { ValidationProblem } from '../core/validation.js';
import { createEngine, DEFAULT_RENDER_LIMITS } from './expression.js';
import { didYouMean } from './suggest.js';

/** What a content file may name: the scope every file is rendered with. */
export interface ContentScope {
  /** Variables and computed values (declared and implicit). */
  names: ReadonlySet<string>;
  /** Object variables whose properties are known: name to the properties it may have. */
  properties: ReadonlyMap<string, ReadonlySet<string>>;
  /** Where a reader declares new names, for messages (`template.vars.json`). */
  variablesFile: string;
}

export interface ContentText {
  /** Path inside the content folder, `/`-separated. */
  path: string;
  text: string;
}

/** The most unknown-name problems listed for one template; the rest are counted. */
export const MAX_UNKNOWN_NAME_PROBLEMS = 200;

/** Names Liquid lets any value answer to, whatever its properties: `features.size`, `list.first`. */
const BUILT_IN_PROPERTIES = new Set(['size', 'first', 'last']);

/** liquidjs's message when an engine's parse limit is spent. */
const PARSE_LIMIT_MESSAGE = 'parse length limit exceeded';

const hasLiquid = (text: string): boolean => text.includes('{{') || text.includes('{%');

interface ParseFailure {
  message: string;
  code: 'LIQUID_SYNTAX' | 'UNKNOWN_FILTER';
  position: SourcePosition;
}

function positionAt(text: string, offset: number): SourcePosition {
  const before = text.slice(0, Math.max(0, offset));
  const line = before.split('\n').length;
  return { line, column: offset - (before.lastIndexOf('\n') + 1) + 1 };
}

/** liquidjs's parse error as a message and position; an unknown filter is located at its name, with a suggestion. */
function describeParseError(error: unknown, text: string, engine: Liquid): ParseFailure {
  const raw = firstLine(error);
  const message = raw.replace(/, line:\d+, col:\d+.*$/, '');
  const at = /line:(\d+), col:(\d+)/.exec(raw);
  let position: SourcePosition = at ? { line: Number(at[1]), column: Number(at[2]) } : { line: 1, column: 1 };
  const filter = /^undefined filter: (\S+)/.exec(message)?.[1];
  if (filter === undefined) return { message, code: 'LIQUID_SYNTAX', position };
  const token = (error as { token?: { begin?: unknown; end?: unknown } }).token;
  if (typeof token?.begin === 'number' && typeof token.end === 'number') {
    const inside = text.slice(token.begin, token.end).search(new RegExp(`\\|\\s*${filter.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`));
    if (inside >= 0) {
      const offset = token.begin + inside + text.slice(token.begin + inside).indexOf(filter);
      position = positionAt(text, offset);
    }
  }
  const known = Object.keys(engine.filters);
  return {
    message: `unknown filter "${filter}"${didYouMean(filter, known)}: use one of Liquid's filters or the template filters (package_name, class_name, kebab_case, snake_case, camel_case, pascal_case, ...)`,
    code: 'UNKNOWN_FILTER',
    position,
  };
}

// A partial named by a variable (`{% include name %}`): which file it reads is known only when rendering.
const DYNAMIC_PARTIAL = /\{%-?\s*(?:include|render|layout)\s+(?!["'])/;

/**
 * The top-level names a text reads when it is rendered with `engine` (whose root is the content
 * folder): its own and those of the files it includes or renders, from the parsed Liquid.
 * Undefined when that cannot be known (invalid Liquid, a missing partial, a partial named by a
 * variable): a caller then assumes the text may read anything.
 */
export async function namesRead(text: string, engine: Liquid): Promise<Set<string> | undefined> {
  if (!hasLiquid(text)) return new Set();
  if (DYNAMIC_PARTIAL.test(text)) return undefined;
  try {
    return new Set(await engine.globalVariables(text, { partials: true }));
  } catch {
    return undefined;
  }
}

function* allTemplates(templates: readonly Template[]): Generator<Template> {
  for (const template of templates) {
    yield template;
    if (template.children) yield* allTemplates(loadLiquidjs().toValueSync<Template[]>(template.children(false, true)));
  }
}

interface ParsedFile {
  path: string;
  templates: Template[];
}

/**
 * The names each partial (a content file `render`ed or `include`d by another) receives: what the
 * tag passes, and for an `include`, which shares its caller's scope, the caller's locals too.
 */
function partialNames(files: readonly ParsedFile[], engine: Liquid): Map<string, Set<string>> {
  const received = new Map<string, Set<string>>();
  for (const file of files) {
    let callerLocals: string[] | undefined;
    for (const template of allTemplates(file.templates)) {
      const partial = template.partialScope?.();
      if (!partial) continue;
      const names = received.get(partial.name) ?? new Set<string>();
      received.set(partial.name, names);
      for (const entry of partial.scope) names.add(typeof entry === 'string' ? entry : entry[0]);
      if (!partial.isolated) {
        callerLocals ??= Object.keys(engine.analyzeSync(file.templates, { partials: false }).locals);
        for (const name of callerLocals) names.add(name);
      }
    }
  }
  return received;
}

/** The unknown names of one parsed text: each name once, at its first use, with how often it is used. */
function unknownNames(
  templates: Template[],
  scope: ContentScope,
  extra: ReadonlySet<string> | undefined,
  engine: Liquid,
): { name: string; message: string; position: SourcePosition }[] {
  const analysis = engine.analyzeSync(templates, { partials: false });
  const found: { name: string; message: string; position: SourcePosition }[] = [];
  const known = [...scope.names, ...(extra ?? [])];
  for (const [name, uses] of Object.entries(analysis.globals)) {
    const first = uses[0];
    if (!first) continue;
    const position = { line: first.location.row, column: first.location.col };
    const more = uses.length > 1 ? ` (used ${uses.length} times)` : '';
    if (!scope.names.has(name) && !extra?.has(name)) {
      found.push({
        name,
        position,
        message: `names unknown variable "${name}"${didYouMean(name, known)}${more}; it would render empty. Declare it in ${scope.variablesFile}, fix the spelling, or keep literal braces with {% raw %}...{% endraw %}`,
      });
      continue;
    }
    const properties = scope.properties.get(name);
    if (!properties) continue;
    const reported = new Set<string>();
    for (const use of uses) {
      const property = use.segments[1];
      if (typeof property !== 'string' || properties.has(property) || BUILT_IN_PROPERTIES.has(property) || reported.has(property)) continue;
      reported.add(property);
      found.push({
        name: `${name}.${property}`,
        position: { line: use.location.row, column: use.location.col },
        message: `names unknown property "${property}" of variable "${name}"${didYouMean(property, properties)}; it would render empty. Declare it under "properties" of "${name}" in ${scope.variablesFile}, or fix the spelling`,
      });
    }
  }
  return found;
}

/** The manifest's `partials` folder as the manifest names it, and its text files (paths relative to it). */
export interface PartialsText {
  folder: string;
  texts: readonly ContentText[];
}

/** Marks a partial's path apart from the content folder's paths (a NUL never is in a file name). */
const PARTIAL = '\0partial:';

/** The names a tag may give to reach a partial file: `header.liquid` is found as `header` too. */
const partialNamesOf = (relative: string): string[] =>
  relative.endsWith('.liquid') && relative.length > '.liquid'.length ? [relative, relative.slice(0, -'.liquid'.length)] : [relative];

/**
 * Checks the content folder's texts and path names. `folder` is the content folder as the
 * manifest names it (problems name `<folder>/<path>`); without a `scope` (the variables file could
 * not be read) only the Liquid syntax is checked. Binary files, files that are not UTF-8 and
 * verbatim files are the caller's to leave out. The `partials` folder's files are checked as
 * Liquid too, with the names the tags that `render` or `include` them pass.
 */
export function checkContent(
  folder: string,
  texts: readonly ContentText[],
  paths: readonly string[],
  scope: ContentScope | undefined,
  engine: Liquid = createEngine(),
  partials?: PartialsText,
): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const fileOf = (relative: string): string =>
    relative.startsWith(PARTIAL) ? `${partials?.folder ?? ''}/${relative.slice(PARTIAL.length)}` : `${folder}/${relative}`;
  const parse = (text: string): Template[] | ParseFailure => {
    try {
      return engine.parse(text);
    } catch (error) {
      return describeParseError(error, text, engine);
    }
  };

  const parsed: ParsedFile[] = [];
  const allTexts = [...texts, ...(partials?.texts ?? []).map((file) => ({ path: `${PARTIAL}${file.path}`, text: file.text }))];
  for (const { path, text } of allTexts) {
    if (!hasLiquid(text)) continue;
    const result = parse(text);
    if (Array.isArray(result)) parsed.push({ path, templates: result });
    else if (result.message.startsWith(PARSE_LIMIT_MESSAGE)) {
      continue; // not a syntax error: `checkParseLimit` reports a text over the limit
    } else {
      problems.push({ file: fileOf(path), pointer: '', code: result.code, message: `is not valid Liquid: ${result.message}`, ...result.position });
    }
  }

  // A template full of unknown names gets the first ones and a count, not a message per name.
  let unknownReported = 0;
  let unknownLeft = 0;
  const reportUnknown = (problem: ValidationProblem): void => {
    if (unknownReported < MAX_UNKNOWN_NAME_PROBLEMS) {
      problems.push(problem);
      unknownReported++;
    } else unknownLeft++;
  };

  if (scope) {
    let received: Map<string, Set<string>>;
    try {
      received = partialNames(parsed, engine);
    } catch {
      received = new Map();
    }
    // A tag names a partial as it is in the partials folder (`header` for header.liquid), else in the content folder.
    const receivedBy = (relative: string): Set<string> | undefined => {
      if (!relative.startsWith(PARTIAL)) return received.get(relative);
      const names = partialNamesOf(relative.slice(PARTIAL.length)).flatMap((name) => [...(received.get(name) ?? [])]);
      return names.length > 0 ? new Set(names) : undefined;
    };
    for (const file of parsed) {
      let unknown: ReturnType<typeof unknownNames>;
      try {
        unknown = unknownNames(file.templates, scope, receivedBy(file.path), engine);
      } catch (error) {
        problems.push({ file: fileOf(file.path), pointer: '', code: 'LIQUID_SYNTAX', message: `cannot be analysed: ${firstLine(error)}`, line: 1, column: 1 });
        continue;
      }
      for (const name of unknown) {
        reportUnknown({ file: fileOf(file.path), pointer: '', code: 'UNKNOWN_CONTENT_VARIABLE', message: name.message, ...name.position });
      }
    }
  }

  for (const relative of paths) {
    const name = relative.slice(relative.lastIndexOf('/') + 1);
    if (!hasLiquid(name)) continue;
    const result = parse(name);
    if (!Array.isArray(result) && result.message.startsWith(PARSE_LIMIT_MESSAGE)) continue;
    if (!Array.isArray(result)) {
      problems.push({ file: fileOf(relative), pointer: '', code: result.code, message: `its name is not valid Liquid: ${result.message}`, line: 1, column: 1 });
      continue;
    }
    if (!scope) continue;
    try {
      for (const unknown of unknownNames(result, scope, undefined, engine)) {
        reportUnknown({ file: fileOf(relative), pointer: '', code: 'UNKNOWN_CONTENT_VARIABLE', message: `its name ${unknown.message}`, line: 1, column: 1 });
      }
    } catch (error) {
      problems.push({ file: fileOf(relative), pointer: '', code: 'LIQUID_SYNTAX', message: `its name cannot be analysed: ${firstLine(error)}`, line: 1, column: 1 });
    }
  }
  if (unknownLeft > 0) {
    problems.push({
      file: folder,
      pointer: '',
      code: 'UNKNOWN_CONTENT_VARIABLE',
      message: `and ${unknownLeft} more unknown name(s) in the content folder, not listed; fix the ones above first`,
      line: 1,
      column: 1,
    });
  }
  return problems;
}


/**
 * `create` parses every text file of the content folder and every file and folder name
 * (template/render.ts), with or without Liquid in it, under Liquid's parse limit: a text longer
 * than the limit stops generation. The same parse under the same limit, of every text and name:
 * each one over it, by file. Other parse errors are `checkContent`'s to report.
 */
export function checkParseLimit(
  folder: string,
  texts: readonly ContentText[],
  paths: readonly string[],
  parseLimit: number = DEFAULT_RENDER_LIMITS.parseLimit,
): ValidationProblem[] {
  const engine = createEngine({ limits: { parseLimit } });
  const overLimit = (source: string): boolean => {
    try {
      engine.parse(source);
      return false;
    } catch (error) {
      return firstLine(error).startsWith(PARSE_LIMIT_MESSAGE);
    }
  };
  const problem = (relative: string, what: string, length: number): ValidationProblem => ({
    file: `${folder}/${relative}`,
    pointer: '',
    code: 'PARSE_LIMIT',
    message: `${what} is ${length} characters, more than Liquid's parse limit of ${parseLimit}: \`create\` parses every text file and name of the content folder and could not generate it; split the file, or make it binary if it is data to copy as is`,
    line: 1,
    column: 1,
  });
  const problems: ValidationProblem[] = [];
  for (const relative of paths) {
    const name = relative.slice(relative.lastIndexOf('/') + 1);
    if (overLimit(name)) problems.push(problem(relative, 'its name', name.length));
  }
  for (const { path, text } of texts) if (overLimit(text)) problems.push(problem(path, 'its content', text.length));
  return problems;
}
