/**
 * The merge by key of `.json` files whose line merge conflicts: the template's changes laid over
 * the project's text, its formatting kept; a key changed on both sides gives up (markers then).
 */
import { describe, expect, it } from 'vitest';

import { mergeJsonByKey } from '../../src/migrate/json-merge.js';
import { mergeThreeWay } from '../../src/migrate/merge.js';

const json = (value: unknown, indent: string | number = 2): string => `${JSON.stringify(value, null, indent)}\n`;

describe('mergeJsonByKey', () => {
  const base = json({ name: 'shop', scripts: { build: 'tsc' }, dependencies: { a: '1.0.0' } });
  const ours = json({ name: 'shop', scripts: { build: 'tsc', lint: 'eslint .' }, dependencies: { a: '1.0.0' } });
  const theirs = json({ name: 'shop', scripts: { build: 'tsc -b', test: 'vitest' }, dependencies: { a: '2.0.0', b: '1.0.0' } });

  it('merges what the line merge cannot: keys changed side by side on neighbouring lines', () => {
    expect(mergeThreeWay(base, ours, theirs, { ours: 'project', theirs: 'template' }).clean).toBe(false);
    const merged = mergeJsonByKey(base, ours, theirs);
    expect(JSON.parse(merged ?? 'null')).toEqual({ name: 'shop', scripts: { build: 'tsc -b', test: 'vitest', lint: 'eslint .' }, dependencies: { a: '2.0.0', b: '1.0.0' } });
  });

  it("puts a new key after the key it follows in the template's object", () => {
    const merged = mergeJsonByKey(base, ours, theirs) ?? '';
    expect(Object.keys((JSON.parse(merged) as { scripts: object }).scripts)).toEqual(['build', 'test', 'lint']);
  });

  it("keeps the project's formatting: tabs, CRLF line endings and comments", () => {
    const tabbed = (value: unknown): string => json(value, '\t').replace(/\n/g, '\r\n');
    const withComment = tabbed({ name: 'shop', version: '1.0.0', private: true }).replace('\t"private"', '\t// kept\r\n\t"private"');
    const merged = mergeJsonByKey(tabbed({ name: 'shop', version: '1.0.0' }), withComment, tabbed({ name: 'shop', version: '2.0.0', license: 'MIT' }));
    expect(merged).toBe('{\r\n\t"name": "shop",\r\n\t"version": "2.0.0",\r\n\t"license": "MIT",\r\n\t// kept\r\n\t"private": true\r\n}\r\n');
  });

  it('removes what the template removed and the project left alone', () => {
    const merged = mergeJsonByKey(json({ a: 1, b: 2, c: 3 }), json({ a: 1, b: 2, c: 3, d: 4 }), json({ a: 1, c: 3 }));
    expect(JSON.parse(merged ?? 'null')).toEqual({ a: 1, c: 3, d: 4 });
  });

  it('takes a change both sides made alike once', () => {
    expect(JSON.parse(mergeJsonByKey(json({ v: 1 }), json({ v: 2, x: 1 }), json({ v: 2 })) ?? 'null')).toEqual({ v: 2, x: 1 });
  });

  it('gives up when a key changed on both sides, or inside an object the project removed', () => {
    expect(mergeJsonByKey(json({ v: 1 }), json({ v: 2 }), json({ v: 3 }))).toBeUndefined();
    expect(mergeJsonByKey(json({ o: { a: 1 } }), json({}), json({ o: { a: 2 } }))).toBeUndefined();
    // Arrays are values: two different edits of one array conflict.
    expect(mergeJsonByKey(json({ l: [1] }), json({ l: [1, 2] }), json({ l: [1, 3] }))).toBeUndefined();
  });

  it('gives up on anything but three JSON objects', () => {
    expect(mergeJsonByKey('[1]\n', '[1, 2]\n', '[0, 1]\n')).toBeUndefined();
    expect(mergeJsonByKey(json({ a: 1 }), '{ "a": 1, \n', json({ a: 2 }))).toBeUndefined();
  });
});
