
import { globMatcher } from '../core/glob.js';
import { firstLine } from '../core/errors.js';
import { compareText } from '../core/listing.js';
import { isJunkName, reservedPathProblem } from '../core/reserved-paths.js';
import { createEngine, DEFAULT_RENDER_LIMITS, ExpressionEvaluator, type RenderLimits } from './expression.js';
import type { ResolvedAnswers } from './answers.js';
import type { LoadedTemplate } from './load.js';
import { verbatimRule } from './text-files.js';

export { isBinary } from './text-files.js';

export interface RenderedFile {
  /** Path in the project, with `/` separators. */
  path: string;
  content: Buffer;
  /** 0o755 when the template's file is executable, else 0o644. */
  mode: number;
  /** The template's file it was rendered from: its path in the content folder, `/`-separated. */
  source?: string;
}

export interface RenderOptions {
  limits?: Partial<RenderLimits>;
  /** Largest rendered file, in bytes (default 10 MiB). */
  maxFileBytes?: number;
  /** Largest rendered project, in bytes (default 256 MiB). */
  maxTotalBytes?: number;
  /** Time budget of the whole rendering, in ms (default 60,000); each file also has `limits.renderLimit`. */
  maxTotalMs?: number;
  /** Most files in a project (default 20,000). */
  maxFiles?: number;
  evaluator?: ExpressionEvaluator;
}

export class RenderError extends Error {
  constructor(
    /** What went wrong, without the file's name. */
    readonly reason: string,
    /** The template file (relative to the content folder) being rendered. */
    readonly file: string,
    /** The line of `file` at fault, when Liquid names one in it. */
    readonly line?: number,
  ) {
    super(`${file}: ${reason}`);
    this.name = 'RenderError';
  }
}

/** The line of the rendered text that a liquidjs error points at; none when it points into another file (a partial). */
function lineOfLiquidError(error: unknown): number | undefined {
  const token = (error as { token?: { file?: unknown; getPosition?: () => number[] } } | null)?.token;
  if (typeof token?.getPosition !== 'function' || (typeof token.file === 'string' && token.file !== '')) return undefined;
  const [line] = token.getPosition();
  return typeof line === 'number' && line > 0 ? line : undefined;
}

const LIQUID_SUFFIX = '.liquid';

/** The default budget of one generation: 60 s and 256 MiB of output in all. */
const DEFAULT_MAX_TOTAL_MS = 60_000;
const DEFAULT_MAX_TOTAL_BYTES = 256 * 1024 * 1024;

interface SourceEntry {
  /** Path inside the content folder as the template names it, `/`-separated. */
  source: string;
  /** Path in the template folder, as the tree names it. */
  inTree: string;
  directory: boolean;
}

/**
 * The content folder's files and folders, parents first, as the template's tree read them (links
 * inside the template followed, the others refused when it was loaded); what is never part of a
 * template (version-control data, installed dependencies) is left out.
 */
function listContent(template: LoadedTemplate): SourceEntry[] {
  const prefix = template.contentFolder === '' ? '' : `${template.contentFolder}/`;
  const unread = new Set<string>();
  const entries: SourceEntry[] = [];
  for (const entry of template.tree.below(template.contentFolder)) {
    const parent = entry.path.includes('/') ? entry.path.slice(0, entry.path.lastIndexOf('/')) : '';
    if (entry.unread || unread.has(parent)) {
      unread.add(entry.path);
      continue;
    }
    entries.push({ source: entry.path, inTree: `${prefix}${entry.path}`, directory: entry.kind === 'directory' });
  }
  return entries;
}

/** The `files` rules of the manifest as a function: false for a path an active rule leaves out. */
function fileRules(template: LoadedTemplate, scope: object, evaluator: ExpressionEvaluator): (source: string) => boolean {
  const rules = (template.manifest.files ?? []).map((rule) => ({
    // A template's glob: matched in linear time (a backtracking matcher can be made to hang).
    matches: globMatcher(rule.path),
    included: evaluator.condition(rule.when, scope),
  }));
  return (source) => rules.every((rule) => rule.included || !rule.matches(source));
}

/**
 * Renders the template's content folder with the resolved answers, in memory: file contents and
 * path segments through Liquid. Binary files, files that are not valid UTF-8 and the manifest's
 * `verbatim` files are copied byte for byte (their names are still rendered). A path segment that
 * renders empty, or a path an active `files` rule leaves out, is not generated; a `.liquid` suffix
 * is dropped, but for a verbatim file, which is no template. `render`/`include` read the
 * `partials` folder, then the content folder.
 */
export async function renderTemplate(
  template: LoadedTemplate,
  resolved: ResolvedAnswers,
  options: RenderOptions = {},
): Promise<RenderedFile[]> {
  const maxFileBytes = options.maxFileBytes ?? 10 * 1024 * 1024;
  const maxTotalBytes = options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
  const maxTotalMs = options.maxTotalMs ?? DEFAULT_MAX_TOTAL_MS;
  const perFileMs = options.limits?.renderLimit ?? DEFAULT_RENDER_LIMITS.renderLimit;
  const deadline = performance.now() + maxTotalMs;
  const maxFiles = options.maxFiles ?? 20_000;
  const evaluator = options.evaluator ?? new ExpressionEvaluator();
  const engine = createEngine({
    root: template.contentDir,
    ...(template.partialsDir !== undefined ? { partials: template.partialsDir } : {}),
    ...(template.manifest.whitespace !== undefined ? { whitespace: template.manifest.whitespace } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
  });
  const scope = { ...resolved.answers, ...resolved.computed };
  const included = fileRules(template, scope, evaluator);
  const verbatim = verbatimRule(template.manifest.verbatim);

  const overBudget = (source: string): RenderError =>
    new RenderError(`generation passed its time budget of ${maxTotalMs} ms (maxTotalMs) while rendering this file`, source);
  const renderText = async (text: string, source: string, what: string): Promise<string> => {
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw overBudget(source);
    try {
      return String(await engine.parseAndRender(text, scope, { renderLimit: Math.min(perFileMs, remaining) }));
    } catch (error) {
      if (performance.now() >= deadline) throw overBudget(source);
      throw new RenderError(`${what} cannot be rendered: ${firstLine(error)}`, source, what === 'its content' ? lineOfLiquidError(error) : undefined);
    }
  };

  const skipped = new Set<string>();
  const targetOf = new Map<string, string>();
  const files: RenderedFile[] = [];
  const seen = new Map<string, string>();
  let total = 0;

  for (const entry of listContent(template)) {
    const parent = entry.source.includes('/') ? entry.source.slice(0, entry.source.lastIndexOf('/')) : '';
    if (skipped.has(parent) || !included(entry.source)) {
      skipped.add(entry.source);
      continue;
    }
    const rawName = entry.source.slice(parent === '' ? 0 : parent.length + 1);
    let name = (await renderText(rawName, entry.source, 'its name')).trim();
    if (name === '') {
      skipped.add(entry.source);
      continue;
    }
    if (name.includes('/') || name.includes('\\') || name === '.' || name === '..' || name.includes('\0')) {
      throw new RenderError(`its name renders to ${JSON.stringify(name)}, which is not a single file name`, entry.source);
    }
    const copied = !entry.directory && verbatim(entry.source);
    if (!entry.directory && !copied && name.endsWith(LIQUID_SUFFIX) && name.length > LIQUID_SUFFIX.length) {
      name = name.slice(0, -LIQUID_SUFFIX.length);
    }
    const target = parent === '' ? name : `${targetOf.get(parent) ?? parent}/${name}`;
    const reserved = reservedPathProblem(target);
    if (reserved) throw new RenderError(`renders to ${reserved}`, entry.source);
    if (isJunkName(name)) {
      skipped.add(entry.source);
      continue;
    }
    targetOf.set(entry.source, target);
    if (entry.directory) continue;

    const earlier = seen.get(target);
    if (earlier !== undefined) throw new RenderError(`renders to ${target}, as ${earlier} does`, entry.source);
    seen.set(target, entry.source);
    if (files.length >= maxFiles) throw new RenderError(`the project would have more than ${maxFiles} files`, entry.source);

    const bytes = await template.tree.bytes(entry.inTree);
    const mode = await template.tree.mode(entry.inTree);
    const text = copied ? undefined : await template.tree.liquidText(entry.inTree);
    const content = text === undefined ? bytes : Buffer.from(await renderText(text, entry.source, 'its content'), 'utf8');
    if (content.length > maxFileBytes) {
      throw new RenderError(`renders to ${content.length} bytes, more than the limit of ${maxFileBytes}`, entry.source);
    }
    total += content.length;
    if (total > maxTotalBytes) throw new RenderError(`the project would be larger than its output budget of ${maxTotalBytes} bytes (maxTotalBytes)`, entry.source);
    files.push({ path: target, content, mode, source: entry.source });
  }
  return files.sort((a, b) => compareText(a.path, b.path));
}
