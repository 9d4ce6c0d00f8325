/**
 * Lint rules for habits that carry over from Jinja (cookiecutter, copier) and that Liquid reads
 * differently without a word: a comment that reaches the project, a string that is always true,
 * Python syntax that Liquid reads only in part. Also a prompt whose `when` reads an answer not
 * given yet, and a file whose Liquid is never rendered because it is not UTF-8. Each finding
 * names the Liquid way. Pure functions of the lint model, like the rules in `lint.ts`.
 */
import type { TagToken, Token, TopLevelToken } from 'liquidjs';

import { loadLiquidjs } from '../core/lazy/liquidjs.load.js';
import type { LintDraft, LintModel, LintRule } from './lint.js';

interface LiquidText {
  /** The file as lint names it, relative to the template folder. */
  file: string;
  text: string;
}

/** Every text that is rendered as Liquid: the content folder's (not verbatim) and the partials'. */
function liquidTexts(model: LintModel): LiquidText[] {
  const content = model.content;
  if (!content) return [];
  return [
    ...content.texts.map(({ path, text }) => ({ file: `${content.folder}/${path}`, text })),
    ...(content.partials?.texts ?? []).map(({ path, text }) => ({ file: `${content.partials?.folder ?? ''}/${path}`, text })),
  ];
}

function positionAt(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}

/** A Liquid tag or output outside `raw` and `comment`, or a stretch of text outside them. */
interface Piece {
  token: TopLevelToken;
  kind: 'tag' | 'output' | 'text';
}

/**
 * The top-level pieces of a Liquid text that Liquid reads: what `{% raw %}` and `{% comment %}`
 * hold is left out (it is output as written, or not at all). A text the tokenizer cannot read has
 * none (`liquid-syntax` reports it).
 */
function liquidPieces(text: string): Piece[] {
  const { defaultOperators, Tokenizer, TokenKind } = loadLiquidjs();
  let tokens: TopLevelToken[];
  try {
    tokens = new Tokenizer(text, defaultOperators).readTopLevelTokens();
  } catch {
    return [];
  }
  const pieces: Piece[] = [];
  let inRaw = false;
  let commentDepth = 0;
  for (const token of tokens) {
    if (token.kind === TokenKind.Tag) {
      const name = (token as TagToken).name;
      if (inRaw) {
        if (name === 'endraw') inRaw = false;
        continue;
      }
      if (name === 'comment') commentDepth++;
      else if (name === 'endcomment') commentDepth = Math.max(0, commentDepth - 1);
      else if (commentDepth === 0) {
        if (name === 'raw') inRaw = true;
        else pieces.push({ token, kind: 'tag' });
      }
    } else if (!inRaw && commentDepth === 0) {
      pieces.push({ token, kind: token.kind === TokenKind.Output ? 'output' : 'text' });
    }
  }
  return pieces;
}

/** The markup of a tag or output with its string literals blanked (Liquid strings have no escapes). */
const withoutStrings = (markup: string): string => markup.replace(/"[^"]*"|'[^']*'/g, (literal) => ' '.repeat(literal.length));

const markupOf = (piece: Piece): string => (piece.token as { content: string }).content;

// ---------------------------------------------------------------------------------------------

const JINJA_COMMENT = /\{#[\s\S]*?#\}/g;

const jinjaComment: LintRule = {
  id: 'jinja-comment',
  severity: 'warning',
  check: (model) =>
    liquidTexts(model).flatMap(({ file, text }) =>
      liquidPieces(text)
        .filter((piece) => piece.kind === 'text')
        .flatMap(({ token }) =>
          [...text.slice(token.begin, token.end).matchAll(JINJA_COMMENT)].map((match) => ({
            file,
            ...positionAt(text, token.begin + (match.index ?? 0)),
            message: `${JSON.stringify(abbreviate(match[0]))} is a Jinja comment, which Liquid copies into the project: write {% comment %}...{% endcomment %} (or {% # ... %} on one line)`,
          })),
        ),
    ),
};

const abbreviate = (text: string): string => (text.length > 40 ? `${text.slice(0, 37)}...` : text);

// ---------------------------------------------------------------------------------------------

const IDENTIFIER = /^[A-Za-z_][\w-]*$/;

/**
 * The names an expression tests for truthiness alone (`description`, `a and not b`): operands of
 * `and`/`or`/`not` that are a bare variable, not a comparison.
 */
function truthinessTests(expression: string): string[] {
  const { defaultOperators, Tokenizer, TokenKind } = loadLiquidjs();
  let tokens: Token[];
  try {
    tokens = [...new Tokenizer(expression, defaultOperators).readExpressionTokens()];
  } catch {
    return [];
  }
  const names: string[] = [];
  let operand: Token[] = [];
  const close = (): void => {
    const [only, ...rest] = operand;
    if (only && rest.length === 0 && only.kind === TokenKind.PropertyAccess && IDENTIFIER.test(only.getText())) names.push(only.getText());
    operand = [];
  };
  for (const token of tokens) {
    const text = token.kind === TokenKind.Operator ? token.getText() : undefined;
    if (text === 'and' || text === 'or') close();
    else if (text !== 'not') operand.push(token);
  }
  close();
  return names;
}

/** Names whose value is always a string when it is there: string variables without a condition, and every computed value. */
function alwaysStrings(model: LintModel): Set<string> {
  const names = new Set<string>();
  for (const [name, def] of model.variables?.variables ?? []) {
    if (def.type === 'string' && def.condition === undefined) names.add(name);
  }
  for (const name of model.variables?.computed.keys() ?? []) names.add(name);
  return names;
}

const truthinessMessage = (how: string, name: string): string =>
  `${how} is true for every string, the empty one too (Liquid is not Jinja: only false and nil are false): write ${name} != "" (or ${name} != blank to treat spaces as empty)`;

const CONDITION_TAGS = new Set(['if', 'elsif', 'unless']);

const stringTruthiness: LintRule = {
  id: 'string-truthiness',
  severity: 'warning',
  check: (model) => {
    const strings = alwaysStrings(model);
    if (strings.size === 0) return [];
    const drafts: LintDraft[] = [];
    for (const { file, text } of liquidTexts(model)) {
      for (const piece of liquidPieces(text)) {
        const tag = piece.token as TagToken;
        if (piece.kind !== 'tag' || !CONDITION_TAGS.has(tag.name)) continue;
        for (const name of truthinessTests(tag.args)) {
          if (strings.has(name)) drafts.push({ file, ...positionAt(text, tag.begin), message: truthinessMessage(`{% ${tag.name} ${name} %}`, name) });
        }
      }
    }
    for (const expression of model.expressions) {
      if (expression.kind !== 'condition' || expression.error !== undefined) continue;
      for (const name of truthinessTests(expression.text)) {
        if (strings.has(name)) drafts.push({ file: expression.file, pointer: expression.pointer, message: truthinessMessage(`${expression.label} (${JSON.stringify(expression.text)})`, name) });
      }
    }
    return drafts;
  },
};

// ---------------------------------------------------------------------------------------------

/** The variables an expression reads, through the computed values it reads. */
function variablesRead(model: LintModel, references: readonly string[]): Set<string> {
  const computed = new Map(model.expressions.filter((e) => e.owner.kind === 'computed').map((e) => [e.owner.name, e.references ?? []]));
  const found = new Set<string>();
  const seen = new Set<string>();
  const visit = (name: string): void => {
    if (seen.has(name)) return;
    seen.add(name);
    const through = computed.get(name);
    if (through) through.forEach(visit);
    else found.add(name);
  };
  references.forEach(visit);
  return found;
}

const promptOrder: LintRule = {
  id: 'prompt-order',
  severity: 'warning',
  check: (model) => {
    const prompts = model.prompts;
    if (!prompts) return [];
    const askedAt = new Map<string, number>();
    for (const prompt of prompts.prompts) if (prompt.name !== undefined && !askedAt.has(prompt.name)) askedAt.set(prompt.name, prompt.index);
    const drafts: LintDraft[] = [];
    for (const prompt of prompts.prompts) {
      const when = model.expressions.find((e) => e.owner.kind === 'prompt' && e.file === prompts.file && e.pointer === `${prompt.pointer}/when`);
      if (!when?.references) continue;
      for (const name of variablesRead(model, when.references)) {
        const later = askedAt.get(name);
        if (later === undefined || later <= prompt.index) continue;
        const asked = prompt.name ?? `#${prompt.index}`;
        drafts.push({
          file: prompts.file,
          pointer: when.pointer,
          message: `when of prompt "${asked}" reads "${name}", which is asked later (prompt ${later + 1}): when "${asked}" is asked, "${name}" still holds its default. Move the prompt for "${name}" before "${asked}"`,
        });
      }
    }
    return drafts;
  },
};

// ---------------------------------------------------------------------------------------------

/** Python methods and the Liquid filters that do their work. */
const FILTER_OF_METHOD: Readonly<Record<string, string>> = {
  replace: 'replace: "a", "b"',
  lower: 'downcase',
  upper: 'upcase',
  strip: 'strip',
  lstrip: 'lstrip',
  rstrip: 'rstrip',
  split: 'split: ","',
  join: 'join: ","',
  capitalize: 'capitalize',
  title: 'capitalize',
  startswith: 'slice: 0, n',
  format: 'append: ...',
};

/** Jinja tags and their Liquid names. */
const TAG_OF_JINJA_TAG: Readonly<Record<string, string>> = { elif: 'elsif', set: 'assign', endset: 'endcapture' };

/** Tags whose markup reads `in` (`for x in list`) or is not an expression. */
const TAGS_WITH_IN = new Set(['for', 'tablerow', 'liquid', '#']);

function jinjaSyntaxIn(piece: Piece): string[] {
  const messages: string[] = [];
  const tag = piece.kind === 'tag' ? (piece.token as TagToken) : undefined;
  if (tag) {
    const liquidName = Object.hasOwn(TAG_OF_JINJA_TAG, tag.name) ? TAG_OF_JINJA_TAG[tag.name] : undefined;
    if (liquidName) messages.push(`{% ${tag.name} %} is Jinja: Liquid writes {% ${liquidName} %}`);
    if (TAGS_WITH_IN.has(tag.name)) return messages;
  }
  const markup = withoutStrings(tag ? tag.args : markupOf(piece));
  if (piece.kind === 'output' && /\bif\b/.test(markup) && /\belse\b/.test(markup)) {
    messages.push(`"a if c else b" is Jinja, and Liquid renders only a: write {% if c %}a{% else %}b{% endif %}`);
  }
  if (/\bin\b/.test(markup)) messages.push(`"in" is not a Liquid operator (Liquid ignores what follows the first value): write list contains "a" (for a string: text contains "a")`);
  if (/\bis\s+(?:not\s+)?defined\b/.test(markup)) messages.push(`"is defined" is Jinja: in Liquid a missing variable is nil, so write {% if name %} or {% if name == nil %}`);
  for (const match of markup.matchAll(/\.\s*([A-Za-z_]\w*)\s*\(/g)) {
    const method = match[1] ?? '';
    const filter = Object.hasOwn(FILTER_OF_METHOD, method) ? FILTER_OF_METHOD[method] : undefined;
    messages.push(`".${method}(...)" calls a Python method, which Liquid cannot: use a filter, {{ value | ${filter ?? 'filter_name: arguments'} }}`);
  }
  for (const match of markup.matchAll(/\|\s*([A-Za-z_]\w*)\s*\(/g)) {
    messages.push(`"| ${match[1] ?? ''}(...)" passes filter arguments in parentheses, as Jinja does: Liquid writes | ${match[1] ?? ''}: argument, argument`);
  }
  if (piece.kind === 'output' && /~/.test(markup)) messages.push(`"~" joins strings in Jinja, not in Liquid: write {{ a | append: b }}`);
  return messages;
}

const jinjaSyntax: LintRule = {
  id: 'jinja-syntax',
  severity: 'warning',
  check: (model) =>
    liquidTexts(model).flatMap(({ file, text }) =>
      liquidPieces(text)
        .filter((piece) => piece.kind !== 'text')
        .flatMap((piece) => jinjaSyntaxIn(piece).map((message) => ({ file, ...positionAt(text, piece.token.begin), message }))),
    ),
};

// ---------------------------------------------------------------------------------------------

const nonUtf8Liquid: LintRule = {
  id: 'non-utf8-liquid',
  severity: 'warning',
  check: ({ content }) =>
    (content?.nonUtf8Liquid ?? []).map(({ path, line }) => ({
      file: `${content?.folder ?? ''}/${path}`,
      line,
      column: 1,
      message: `holds {{ or {% but is not valid UTF-8, so it is copied byte for byte and never rendered: save it as UTF-8 to render it, or list it in the manifest's "verbatim" to copy it on purpose`,
    })),
};

/** The rules of this module, in the order they run. */
export const HABIT_RULES: readonly LintRule[] = [jinjaComment, stringTruthiness, promptOrder, jinjaSyntax, nonUtf8Liquid];
