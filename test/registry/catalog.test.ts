/**
 * The catalog page as the generator writes it (what it does in a browser is tested in
 * catalog.browser.test.ts): the first page of results drawn at build time, the typed browser entry
 * bundled and allowed by its hash, what it takes from options and categories escaped, and the same
 * bytes while what it shows is the same, so an incremental rebuild leaves it alone.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

import { buildRegistry, escapeHtml, renderCatalog, safeUrl } from '../../src/registry/index.js';
import { bundleCatalogScript, CATALOG_SCRIPT_MODULE, catalogScriptModule, writeCatalogScriptSource } from '../../scripts/build-catalog.js';
import { tempDir } from '../helpers/fixtures.js';
import { archiveReader, memorySource, tgzOf, version } from './memory-source.js';

const NOW = () => new Date('2026-05-01T10:00:00.000Z');

async function build(versions: Parameters<typeof memorySource>[0], options: { publicUrl?: string } = {}) {
  const outDir = await tempDir();
  const result = await buildRegistry(memorySource(versions), { outDir, now: NOW, ...options });
  return { ...result, outDir, html: await readFile(path.join(outDir, 'index.html'), 'utf8') };
}

const unescapeHtml = (text: string): string =>
  text.replace(/&(lt|gt|quot|#39|amp);/g, (_m, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e] ?? '');

/** The JSON the page's script reads from `data-config`. */
function configOf(html: string): { registryUrl?: string; categories: { id: string; name: string }[] } {
  const attribute = /<main id="catalog"[^>]* data-config="([^"]*)"/.exec(html)?.[1];
  expect(attribute, 'data-config').toBeDefined();
  return JSON.parse(unescapeHtml(attribute ?? '')) as ReturnType<typeof configOf>;
}

describe('the catalog page', () => {
  it('holds the first page of results in listing order, and loads index.json for the rest', async () => {
    const { html } = await build([
      version('node-service', '1.0.0', { keywords: ['distinctive-tag'], description: 'A very distinctive description' }, { stats: { downloads: 5, stars: 0, forks: 0, issues: 0 } }),
      version('react-app', '0.3.0', { category: 'frontend', stability: 'beta', features: ['distinctive-feature'] }, { stats: { downloads: 900, stars: 0, forks: 0, issues: 0 } }),
      version('popular', '2.0.0', {}, { stats: { downloads: 50, stars: 0, forks: 0, issues: 0 } }),
      ...Array.from({ length: 55 }, (_, i) => version(`filler-${String(i).padStart(2, '0')}`, '1.0.0', { category: 'desktop' })),
    ]);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const results = /<ul id="results"[^>]*>([\s\S]*?)<\/ul>\n/.exec(html)?.[1] ?? '';
    const ids = [...results.matchAll(/<h3><a href="#t-([^"]+)">/g)].map((m) => m[1]);
    // The spec's listing order (stable before beta, then downloads, then name), fifty of them.
    expect(ids).toHaveLength(50);
    expect(ids.slice(0, 3)).toEqual(['popular', 'node-service', 'filler-00']);
    expect(ids).not.toContain('react-app');
    expect(results).toContain('A very distinctive description');
    expect(results).toContain('distinctive-tag');
    expect(html).toContain('<p id="count" role="status" aria-live="polite">58 templates</p>');
    expect(html).toContain('<button id="more" type="button" class="more">Show 8 more (8 not shown)</button>');
    // The rest comes from index.json, asked for by the script.
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '';
    expect(script).toContain('index.json');
    for (const id of ['q', 'category', 'stability', 'tag', 'feature', 'sort']) expect(html).toMatch(new RegExp(`<label [^>]*for="${id}"[^>]*>[^<]+</label>`));
    // Without JavaScript, a reader still finds the data.
    expect(html).toMatch(/<noscript><p>This catalog needs JavaScript[^<]*<a href="registry.json">registry.json<\/a>/);
  });

  it('embeds only the category names and where registry.json is', async () => {
    const { html, document } = await build([version('a', '1.0.0')], { publicUrl: 'https://acme.github.io/registry/' });
    expect(configOf(html)).toEqual({ registryUrl: 'https://acme.github.io/registry/registry.json', categories: document.categories.map(({ id, name }) => ({ id, name })) });
    expect(html).toContain('href="https://acme.github.io/registry/registry.json"');
    const relative = await build([version('a', '1.0.0')]);
    expect(configOf(relative.html).registryUrl).toBeUndefined();
    expect(relative.html).toContain('<a href="registry.json">registry.json</a>');
  });

  it('allows exactly its own inline style and script (by hash), fetches from its own origin, and loads nothing else', async () => {
    const { html } = await build([version('a', '1.0.0')]);
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] ?? '');
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1] ?? '');
    expect(scripts).toHaveLength(1);
    expect(styles).toHaveLength(1);
    expect(html.match(/<script/g)).toHaveLength(1);
    const csp = unescapeHtml(/http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1] ?? '');
    const sha = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    expect(csp.split('; ').sort()).toEqual(
      ["default-src 'none'", `style-src ${sha(styles[0] ?? '')}`, `script-src ${sha(scripts[0] ?? '')}`, "connect-src 'self'", "base-uri 'none'", "form-action 'none'"].sort(),
    );
    expect(html).not.toMatch(/<(script|link|img|iframe)[^>]+(src|href)=/);
    expect(html).not.toMatch(/https?:\/\/(?!relative\.invalid\/)/);
  });

  it("is the typed browser entry bundled: core's listing order and search, no copy of them, no HTML parsing", async () => {
    const { html } = await build([version('a', '1.0.0')]);
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '';
    const bundle = await bundleCatalogScript();
    expect(script).toBe(bundle.text);
    // One listing order and one search: the page runs core's, compiled from the sources.
    expect(bundle.inputs).toEqual(expect.arrayContaining(['src/catalog/browser/main.ts', 'src/core/listing.ts', 'src/core/search.ts']));
    expect(bundle.inputs.filter((input) => !/^src\/(core|catalog)\//.test(input))).toEqual([]);
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  });

  it('is committed as the bundle of the sources, so a build by tsc alone holds the page script', async () => {
    const fresh = await catalogScriptModule(true);
    if (process.env.UPDATE_CATALOG_SCRIPT === '1') await writeCatalogScriptSource();
    expect(await readFile(CATALOG_SCRIPT_MODULE, 'utf8'), 'src/registry/catalog-script.ts is stale: UPDATE_CATALOG_SCRIPT=1 npx vitest run test/registry/catalog.test.ts').toBe(fresh);
  });

  it('type-checks its browser entry against the DOM, without Node.js', () => {
    const configFile = path.resolve('src/catalog/browser/tsconfig.json');
    const config = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
    expect(config?.errors ?? []).toEqual([]);
    expect(config?.fileNames.map((file) => path.relative(process.cwd(), file))).toEqual(expect.arrayContaining(['src/catalog/browser/main.ts']));
    const program = ts.createProgram({ rootNames: config?.fileNames ?? [], options: config?.options ?? {} });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? path.relative(process.cwd(), d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
    expect(problems).toEqual([]);
  }, 120_000);

  it('escapes the title, the public URL and the category names', () => {
    const html = renderCatalog(
      { templates: [], tags: [], lastUpdated: '2026-05-01T10:00:00.000Z', categories: [{ id: 'x"><script>alert(1)</script>', name: '<img src=x onerror=alert(1)>' }] },
      { title: '<b>Acme</b> & "friends"', publicUrl: 'https://acme.test/?a="1"&b=<2>' },
    );
    expect(html).toContain('<title>&lt;b&gt;Acme&lt;/b&gt; &amp; &quot;friends&quot;</title>');
    expect(html).toContain('<h1>&lt;b&gt;Acme&lt;/b&gt; &amp; &quot;friends&quot;</h1>');
    expect(html).toContain('href="https://acme.test/?a=&quot;1&quot;&amp;b=&lt;2&gt;/registry.json"');
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>');
    expect(configOf(html).categories).toEqual([{ id: 'x"><script>alert(1)</script>', name: '<img src=x onerror=alert(1)>' }]);
  });

  it('links registry.json relatively when the public URL is not http(s)', () => {
    const html = renderCatalog({ templates: [], tags: [], categories: [], lastUpdated: '2026-05-01T10:00:00.000Z' }, { publicUrl: 'javascript:alert(1)' });
    expect(html).not.toContain('javascript:');
    expect(html).toContain('<a href="registry.json">registry.json</a>');
  });

  it('is the same bytes while what it shows is the same, so a rebuild that changes nothing it shows leaves it alone', async () => {
    const versions = [version('a', '1.0.0'), version('b', '1.0.0', { category: 'frontend' })];
    const outDir = await tempDir();
    const first = await buildRegistry(memorySource(versions), { outDir, now: NOW });
    expect(renderCatalog(first.document)).toBe(renderCatalog(structuredClone(first.document)));
    expect(first.written).toContain('index.html');

    const again = await buildRegistry(memorySource(versions), { outDir, now: () => new Date('2026-05-02T10:00:00.000Z') });
    expect(again.written.filter((file) => file.startsWith('index.html'))).toEqual([]);

    // A new version is on the first page: the page is drawn again.
    const second = await buildRegistry(memorySource([...versions, version('a', '1.1.0'), version('c', '1.0.0')]), { outDir, now: () => new Date('2026-05-02T10:00:00.000Z') });
    expect(second.changed).toBe(true);
    expect(second.written).toContain('index.html');
    expect(await readFile(path.join(outDir, 'index.html'), 'utf8')).toContain('1.1.0');
    expect(renderCatalog(second.document, { title: 'Other' })).not.toBe(renderCatalog(second.document));
  });
});

describe("a template's page text in its file", () => {
  const readFileJson = async (outDir: string, id: string) => JSON.parse(await readFile(path.join(outDir, 'templates', `${id}.json`), 'utf8')) as { versions: { version: string }[]; page?: Record<string, unknown> };

  it("holds the presented version's README and questions and every version's change log section, read from the archives", async () => {
    const changelog = '# Changelog\n\n## 1.1.0\n\n- Faster.\n\n## [1.0.0] - 2026-01-01\n\n- First.\n\n[1.0.0]: https://example.com/compare\n';
    const stable = await tgzOf({ 'README.md': '# Hello\n\nWorld', 'HISTORY.md': changelog, 'custom/prompts.json': JSON.stringify({ prompts: [{ name: 'name', message: 'Name?', type: 'input' }] }), 'template.vars.json': JSON.stringify({ variables: { name: { type: 'string', default: 'demo' } } }) }, 'package/');
    const beta = await tgzOf({ 'HISTORY.md': `# Changelog\n\n## 2.0.0\n\n- Next.\n\n${changelog.slice(13)}` });
    const extra = { changelog: 'HISTORY.md', customization: { prompts: 'custom/prompts.json' } };
    const { outDir } = await build([
      version('a', '1.0.0', extra, { readArchive: archiveReader(stable) }),
      version('a', '1.1.0', extra, { readArchive: archiveReader(stable) }),
      version('a', '2.0.0', { ...extra, stability: 'beta' }, { readArchive: archiveReader(beta) }),
    ]);
    const file = await readFileJson(outDir, 'a');
    expect(file.versions.map((v) => v.version)).toEqual(['1.0.0', '1.1.0', '2.0.0']);
    expect(file.page).toEqual({
      version: '1.1.0',
      readme: '# Hello\n\nWorld',
      questions: [{ name: 'name', message: 'Name?', type: 'input', default: 'demo' }],
      changes: { '2.0.0': '- Next.', '1.1.0': '- Faster.', '1.0.0': '- First.' },
      of: '1.1.0|2.0.0|3',
    });
  });

  it('says which archive it could not read and writes the file without page text; a fresh build reuses what it finds, opening no archive', async () => {
    const outDir = await tempDir();
    let reads = 0;
    const good = await tgzOf({ 'README.md': 'hi' });
    const counted = (bytes: Buffer) => () => {
      reads++;
      return archiveReader(bytes)();
    };
    const versions = [version('ok', '1.0.0', {}, { readArchive: counted(good) }), version('broken', '1.0.0', {}, { readArchive: counted(Buffer.from('not a gzip tar')) })];
    const first = await buildRegistry(memorySource(versions), { outDir, now: NOW });
    expect(first.notices).toEqual([expect.stringMatching(/^the catalog page of broken shows no README: the archive of broken@1\.0\.0 could not be read \(not a gzip-compressed tar archive/)]);
    expect((await readFileJson(outDir, 'broken')).page).toEqual({ version: '1.0.0', of: '1.0.0|1.0.0|1' });
    expect((await readFileJson(outDir, 'ok')).page).toMatchObject({ version: '1.0.0', readme: 'hi' });
    expect(reads).toBe(2);

    // A builder in a fresh process (build-registry in CI) finds the page text in the output: no archive read again.
    const second = await buildRegistry(memorySource(versions), { outDir, now: NOW });
    expect(reads).toBe(2);
    expect(second.notices).toBeUndefined();
    expect(second.written.filter((name) => name.startsWith('templates/'))).toEqual([]);
    expect((await readFileJson(outDir, 'ok')).page).toMatchObject({ readme: 'hi' });
  });

  it('bounds what it reads of an archive: a huge README is cut and said to be', async () => {
    const huge = await tgzOf({ 'README.md': `# Big\n\n${'x'.repeat(300 * 1024)}` });
    const { outDir } = await build([version('big', '1.0.0', {}, { readArchive: archiveReader(huge) })]);
    const page = (await readFileJson(outDir, 'big')).page as { readme: string; readmeCut?: boolean };
    expect(page.readme.length).toBe(64 * 1024);
    expect(page.readmeCut).toBe(true);
  });
});

describe('escapeHtml and safeUrl', () => {
  it('escapes the five HTML-special characters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });

  it('keeps http(s) and relative URLs and drops other schemes', () => {
    expect(safeUrl('https://x.test/a.tgz')).toBe('https://x.test/a.tgz');
    expect(safeUrl('/templates/a.tgz')).toBe('/templates/a.tgz');
    expect(safeUrl('archives/a/1.0.0.tgz')).toBe('archives/a/1.0.0.tgz');
    expect(safeUrl('javascript:alert(1)')).toBeUndefined();
    expect(safeUrl(' JavaScript:alert(1)')).toBeUndefined();
    expect(safeUrl('data:text/html,<b>')).toBeUndefined();
    expect(safeUrl('')).toBeUndefined();
  });
});
