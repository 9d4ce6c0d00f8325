import { Liquid, type FS } from 'liquidjs';

import { templateFilters } from './filters.js';
import { firstLine } from '../core/errors.js';

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

export interface EngineOptions {
  /** The only folder that `include`/`render` may read from; none means they cannot read files. */
  root?: string;
  limits?: Partial<RenderLimits>;
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

/** A liquidjs engine configured for untrusted templates. */
export function createEngine(options: EngineOptions = {}): Liquid {
  const limits = { ...DEFAULT_RENDER_LIMITS, ...options.limits };
  const engine = new Liquid({
    ...(options.root ? { root: [options.root], partials: [options.root], layouts: [options.root] } : { fs: noFileSystem, root: [] }),
    relativeReference: false,
    dynamicPartials: true,
    extname: '',
    ownPropertyOnly: true,
    strictFilters: true,
    strictVariables: false,
    cache: false,
    greedy: false,
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

const conditionSource = (expression: string): string => `{% if ${expression} %}true{% else %}false{% endif %}`;
const valueSource = (expression: string): string => `{{ ${expression} }}`;

/** A small evaluator of template expressions (conditions and computed values), sharing one engine. */
export class ExpressionEvaluator {
  private readonly engine: Liquid;

  constructor(engine: Liquid = createEngine()) {
    this.engine = engine;
  }

  /** Checks that the expression parses; throws ExpressionError naming the problem. */
  check(expression: string, kind: 'condition' | 'value'): void {
    checkExpression(expression);
    try {
      this.engine.parse(kind === 'condition' ? conditionSource(expression) : valueSource(expression));
    } catch (error) {
      throw new ExpressionError(`cannot parse ${JSON.stringify(expression)}: ${firstLine(error)}`, expression);
    }
  }

  /** The top-level names an expression reads, e.g. `features` for `features contains "api"`. */
  references(expression: string, kind: 'condition' | 'value'): string[] {
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

