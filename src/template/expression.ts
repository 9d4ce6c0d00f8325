import { isUtf8 } from 'node:buffer';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';

import type { FS, Liquid, Token, Tokenizer } from 'liquidjs';

import { templateFilters } from './filters.js';
import { firstLine } from '../core/errors.js';
import { loadLiquidjs } from '../core/lazy/liquidjs.load.js';
import { didYouMean } from './suggest.js';

/** Limits for rendering untrusted templates; every render goes through them. */
export interface RenderLimits {
  /** Largest template text, in characters. */
  parseLimit: number;
  /** Longest render of one template, in milliseconds. */
  renderLimit: number;
  /** Most memory, in bytes, that filters and tags may allocate during one render. */
  memoryLimit: number;
}

export const DEFAULT_RENDER_LIMITS: RenderLimits = {
  parseLimit: 1_000_000,
  renderLimit: 2_000,
  memoryLimit: 32_000_000,
};

/**
 * How `{%-`, `-%}`, `{{-` and `-}}` trim: `liquid` as stock Liquid and Jinja do (every blank up to
 * the next text, line breaks included); `line` only on the tag's own line (the blanks before it;
 * the blanks after it and the one line break that ends the line).
 */
export type WhitespaceMode = 'liquid' | 'line';

const DEFAULT_WHITESPACE: WhitespaceMode = 'liquid';

export interface EngineOptions {
  /** The content folder: the only folder, with `partials`, that `include`/`render` may read from; none means they cannot read files. */
  root?: string;
  /** The template's partials folder, read before `root`; a name without its `.liquid` suffix finds the file with it. */
  partials?: string;
  limits?: Partial<RenderLimits>;
  /** Default `liquid`, as stock liquidjs. */
  whitespace?: WhitespaceMode;
}

// With no root, includes must fail instead of falling back to the process's working directory.
const noFileSystem: FS = {
  exists: () => Promise.resolve(false),
  existsSync: () => false,
  readFile: (file) => Promise.reject(new Error(`include of ${file} is not allowed here`)),
  readFileSync: (file) => {
    throw new Error(`include of ${file} is not allowed here`);
  },
  resolve: (_dir, file) => file,
  contains: () => Promise.resolve(false),
  containsSync: () => false,
};

const isFileSync = (file: string): boolean => {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/** True when `file`, links resolved, is inside `root`, links resolved. */
function containedIn(realRoot: string, realFile: string): boolean {
  const prefix = realRoot.endsWith(path.sep) ? realRoot : realRoot + path.sep;
  return realFile.startsWith(prefix);
}

/** A partial's text: Liquid is UTF-8, and decoding other bytes as UTF-8 would replace them with U+FFFD. */
function liquidSource(file: string, bytes: Buffer): string {
  if (!isUtf8(bytes)) throw new Error(`${path.basename(file)} is not valid UTF-8: save the partial as UTF-8`);
  return bytes.toString('utf8');
}

/**
 * The files `include`, `render` and `layout` read: only regular files inside the given folders
 * (links resolved, so a link cannot lead out). In the partials folder, `{% render "header" %}`
 * finds `header`, else `header.liquid`, as Shopify's snippets and Jekyll's includes are named.
 */
function folderFileSystem(partials: string | undefined): FS {
  return {
    exists: async (file) => stat(file).then((info) => info.isFile(), () => false),
    existsSync: isFileSync,
    readFile: async (file) => liquidSource(file, await readFile(file)),
    readFileSync: (file) => liquidSource(file, readFileSync(file)),
    resolve: (dir, file) => {
      const exact = path.resolve(dir, file);
      if (partials === undefined || dir !== partials || isFileSync(exact)) return exact;
      return isFileSync(`${exact}.liquid`) ? `${exact}.liquid` : exact;
    },
    contains: async (root, file) => {
      try {
        return containedIn(await realpath(root), await realpath(file));
      } catch {
        return false;
      }
    },
    containsSync: (root, file) => {
      try {
        return containedIn(realpathSync(root), realpathSync(file));
      } catch {
        return false;
      }
    },
    sep: path.sep,
    dirname: (file) => path.dirname(file),
  };
}

/** A liquidjs engine configured for untrusted templates. */
export function createEngine(options: EngineOptions = {}): Liquid {
  const limits = { ...DEFAULT_RENDER_LIMITS, ...options.limits };
  const folders = [...(options.partials !== undefined ? [path.resolve(options.partials)] : []), ...(options.root !== undefined ? [path.resolve(options.root)] : [])];
  const { Liquid } = loadLiquidjs();
  const engine = new Liquid({
    ...(folders.length > 0
      ? { fs: folderFileSystem(options.partials === undefined ? undefined : path.resolve(options.partials)), root: folders, partials: folders, layouts: folders }
      : { fs: noFileSystem, root: [] }),
    relativeReference: false,
    dynamicPartials: true,
    extname: '',
    ownPropertyOnly: true,
    strictFilters: true,
    strictVariables: false,
    cache: false,
    // Stock liquidjs trims greedily; `line` is this project's former default, kept for templates written for it.
    greedy: (options.whitespace ?? DEFAULT_WHITESPACE) === 'liquid',
    ...limits,
  });
  for (const [name, filter] of Object.entries(templateFilters)) engine.registerFilter(name, filter);
  return engine;
}

export class ExpressionError extends Error {
  constructor(
    message: string,
    readonly expression: string,
  ) {
    super(message);
    this.name = 'ExpressionError';
  }
}

// An expression is placed inside our own `{% if %}` or `{{ }}`; delimiters in it would let it
// close ours and open tags of its own (an include, a loop).
const DELIMITERS = /\{\{|\}\}|\{%|%\}/;

function checkExpression(expression: string): void {
  if (DELIMITERS.test(expression)) {
    throw new ExpressionError(`expression must not contain {{, }}, {% or %} (got ${JSON.stringify(expression)})`, expression);
  }
  if (expression.trim() === '') throw new ExpressionError('expression is empty', expression);
}

const OPERATORS = '==, !=, <, >, <=, >=, contains, and, or';
const quoted = (token: Token): string => JSON.stringify(token.getText());

/**
 * Why an expression is not well formed, or undefined when it is. Liquid itself is lenient: it
 * reads `extras contains` or `a == ` or `a b` without complaint and evaluates them to something
 * nobody meant. Here an expression must be values joined by operators (`not` may precede a
 * value), optionally followed by filters, and nothing else.
 */
function expressionGrammarProblem(expression: string, engine: Liquid): string | undefined {
  const { Tokenizer, TokenKind } = loadLiquidjs();
  const tokenizer = new Tokenizer(expression, engine.options.operators);
  let tokens: Token[];
  try {
    tokens = [...tokenizer.readExpressionTokens()];
  } catch (error) {
    return firstLine(error).replace(/, line:\d+, col:\d+.*$/, '');
  }
  let expectValue = true;
  let last: Token | undefined;
  for (const token of tokens) {
    const isOperator = token.kind === TokenKind.Operator;
    if (expectValue) {
      if (isOperator && token.getText() !== 'not') {
        return last ? `expected a value after ${quoted(last)}, found ${quoted(token)}` : `starts with the operator ${quoted(token)}: put a value before it`;
      }
      if (!isOperator) expectValue = false;
    } else if (!isOperator) {
      return `expected an operator (${OPERATORS}) between ${quoted(last ?? token)} and ${quoted(token)}`;
    } else if (token.getText() === 'not') {
      return `"not" after ${quoted(last ?? token)}: "not" goes before a value`;
    } else {
      expectValue = true;
    }
    last = token;
  }
  if (last && expectValue) return `ends with ${quoted(last)}: put a value after it, or remove it`;
  if (!last) return 'has no value';
  tokenizer.skipBlank();
  if (!tokenizer.end() && tokenizer.peek() !== '|') {
    const rest = tokenizer.remaining().trim();
    return rest.startsWith('=') ? `unexpected ${JSON.stringify(rest)}: compare with ==` : `unexpected ${JSON.stringify(rest)}`;
  }
  try {
    tokenizer.readFilters();
  } catch (error) {
    return firstLine(error).replace(/, line:\d+, col:\d+.*$/, '');
  }
  tokenizer.skipBlank();
  if (!tokenizer.end()) return `unexpected ${JSON.stringify(tokenizer.remaining().trim())}`;
  if (/\|\s*$/.test(expression)) return 'ends with "|": name a filter after it, or remove it';
  return undefined;
}

/** A comparison of a plain variable with a literal inside an expression: `database == "sqlite"`, `port > 1024`. */
export interface Comparison {
  name: string;
  operator: string;
  value: string | number | boolean;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The literal a token stands for, when it is a string, number or boolean literal. */
function literalOf(token: Token): string | number | boolean | undefined {
  const { TokenKind } = loadLiquidjs();
  const content = (token as { content?: unknown }).content;
  if (token.kind === TokenKind.Quoted || token.kind === TokenKind.Number || token.kind === TokenKind.Literal) {
    return typeof content === 'string' || typeof content === 'number' || typeof content === 'boolean' ? content : undefined;
  }
  return undefined;
}

/**
 * The comparisons of plain variables with literals in an expression (either side), for picking
 * answers that make a condition true or false. Read with Liquid's tokenizer; an expression it
 * cannot read has none.
 */
export function comparisonsOf(expression: string, engine: Liquid): Comparison[] {
  const { Tokenizer, TokenKind } = loadLiquidjs();
  let tokens: Token[];
  try {
    tokens = [...new Tokenizer(expression, engine.options.operators).readExpressionTokens()];
  } catch {
    return [];
  }
  const found: Comparison[] = [];
  for (let i = 1; i + 1 < tokens.length; i++) {
    const [left, operator, right] = [tokens[i - 1], tokens[i], tokens[i + 1]];
    if (!left || !operator || !right || operator.kind !== TokenKind.Operator) continue;
    const op = operator.getText();
    if (op === 'and' || op === 'or' || op === 'not') continue;
    const leftName = left.kind === TokenKind.PropertyAccess && IDENTIFIER.test(left.getText()) ? left.getText() : undefined;
    const rightName = right.kind === TokenKind.PropertyAccess && IDENTIFIER.test(right.getText()) ? right.getText() : undefined;
    const leftValue = literalOf(left);
    const rightValue = literalOf(right);
    if (leftName !== undefined && rightValue !== undefined) found.push({ name: leftName, operator: op, value: rightValue });
    // `"x" == name` reads the same as `name == "x"`; only == and != are symmetric enough to try.
    else if (rightName !== undefined && leftValue !== undefined && (op === '==' || op === '!=')) found.push({ name: rightName, operator: op, value: leftValue });
  }
  return found;
}

/**
 * A computed default of a variable: text holding `{{ expression }}` placeholders, such as
 * `"{{ projectName | snake_case }}"` or `"{{ projectName }}-api"`, worked out from the answers
 * before it.
 */
export const isComputedDefault = (value: unknown): value is string => typeof value === 'string' && value.includes('{{');

/** What an expression is: a condition (`when`), a value (`computed`), or a computed default's text with placeholders. */
export type ExpressionKind = 'condition' | 'value' | 'default';

type DefaultPart = { text: string } | { expression: string };

const withoutPosition = (message: string): string => message.replace(/, line:\d+, col:\d+.*$/, '');

const conditionSource = (expression: string): string => `{% if ${expression} %}true{% else %}false{% endif %}`;
const valueSource = (expression: string): string => `{{ ${expression} }}`;

/** A small evaluator of template expressions (conditions and computed values), sharing one engine. */
export class ExpressionEvaluator {
  /** The engine expressions are parsed and evaluated with (the template filters registered). */
  readonly engine: Liquid;

  constructor(engine: Liquid = createEngine()) {
    this.engine = engine;
  }

  /**
   * The literal text and the placeholders of a computed default. Only `{{ value }}` placeholders
   * are allowed, each a well-formed value expression: a tag (`{% include %}`, a loop) would make a
   * default a program. Throws ExpressionError naming the problem.
   */
  private defaultParts(text: string): DefaultPart[] {
    const { Tokenizer, TypeGuards } = loadLiquidjs();
    let tokens: ReturnType<Tokenizer['readTopLevelTokens']>;
    try {
      tokens = new Tokenizer(text, this.engine.options.operators).readTopLevelTokens(this.engine.options);
    } catch (error) {
      throw new ExpressionError(`cannot parse ${JSON.stringify(text)}: ${withoutPosition(firstLine(error))}`, text);
    }
    return tokens.map((token): DefaultPart => {
      if (TypeGuards.isOutputToken(token)) {
        this.check(token.content, 'value');
        return { expression: token.content };
      }
      if (TypeGuards.isHTMLToken(token)) return { text: token.getContent() };
      throw new ExpressionError(`cannot parse ${JSON.stringify(text)}: a default holds {{ value }} placeholders only, not tags such as ${JSON.stringify((token as Token).getText())}`, text);
    });
  }

  /** Checks that the expression parses; throws ExpressionError naming the problem. */
  check(expression: string, kind: ExpressionKind): void {
    if (kind === 'default') {
      this.defaultParts(expression);
      return;
    }
    checkExpression(expression);
    try {
      this.engine.parse(kind === 'condition' ? conditionSource(expression) : valueSource(expression));
    } catch (error) {
      const message = firstLine(error).replace(/, line:\d+, col:\d+.*$/, '');
      const filter = /^undefined filter: (\S+)/.exec(message)?.[1];
      const hint = filter === undefined ? '' : didYouMean(filter, Object.keys(this.engine.filters));
      throw new ExpressionError(`cannot parse ${JSON.stringify(expression)}: ${message}${hint}`, expression);
    }
    const problem = expressionGrammarProblem(expression, this.engine);
    if (problem !== undefined) throw new ExpressionError(`cannot parse ${JSON.stringify(expression)}: ${problem}`, expression);
  }

  /** The top-level names an expression reads, e.g. `features` for `features contains "api"`. */
  references(expression: string, kind: ExpressionKind): string[] {
    if (kind === 'default') {
      const parts = this.defaultParts(expression);
      return [...new Set(parts.flatMap((part) => ('expression' in part ? this.references(part.expression, 'value') : [])))];
    }
    this.check(expression, kind);
    const source = kind === 'condition' ? conditionSource(expression) : valueSource(expression);
    return [...new Set(this.engine.globalVariablesSync(source))];
  }

  /** Evaluates a condition with Liquid truthiness (only false and nil are false). */
  condition(expression: string, scope: object): boolean {
    checkExpression(expression);
    try {
      return this.engine.parseAndRenderSync(conditionSource(expression), scope) === 'true';
    } catch (error) {
      throw new ExpressionError(`cannot evaluate ${JSON.stringify(expression)}: ${firstLine(error)}`, expression);
    }
  }

  /** Works out a computed default: its text with every placeholder replaced by its value in `scope`. */
  interpolate(text: string, scope: object): string {
    return this.defaultParts(text)
      .map((part) => ('expression' in part ? this.value(part.expression, scope) : part.text))
      .join('');
  }

  /** Evaluates a value expression (filters allowed) to its rendered text. */
  value(expression: string, scope: object): string {
    checkExpression(expression);
    try {
      return String(this.engine.parseAndRenderSync(valueSource(expression), scope));
    } catch (error) {
      throw new ExpressionError(`cannot evaluate ${JSON.stringify(expression)}: ${firstLine(error)}`, expression);
    }
  }
}

