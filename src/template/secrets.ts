/**
 * Secret answers (`"secret": true` on a variable): a token or a password a project is generated
 * with. They are rendered into the project's files and written nowhere else: not in the lock file,
 * not in a command's result (`--json`), not in analytics. A computed value that reads a secret,
 * directly or through another computed value, is a secret too.
 */
import type { Answers } from './answers.js';
import { ExpressionEvaluator } from './expression.js';
import type { LoadedTemplate } from './load.js';

/** The names of the template's secret variables, in the variables file's order. */
export function secretVariables(template: Pick<LoadedTemplate, 'variables'>): string[] {
  return Object.entries(template.variables)
    .filter(([, definition]) => definition.secret === true)
    .map(([name]) => name);
}

/**
 * The names whose values are secret: the secret variables of `secrets` (all of the template's
 * unless given) and the computed values that read one of them, however indirectly.
 */
export function secretNames(
  template: Pick<LoadedTemplate, 'variables' | 'computed' | 'computedOrder'>,
  evaluator = new ExpressionEvaluator(),
  secrets: Iterable<string> = secretVariables(template),
): Set<string> {
  const tainted = new Set(secrets);
  if (tainted.size === 0) return tainted;
  // computedOrder puts every computed value after the ones it reads.
  for (const name of template.computedOrder) {
    const expression = template.computed[name];
    if (expression === undefined) continue;
    let references: string[];
    try {
      references = evaluator.references(expression, 'value');
    } catch {
      references = [];
    }
    if (references.some((reference) => tainted.has(reference))) tainted.add(name);
  }
  return tainted;
}

/** Answers and computed values without the secret ones: what may be written or shown. */
export function withoutSecrets(
  template: Pick<LoadedTemplate, 'variables' | 'computed' | 'computedOrder'>,
  values: { answers: Answers; computed: Record<string, string> },
  evaluator = new ExpressionEvaluator(),
): { answers: Answers; computed: Record<string, string> } {
  const secret = secretNames(template, evaluator);
  if (secret.size === 0) return { answers: values.answers, computed: values.computed };
  const keep = <T>(record: Record<string, T>): Record<string, T> => Object.fromEntries(Object.entries(record).filter(([name]) => !secret.has(name)));
  return { answers: keep(values.answers), computed: keep(values.computed) };
}

/** The secret values among resolved answers and computed values, as text (what could show up in a file or a diff). */
export function secretValues(
  template: Pick<LoadedTemplate, 'variables' | 'computed' | 'computedOrder'>,
  values: { answers: Answers; computed: Record<string, string> },
  evaluator = new ExpressionEvaluator(),
): string[] {
  const secret = secretNames(template, evaluator);
  const texts = [...Object.entries(values.answers), ...Object.entries(values.computed)]
    .filter(([name, value]) => secret.has(name) && value !== undefined && value !== null)
    .map(([, value]) => (typeof value === 'string' ? value : JSON.stringify(value)));
  // Longest first, so that a secret holding another is masked whole.
  return [...new Set(texts.filter((text) => text !== ''))].sort((a, b) => b.length - a.length);
}

/** What a shown text holds instead of a secret. */
export const SECRET_MASK = '********';

/** Shorter secrets are not masked inside text (every such word would go); text holding one is withheld whole. */
const MIN_MASKED_LENGTH = 4;

/**
 * `text` (a diff, a message) fit to be shown: every occurrence of a secret value masked; undefined
 * when it holds a secret too short to mask safely.
 */
export function maskSecrets(text: string, secrets: readonly string[]): string | undefined {
  let shown = text;
  for (const secret of secrets) {
    if (!shown.includes(secret)) continue;
    if (secret.length < MIN_MASKED_LENGTH) return undefined;
    shown = shown.split(secret).join(SECRET_MASK);
  }
  return shown;
}
