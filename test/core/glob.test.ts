/**
 * The linear-time glob matcher of template-supplied globs (`updatePolicy`, a lock's `skip`): the
 * usual glob meaning (picomatch's, checked against it), and no catastrophic backtracking.
 */
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';

import { globMatcher, GlobError } from '../../src/core/glob.js';

describe('globMatcher', () => {
  it('has the usual meaning', () => {
    const cases: [string, string, boolean][] = [
      ['README.md', 'README.md', true],
      ['README.md', 'docs/README.md', false],
      ['*.md', 'a.md', true],
      ['*.md', 'docs/a.md', false],
      ['**/*.md', 'a.md', true],
      ['**/*.md', 'docs/deep/a.md', true],
      ['src/**', 'src', true],
      ['src/**', 'src/a/b.ts', true],
      ['src/**', 'srcx/a', false],
      ['**', 'any/thing/.env', true],
      ['a/**/b', 'a/b', true],
      ['a/**/b', 'a/x/y/b', true],
      ['a/**/b', 'a/x/y/c', false],
      ['a**b', 'axxb', true],
      ['a**b', 'ax/xb', false],
      ['*', '.env', true],
      ['src/*', 'src/.x', true],
      ['src/*', 'src/a/b', false],
      ['a?c', 'abc', true],
      ['a?c', 'a/c', false],
      ['[abc]x', 'bx', true],
      ['[a-c]x', 'dx', false],
      ['[!a]x', 'ax', false],
      ['[^a]x', 'bx', true],
      ['{src,lib}/**/*.{ts,js}', 'lib/a/b.js', true],
      ['{src,lib}/**/*.{ts,js}', 'lib/a/b.css', false],
      ['\\*.md', '*.md', true],
      ['\\*.md', 'a.md', false],
      ['generated/{a,{b,c}}.ts', 'generated/c.ts', true],
      ['[unclosed', '[unclosed', true],
    ];
    for (const [glob, path, expected] of cases) expect(globMatcher(glob)(path), `${glob} ~ ${path}`).toBe(expected);
  });

  it('agrees with picomatch on ordinary globs', () => {
    const globs = ['*', '**', '*.ts', '**/*.ts', 'src/**', 'src/**/*.ts', 'src/*/index.ts', 'a/**/b/*.json', '?.md', 'docs/**/README.md', '.github/**', '{a,b}/**', 'x*y*z'];
    const paths = ['a.ts', 'src/a.ts', 'src/x/index.ts', 'src/x/y/index.ts', 'a/b/c.json', 'a/x/b/c.json', 'b/z', 'x.md', 'docs/README.md', 'docs/x/README.md', '.github/workflows/ci.yml', 'xAyBz', 'x/y/z', 'src'];
    for (const glob of globs) {
      const ours = globMatcher(glob);
      const theirs = picomatch(glob, { dot: true });
      for (const path of paths) expect(ours(path), `${glob} ~ ${path}`).toBe(theirs(path));
    }
  });

  it('matches a glob built to make a backtracking matcher run for ever, in one pass', () => {
    const glob = `${'*a'.repeat(100)}b`;
    expect(globMatcher(glob)('a'.repeat(5000))).toBe(false);
    expect(globMatcher(glob)(`${'a'.repeat(5000)}b`)).toBe(true);
    expect(globMatcher(`${'**/'.repeat(50)}x`)(`${'a/'.repeat(2000)}y`)).toBe(false);
  });

  it('refuses a glob too long or with too many alternatives, naming the rule', () => {
    expect(() => globMatcher('a'.repeat(1025))).toThrow(GlobError);
    expect(() => globMatcher('{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}')).toThrow(/more than 64 \{\.\.\.\} alternatives/);
  });
});
