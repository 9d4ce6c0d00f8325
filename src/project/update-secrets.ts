/**
 * The secrets an update needs. A secret answer is kept nowhere (not in the lock), so `update`
 * asks for it again, or takes it from `--set` or its environment variable, only when a file that
 * uses it must be rendered again: a file whose template source changed, that moved or is new, or
 * that reads another value that changed. A file that uses a secret and is not rendered again is
 * left as it is in the project. Which names a file uses comes from its parsed Liquid (content and
 * name, partials included), never from rendering it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { namesRead } from '../template/content-check.js';
import { createEngine, ExpressionEvaluator } from '../template/expression.js';
import type { LoadedTemplate } from '../template/load.js';
import { isBinary, type RenderedFile } from '../template/render.js';
import { secretNames } from '../template/secrets.js';

/** One version of the template as rendered for the update (without the secrets not given). */
export interface SecretProbe {
  template: LoadedTemplate;
  files: readonly RenderedFile[];
  /** The answers and computed values it was rendered with. */
  scope: Readonly<Record<string, unknown>>;
}

export interface SecretNeeds {
  /** The secrets that must be given, each with the project files (or the rule) that need it. */
  needed: Map<string, string[]>;
  /** The project files that use one of the missing secrets, with those secrets. */
  usedBy: Map<string, Set<string>>;
}

/** The label of a secret needed because a condition deciding which files exist reads it. */
export const DECIDES_FILES = 'the conditions that decide which files are generated';

const sourcePath = (template: LoadedTemplate, source: string): string => path.join(template.contentDir, ...source.split('/'));

async function readSource(template: LoadedTemplate, source: string): Promise<Buffer | undefined> {
  try {
    return await readFile(sourcePath(template, source));
  } catch {
    return undefined;
  }
}

/** The names a template file reads in its content and its path's names; undefined when that cannot be known. */
async function namesOf(template: LoadedTemplate, file: RenderedFile, engine: ReturnType<typeof createEngine>): Promise<Set<string> | undefined> {
  if (file.source === undefined) return undefined;
  const names = new Set<string>();
  for (const segment of file.source.split('/')) {
    const found = await namesRead(segment, engine);
    if (!found) return undefined;
    for (const name of found) names.add(name);
  }
  const bytes = await readSource(template, file.source);
  if (!bytes) return undefined;
  if (!isBinary(bytes)) {
    const found = await namesRead(bytes.toString('utf8'), engine);
    if (!found) return undefined;
    for (const name of found) names.add(name);
  }
  return names;
}

/**
 * Which of the `missing` secrets of the target version (those not given) the update needs, and
 * which files use them. `target` and `base` (the locked version, when the registry still has it)
 * are rendered without the missing secrets.
 */
export async function secretsAnUpdateNeeds(input: {
  target: SecretProbe;
  base?: SecretProbe;
  missing: readonly string[];
  evaluator?: ExpressionEvaluator;
}): Promise<SecretNeeds> {
  const { target, base, missing } = input;
  const evaluator = input.evaluator ?? new ExpressionEvaluator();
  const needed = new Map<string, string[]>();
  const usedBy = new Map<string, Set<string>>();
  if (missing.length === 0) return { needed, usedBy };
  const need = (secret: string, what: string): void => {
    const list = needed.get(secret) ?? [];
    if (!list.includes(what)) list.push(what);
    needed.set(secret, list);
  };
  // Each secret with the computed values that read it.
  const taint = new Map(missing.map((secret) => [secret, secretNames(target.template, evaluator, [secret])]));
  const tainted = new Set([...taint.values()].flatMap((names) => [...names]));

  // A secret in a condition or a files rule may change which files exist: it is needed whatever changed.
  const deciding = [
    ...Object.values(target.template.variables).flatMap((definition) => (definition.condition ? [definition.condition] : [])),
    ...(target.template.manifest.files ?? []).map((rule) => rule.when),
  ];
  for (const expression of deciding) {
    let references: string[];
    try {
      references = evaluator.references(expression, 'condition');
    } catch {
      continue;
    }
    for (const [secret, names] of taint) if (references.some((name) => names.has(name))) need(secret, DECIDES_FILES);
  }

  const engine = createEngine({ root: target.template.contentDir });
  const baseBySource = new Map((base?.files ?? []).flatMap((file) => (file.source === undefined ? [] : [[file.source, file] as const])));
  for (const file of target.files) {
    const names = await namesOf(target.template, file, engine);
    const uses = names === undefined ? [...missing] : missing.filter((secret) => [...(taint.get(secret) ?? [])].some((name) => names.has(name)));
    if (uses.length === 0) continue;
    usedBy.set(file.path, new Set(uses));
    if (!(await mustRenderAgain(file, names))) continue;
    for (const secret of uses) need(secret, file.path);
  }
  return { needed, usedBy };

  /** Whether the update changes what this file of the target would hold: another source, place or value read. */
  async function mustRenderAgain(file: RenderedFile, names: Set<string> | undefined): Promise<boolean> {
    if (!base || names === undefined || file.source === undefined) return true;
    const before = baseBySource.get(file.source);
    if (!before || before.path !== file.path) return true;
    const [was, is] = await Promise.all([readSource(base.template, file.source), readSource(target.template, file.source)]);
    if (!was || !is || !was.equals(is)) return true;
    return [...names].some((name) => !tainted.has(name) && !isDeepStrictEqual(base.scope[name], target.scope[name]));
  }
}
