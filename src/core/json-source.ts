/** A place in a text file, both 1-based. */
export interface SourcePosition {
  line: number;
  column: number;
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly position: SourcePosition,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

export interface ParsedJson {
  value: unknown;
  /** Where each value starts, keyed by JSON pointer (`""` is the root, `/author/name` a nested one). */
  positions: Map<string, SourcePosition>;
}

export function escapePointerSegment(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Where the value at `pointer` starts, or, when the file has no such value (a missing field),
 * where its closest existing parent starts; undefined when not even the root is known.
 */
export function nearestPosition(positions: ReadonlyMap<string, SourcePosition> | undefined, pointer: string): SourcePosition | undefined {
  if (!positions) return undefined;
  for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
    const position = positions.get(p);
    if (position) return position;
    if (p === '') return undefined;
  }
}

/** The segments of a JSON pointer, unescaped (`/a~1b/c` -> `['a/b', 'c']`). */
export function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .replace(/^\//, '')
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function positionAt(text: string, offset: number): SourcePosition {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/**
 * Parses JSON text like `JSON.parse`, but reports syntax errors with line and column and records
 * where every value starts, so that schema errors can point into the file.
 */
export function parseJsonWithPositions(text: string): ParsedJson {
  const positions = new Map<string, SourcePosition>();
  // A byte-order mark is legal at the start of a file but not inside JSON.
  let offset = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  let lineStart = 0;

  const fail = (what: string, at = offset): never => {
    const pos = positionAt(text, at);
    throw new JsonSyntaxError(`${what} at line ${pos.line}, column ${pos.column}`, pos);
  };
  const here = (): SourcePosition => ({ line, column: offset - lineStart + 1 });
  const skipSpace = (): void => {
    for (;;) {
      const c = text.charCodeAt(offset);
      if (c === 10) {
        line++;
        offset++;
        lineStart = offset;
      } else if (c === 32 || c === 9 || c === 13) offset++;
      else return;
    }
  };
  const describe = (): string =>
    offset >= text.length ? 'unexpected end of JSON' : `unexpected ${JSON.stringify(text[offset])}`;

  const parseString = (): string => {
    const start = offset;
    offset++;
    for (;;) {
      const c = text.charCodeAt(offset);
      if (Number.isNaN(c)) fail('unterminated string', start);
      if (c === 34) break;
      if (c === 92) offset += 2;
      else if (c < 32) fail('control character in string');
      else offset++;
    }
    offset++;
    try {
      return JSON.parse(text.slice(start, offset)) as string;
    } catch {
      return fail('invalid escape in string', start);
    }
  };

  const parseValue = (pointer: string, depth: number): unknown => {
    if (depth > 512) fail('nesting deeper than 512 levels');
    skipSpace();
    positions.set(pointer, here());
    const c = text[offset];
    if (c === '{') {
      offset++;
      const result: Record<string, unknown> = {};
      skipSpace();
      if (text[offset] === '}') {
        offset++;
        return result;
      }
      for (;;) {
        skipSpace();
        if (text[offset] !== '"') fail(`expected a property name in double quotes, ${describe()}`);
        const key = parseString();
        skipSpace();
        if (text[offset] !== ':') fail(`expected ":" after property name, ${describe()}`);
        offset++;
        Object.defineProperty(result, key, {
          value: parseValue(`${pointer}/${escapePointerSegment(key)}`, depth + 1),
          enumerable: true,
          writable: true,
          configurable: true,
        });
        skipSpace();
        if (text[offset] === ',') {
          offset++;
          continue;
        }
        if (text[offset] === '}') {
          offset++;
          return result;
        }
        fail(`expected "," or "}" after property value, ${describe()}`);
      }
    }
    if (c === '[') {
      offset++;
      const result: unknown[] = [];
      skipSpace();
      if (text[offset] === ']') {
        offset++;
        return result;
      }
      for (;;) {
        result.push(parseValue(`${pointer}/${result.length}`, depth + 1));
        skipSpace();
        if (text[offset] === ',') {
          offset++;
          continue;
        }
        if (text[offset] === ']') {
          offset++;
          return result;
        }
        fail(`expected "," or "]" after array element, ${describe()}`);
      }
    }
    if (c === '"') return parseString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(offset, offset + 400));
    if (!literal) return fail(`expected a value, ${describe()}`);
    offset += literal[0].length;
    return JSON.parse(literal[0]) as unknown;
  };

  const value = parseValue('', 0);
  skipSpace();
  if (offset < text.length) fail(`unexpected ${JSON.stringify(text[offset])} after the end of the JSON value`);
  return { value, positions };
}
