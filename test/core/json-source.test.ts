import { describe, expect, it } from 'vitest';

import { JsonSyntaxError, parseJsonWithPositions } from '../../src/core/index.js';

describe('parseJsonWithPositions', () => {
  it('parses what JSON.parse parses', () => {
    const text = '{"a": [1, -2.5e3, true, null, "x\\n\\u00e9"], "b": {"c": {}}}';
    expect(parseJsonWithPositions(text).value).toEqual(JSON.parse(text));
  });

  it('records where each value starts', () => {
    const { positions } = parseJsonWithPositions('{\n  "name": "x",\n  "author": {\n    "email": "bad"\n  }\n}');
    expect(positions.get('/name')).toEqual({ line: 2, column: 11 });
    expect(positions.get('/author/email')).toEqual({ line: 4, column: 14 });
  });

  it('reports the line and column of a syntax error', () => {
    try {
      parseJsonWithPositions('{\n  "name": "x",\n  "version": 1.0.0\n}');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(JsonSyntaxError);
      expect((error as JsonSyntaxError).position).toEqual({ line: 3, column: 17 });
      expect((error as JsonSyntaxError).message).toMatch(/line 3, column 17/);
    }
  });

  it('reports a trailing comma and an unexpected end', () => {
    expect(() => parseJsonWithPositions('{"a": 1,}')).toThrow(/line 1, column 9/);
    expect(() => parseJsonWithPositions('{"a": ')).toThrow(/unexpected end of JSON/);
  });

  it('keeps "__proto__" as a plain key instead of changing the prototype', () => {
    const { value } = parseJsonWithPositions('{"__proto__": {"polluted": true}}');
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value as object)).toEqual(['__proto__']);
  });
});
