import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { buildRegistry, escapeHtml, renderCatalog, safeUrl } from '../../src/registry/index.js';
import { parseListQuery, runListQuery } from '../../src/server/query.js';
import { tempDir } from '../helpers/fixtures.js';
import { memorySource, version } from './memory-source.js';

const NOW = () => new Date('2026-05-01T10:00:00.000Z');

async function catalogOf(versions: Parameters<typeof memorySource>[0], publicUrl?: string): Promise<string> {
  const outDir = await tempDir();
  await buildRegistry(memorySource(versions), { outDir, now: NOW, ...(publicUrl ? { publicUrl } : {}) });
  return readFile(path.join(outDir, 'index.html'), 'utf8');
}

/** The text of the <li class="card"> of a template id. */
function cardOf(html: string, id: string): string {
  const start = html.indexOf(`<li class="card" id="t-${id}"`);
  expect(start, `card of ${id}`).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</li>\n', start));
}

describe('the catalog page', () => {
  it('lists every template once, with name, latest version, description, tags and download link', async () => {
    const html = await catalogOf([
      version('node-service', '1.0.0', { keywords: ['node', 'api'] }),
      version('node-service', '1.10.0', { keywords: ['node', 'api'], description: 'A Node.js service with tests' }),
      version('node-service', '2.0.0', { stability: 'beta' }),
      version('react-app', '0.3.0', { category: 'frontend', stability: 'experimental' }),
    ]);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const card = cardOf(html, 'node-service');
    expect(card).toContain('node-service');
    expect(card).toContain('1.10.0');
    expect(card).not.toContain('2.0.0');
    expect(card).toContain('A Node.js service with tests');
    expect(card).toContain('<li>node</li><li>api</li>');
    expect(card).toContain('href="https://registry.example.com/templates/node-service/versions/1.10.0/archive"');
    expect(cardOf(html, 'react-app')).toContain('experimental');
    expect(html.match(/<li class="card"/g)).toHaveLength(2);
  });

  it('groups by category, with a category filter and a search box that work without any external resource', async () => {
    const html = await catalogOf([version('api', '1.0.0'), version('web', '1.0.0', { category: 'frontend' })]);
    expect(html).toMatch(/<section data-category="frontend"[\s\S]*<section data-category="backend"/);
    expect(html).not.toContain('data-category="mobile"');
    expect(html).toContain('<option value="frontend">Frontend (1)</option>');
    expect(html).toMatch(/<input id="q" type="search"/);
    expect(html).toMatch(/<script>[\s\S]*addEventListener\('input'/);
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/);
    expect(html).not.toMatch(/https?:\/\/(?!registry\.example\.com)/);
    // The CSP allows exactly the inline style and script, by hash.
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '';
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? '';
    const csp = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html)?.[1] ?? '';
    expect(csp).toContain(`script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`.replace(/'/g, '&#39;'));
    expect(csp).toContain(`style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'`.replace(/'/g, '&#39;'));
    expect(csp).toContain('default-src &#39;none&#39;');
  });

  it('orders the cards of a category as the spec lists templates: stability, downloads, name', async () => {
    const stats = (downloads: number) => ({ stats: { downloads, stars: 0, forks: 0, issues: 0 } });
    const html = await catalogOf([
      version('b-beta', '1.0.0', { stability: 'beta' }, stats(1000)),
      version('c-stable', '1.0.0', {}, stats(5)),
      version('a-stable', '1.0.0', {}, stats(5)),
      version('d-stable', '1.0.0', {}, stats(50)),
      version('e-old', '1.0.0', { stability: 'deprecated' }, stats(9999)),
    ]);
    const order = [...html.matchAll(/<li class="card" id="t-([^"]+)"/g)].map((m) => m[1]);
    expect(order).toEqual(['d-stable', 'a-stable', 'c-stable', 'b-beta', 'e-old']);
  });

  it('escapes every string taken from manifests', async () => {
    const evil = '<script>alert("x")</script>';
    const html = await catalogOf([
      version(
        'evil',
        '1.0.0',
        {
          description: `Pwned ${evil} & more`,
          keywords: ['<img src=x onerror=alert(1)>', '" onmouseover="alert(1)'],
          features: ['"><b>'],
          author: { name: '<b>Mallory</b>' },
          license: '<i>MIT</i>',
        },
        { downloadUrl: 'javascript:alert(1)', documentationUrl: 'https://docs.example.com/?a=1&b="2"' },
      ),
    ]);
    const card = cardOf(html, 'evil');
    expect(card).toContain('Pwned &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more');
    expect(card).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(card).toContain('&lt;b&gt;Mallory&lt;/b&gt;');
    expect(card).not.toContain('<img');
    expect(card).not.toContain('<b>');
    expect(card).not.toContain('" onmouseover');
    expect(card).not.toContain('javascript:');
    expect(card).toContain('href="https://docs.example.com/?a=1&amp;b=&quot;2&quot;"');
    // The only script element is the page's own.
    expect(html.match(/<script>/g)).toHaveLength(1);
    expect(html.match(/<script/g)).toHaveLength(1);
  });

  it('links to the public registry.json when a public URL is given', async () => {
    expect(await catalogOf([version('a', '1.0.0')], 'https://acme.github.io/registry/')).toContain('href="https://acme.github.io/registry/registry.json"');
    expect(await catalogOf([version('a', '1.0.0')])).toContain('href="registry.json"');
  });

  it('is the same for the same document', async () => {
    const document = (await buildRegistry(memorySource([version('a', '1.0.0')]), { outDir: await tempDir(), now: NOW })).document;
    expect(renderCatalog(document)).toBe(renderCatalog(structuredClone(document)));
  });
});

interface FakeElement {
  hidden: boolean;
  value: string;
  textContent: string;
  attributes: Record<string, string>;
  children: FakeElement[];
  listeners: Record<string, () => void>;
  getAttribute(name: string): string | null;
  querySelectorAll(selector: string): FakeElement[];
  addEventListener(type: string, listener: () => void): void;
}

function element(attributes: Record<string, string> = {}, children: FakeElement[] = []): FakeElement {
  return {
    hidden: false,
    value: '',
    textContent: '',
    attributes,
    children,
    listeners: {},
    getAttribute: (name) => attributes[name] ?? null,
    querySelectorAll: () => children,
    addEventListener(type, listener) {
      this.listeners[type] = listener;
    },
  };
}

const unescape = (text: string): string =>
  text.replace(/&(lt|gt|quot|#39|amp);/g, (_m, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e] ?? '');

/** Runs the page's inline script against a fake DOM made of its sections and cards. */
function loadPage(html: string) {
  const sections = [...html.matchAll(/<section data-category="([^"]+)"[\s\S]*?<\/section>/g)].map((m) => {
    const cards = [...m[0].matchAll(/<li class="card" id="t-([^"]+)" data-search="([^"]*)"/g)].map((c) =>
      element({ id: c[1] ?? '', 'data-search': unescape(c[2] ?? '') }),
    );
    return element({ 'data-category': m[1] ?? '' }, cards);
  });
  const cards = sections.flatMap((s) => s.children);
  const byId: Record<string, FakeElement> = { q: element(), category: element(), count: element(), empty: element() };
  const document = {
    getElementById: (id: string) => byId[id],
    querySelectorAll: (selector: string) => (selector.startsWith('section') ? sections : cards),
  };
  runInNewContext(/<script>([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '', { document });
  const visible = () => cards.filter((c) => !c.hidden).map((c) => c.attributes.id);
  return {
    visible,
    sections,
    count: () => byId.count!.textContent,
    empty: () => !byId.empty!.hidden,
    search(text: string) {
      byId.q!.value = text;
      byId.q!.listeners.input!();
    },
    pick(category: string) {
      byId.category!.value = category;
      byId.category!.listeners.change!();
    },
  };
}

describe('the catalog page script', () => {
  it('filters the cards by every search term and by category, client-side', async () => {
    const html = await catalogOf([
      version('node-api', '1.0.0', { keywords: ['node', 'rest'], features: ['auth'] }),
      version('node-worker', '1.0.0', { keywords: ['node', 'queue'] }),
      version('react-app', '1.0.0', { category: 'frontend', keywords: ['react'], description: 'A React single-page app' }),
    ]);
    const page = loadPage(html);
    expect(page.visible().sort()).toEqual(['node-api', 'node-worker', 'react-app']);
    expect(page.count()).toBe('3 templates');

    page.search('NODE auth');
    expect(page.visible()).toEqual(['node-api']);
    expect(page.count()).toBe('1 of 3 templates');
    expect(page.sections.find((s) => s.attributes['data-category'] === 'frontend')?.hidden).toBe(true);

    page.search('single-page');
    expect(page.visible()).toEqual(['react-app']);

    page.search('node');
    page.pick('frontend');
    expect(page.visible()).toEqual([]);
    expect(page.empty()).toBe(true);

    page.search('');
    expect(page.visible()).toEqual(['react-app']);
    page.pick('');
    expect(page.visible()).toHaveLength(3);
    expect(page.empty()).toBe(false);
  });
});

describe('one search rule for the page, the client and the server', () => {
  it('finds the same templates for the same query in the catalog page, RegistryClient and GET /templates', async () => {
    const versions = [
      version('node-api', '1.0.0', { keywords: ['node', 'rest'], features: ['auth'] }),
      version('node-api', '2.0.0', { keywords: ['node', 'rest', 'graphql'], features: ['auth', 'api'] }),
      version('node-worker', '1.0.0', { keywords: ['node', 'queue'], description: 'Background jobs for Node.js' }),
      version('react-app', '1.0.0', { category: 'frontend', keywords: ['react'], description: 'A React single-page app' }),
      version('mixed-case', '1.0.0', { keywords: ['GraphQL', 'Edge'], description: 'Tabs\tand  double  spaces' }),
    ];
    const outDir = await tempDir();
    const { document } = await buildRegistry(memorySource(versions), { outDir, now: NOW });
    const page = loadPage(await readFile(path.join(outDir, 'index.html'), 'utf8'));
    const client = new RegistryClient({ registryUrl: 'https://registry.invalid/registry.json', fetch: () => Promise.resolve(new Response(JSON.stringify(document))) });
    for (const query of ['node', 'NODE auth', 'graphql', 'single-page', 'edge  graphql', 'jobs node.js', 'double  spaces', 'tabs\tand', 'nothing-matches', '']) {
      page.search(query);
      const shown = page.visible().sort();
      const fromClient = [...new Set((await client.search(query)).map((e) => e.id))].sort();
      const parsed = parseListQuery({ q: query, limit: '100' });
      if (!parsed.ok) throw new Error('query refused');
      const fromServer = runListQuery(document, parsed.query).data.map((e) => e.id ?? '').sort();
      // The page and the server list the latest version of each template, the client every version.
      expect({ query, shown }).toEqual({ query, shown: fromServer });
      expect({ query, fromClient }).toEqual({ query, fromClient: fromClient.filter((id) => fromServer.includes(id)) });
      expect(fromClient, query).toEqual(expect.arrayContaining(fromServer));
    }
  });
});

describe('escapeHtml and safeUrl', () => {
  it('escapes the five HTML-special characters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });

  it('keeps http(s) and relative URLs and drops other schemes', () => {
    expect(safeUrl('https://x.test/a.tgz')).toBe('https://x.test/a.tgz');
    expect(safeUrl('/templates/a.tgz')).toBe('/templates/a.tgz');
    expect(safeUrl('javascript:alert(1)')).toBeUndefined();
    expect(safeUrl(' JavaScript:alert(1)')).toBeUndefined();
    expect(safeUrl('data:text/html,<b>')).toBeUndefined();
    expect(safeUrl('')).toBeUndefined();
  });
});
