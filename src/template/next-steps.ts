/**
 * The manifest's `nextSteps`: a message a template's author writes for the person who just
 * generated a project (what to run first, where to read on), printed by `create` and `generate`.
 *
 * It is Liquid from a stranger, rendered on the consumer's machine and printed to their terminal,
 * so it goes through the same engine as content files but with no file system at all (`include`,
 * `render` and `layout` fail), a small time and memory budget, and its output is bounded and
 * cleaned of control characters (a message cannot clear the screen or rewrite earlier lines).
 */
import { stripVTControlCharacters } from 'node:util';

import type { TemplateManifest } from '../core/schema-types.js';
import { firstLine } from '../core/errors.js';
import { createEngine, type RenderLimits } from './expression.js';

/** Longest `nextSteps` a manifest may hold, in characters (the manifest schema's `maxLength`). */
export const NEXT_STEPS_MAX_CHARS = 4096;
/** Longest rendered message printed, in characters; the rest is cut off with a note. */
export const NEXT_STEPS_MAX_OUTPUT_CHARS = 16_384;

/** A message of a few lines needs far less than a content file. */
const NEXT_STEPS_LIMITS: RenderLimits = { parseLimit: NEXT_STEPS_MAX_CHARS, renderLimit: 500, memoryLimit: 1_000_000 };

/** The `nextSteps` of a manifest cannot be rendered (invalid Liquid, an unknown filter, a budget passed). */
export class NextStepsError extends Error {
  override readonly name = 'NextStepsError';
}

/** What a generated project holds that the message may use: its answers and computed values. */
export interface GeneratedValues {
  answers: Record<string, unknown>;
  computed: Record<string, string>;
}

// C0 controls but tab and line feed, DEL and the C1 controls (0x9b alone starts a terminal sequence).
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** The text as it may reach a terminal: line breaks normalised, escape sequences and control characters gone, bounded. */
export function cleanMessage(text: string): string {
  const lines = stripVTControlCharacters(text.replace(/\r\n?/g, '\n'))
    .replace(CONTROL_CHARACTERS, '')
    .split('\n')
    .map((line) => line.trimEnd());
  // Blank lines around the message are layout, not content; keep at most one blank line in a row.
  const message = lines.join('\n').replace(/\n{3,}/g, '\n\n').trim();
  if (message.length <= NEXT_STEPS_MAX_OUTPUT_CHARS) return message;
  return `${message.slice(0, NEXT_STEPS_MAX_OUTPUT_CHARS)}\n[the template's message was cut off at ${NEXT_STEPS_MAX_OUTPUT_CHARS} characters]`;
}

/**
 * The template's `nextSteps` rendered with the project's answers and computed values (the scope a
 * content file has), cleaned for a terminal; undefined when the manifest has none or it renders
 * to nothing. Throws NextStepsError naming the problem when it cannot be rendered.
 */
export async function renderNextSteps(
  manifest: Pick<TemplateManifest, 'nextSteps' | 'whitespace'>,
  generated: GeneratedValues,
): Promise<string | undefined> {
  const source = manifest.nextSteps;
  if (typeof source !== 'string' || source.trim() === '') return undefined;
  if (source.length > NEXT_STEPS_MAX_CHARS) {
    throw new NextStepsError(`nextSteps is ${source.length} characters long, more than the limit of ${NEXT_STEPS_MAX_CHARS}`);
  }
  // No root: the engine's file system refuses every include, render and layout.
  const engine = createEngine({ limits: NEXT_STEPS_LIMITS, ...(manifest.whitespace ? { whitespace: manifest.whitespace } : {}) });
  let rendered: string;
  try {
    rendered = String(await engine.parseAndRender(source, { ...generated.answers, ...generated.computed }));
  } catch (error) {
    throw new NextStepsError(`nextSteps cannot be rendered: ${firstLine(error)}`);
  }
  const message = cleanMessage(rendered);
  return message === '' ? undefined : message;
}
