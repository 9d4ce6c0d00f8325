/**
 * The Cache-Control of every file of a static registry, as the hosts that read
 * `_headers` (Netlify, Cloudflare Pages) apply it: archives immutable for a year, the entry points
 * and template files short with stale-while-revalidate; each file matched by exactly one rule (the
 * hosts join the values of every rule a path matches).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { buildRegistry } from '../../src/registry/index.js';
import { CACHE_CONTROL, cacheControlOf } from '../../src/registry/output.js';
import { tempDir } from '../helpers/fixtures.js';
import { privateJwk, signingKeys } from '../helpers/signing-keys.js';
import { memorySource, version } from './memory-source.js';

interface HeaderRule {
  pattern: string;
  headers: Record<string, string>;
}

/** `_headers` as Netlify and Cloudflare Pages read it: a path line, then indented `Name: value` lines; `#` comments. */
function parseHeadersFile(text: string): HeaderRule[] {
  const rules: HeaderRule[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    if (!/^\s/.test(line)) {
      rules.push({ pattern: line.trim(), headers: {} });
      continue;
    }
    const [name = '', ...value] = line.trim().split(':');
    const rule = rules.at(-1);
    if (rule) rule.headers[name.trim().toLowerCase()] = value.join(':').trim();
  }
  return rules;
}

/** Whether a host's path pattern (`*` a splat matching anything) matches `urlPath`. */
const matches = (pattern: string, urlPath: string): boolean => new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`).test(urlPath);

describe('the Cache-Control of each file of a static registry', () => {
  it('is immutable for what is under archives/, short with stale-while-revalidate for the rest', () => {
    expect(cacheControlOf('archives/api/1.0.0.tgz')).toBe('public, max-age=31536000, immutable');
    expect(cacheControlOf('archives/api/1.0.0.tgz.sigstore.json')).toBe(CACHE_CONTROL.immutable);
    for (const name of ['registry.json', 'index.json', 'templates/api.json', 'index.html', 'registry.json.br']) {
      expect(cacheControlOf(name)).toBe('public, max-age=60, stale-while-revalidate=600');
    }
  });

  it('is written to _headers for the hosts that read it: each file of the folder matched by exactly one rule, with its Cache-Control', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('api', '1.0.0'), version('api', '1.1.0'), version('web', '0.1.0')]);
    const result = await buildRegistry(source, { outDir });
    expect(result.files).toContain('_headers');
    const rules = parseHeadersFile(await readFile(path.join(outDir, '_headers'), 'utf8'));
    const served = [...result.files.filter((name) => name !== '_headers'), 'archives/api/1.0.0.tgz', 'archives/web/0.1.0.tgz'];
    for (const name of served) {
      const applying = rules.filter((rule) => matches(rule.pattern, `/${name}`));
      expect(applying, name).toHaveLength(1);
      expect(applying[0]?.headers['cache-control'], name).toBe(cacheControlOf(name));
    }
    // The folder URL is the catalog page.
    expect(rules.filter((rule) => matches(rule.pattern, '/')).map((rule) => rule.headers['cache-control'])).toEqual([CACHE_CONTROL.document]);
  });

  it("covers a signed registry's keys.json and signatures too, each by exactly one rule", async () => {
    const outDir = await tempDir();
    const result = await buildRegistry(memorySource([version('api', '1.0.0')]), { outDir, signing: await signingKeys(await privateJwk('k1')) });
    const rules = parseHeadersFile(await readFile(path.join(outDir, '_headers'), 'utf8'));
    const signatures = result.files.filter((name) => name.endsWith('.jws') || name === 'keys.json');
    expect(signatures).toEqual(expect.arrayContaining(['keys.json', 'keys.json.jws', 'registry.json.jws', 'index.json.jws', 'templates/api.json.jws']));
    for (const name of signatures) {
      const applying = rules.filter((rule) => matches(rule.pattern, `/${name}`));
      expect(applying, name).toHaveLength(1);
      expect(applying[0]?.headers['cache-control'], name).toBe(CACHE_CONTROL.document);
    }
  });

  it('is not written again when nothing changed', async () => {
    const outDir = await tempDir();
    const source = memorySource([version('api', '1.0.0')]);
    expect((await buildRegistry(source, { outDir })).written).toContain('_headers');
    expect((await buildRegistry(source, { outDir })).written).toEqual([]);
  });
});
