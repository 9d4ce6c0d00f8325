/**
 * The catalog page in a real browser (a Chromium found by test/helpers/browser.ts, through playwright-core): a registry built
 * by `buildRegistry`, served by a plain static file server under a path prefix, used as a person
 * would: search, filters, sort, the page of one template, the back button, the keyboard.
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';

import { catalogPagePath } from '../../src/core/routes.js';
import type { RegistryDocument } from '../../src/core/schema-types.js';
import { buildRegistry, renderCatalog } from '../../src/registry/index.js';
import { runListQuery, type RawQuery } from '../../src/server/query.js';
import { parseListQuery } from '../helpers/list-query.js';
import { browserTests, focusedOf, launchBrowser, textOf, textsOf, watchProblems, type PageProblems } from '../helpers/browser.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { archiveReader, memorySource, tgzOf, version } from './memory-source.js';

const NOW = new Date('2026-05-01T10:00:00.000Z');
const PREFIX = '/some/prefix/';
const stats = (downloads: number) => ({ stats: { downloads, stars: 0, forks: 0, issues: 0 } });

const HOSTILE_DESCRIPTION = 'Pwned <img src=x onerror="window.__pwned=1"> & <script>window.__pwned=2</script>';
const HOSTILE_TAG = '<b>bold</b>';
const HOSTILE_FEATURE = '"><svg onload=window.__pwned=5>';

const FILLERS = Array.from({ length: 50 }, (_, i) => `filler-${String(i + 1).padStart(2, '0')}`);

const VERSIONS = [
  version('node-api', '1.0.0', { keywords: ['node', 'rest'], features: ['auth'] }, { createdAt: '2026-01-02T03:04:05.000Z', ...stats(100) }),
  version('node-api', '1.9.0', { keywords: ['node', 'rest'], features: ['auth'] }, { createdAt: '2026-02-01T00:00:00.000Z', ...stats(100) }),
  version(
    'node-api',
    '1.10.0',
    { keywords: ['node', 'rest'], features: ['auth', 'tests'], description: 'A Node.js REST API with auth', methodologyVersion: '>=1.2 <2', dependencies: { node: '>=20' }, license: 'MIT' },
    {
      createdAt: '2026-04-28T10:00:00.000Z',
      repositoryUrl: 'https://github.com/acme/node-api',
      ...stats(300),
      attestation: {
        url: 'https://registry.example.com/templates/node-api/versions/1.10.0/attestation',
        predicateType: 'https://slsa.dev/provenance/v1',
        signer: { repository: 'acme/node-api', workflow: 'publish.yml', issuer: 'https://token.actions.githubusercontent.com' },
        runUrl: 'https://github.com/acme/node-api/actions/runs/42/attempts/1',
      },
    },
  ),
  version(
    'node-api',
    '2.0.0',
    { stability: 'beta', keywords: ['node', 'rest'], features: ['auth'], compatibility: { breaking: true, deprecated: ['legacyAuth'] } },
    { createdAt: '2026-04-30T22:00:00.000Z', ...stats(5) },
  ),
  version('node-worker', '1.0.0', { keywords: ['node', 'queue'], features: ['tests'], description: 'Background jobs for Node.js' }, { createdAt: '2026-03-01T00:00:00.000Z', ...stats(900) }),
  version(
    'react-app',
    '0.3.0',
    { category: 'frontend', stability: 'experimental', keywords: ['react'], features: ['tests'], description: 'A React single-page app' },
    { createdAt: '2026-04-30T09:00:00.000Z', ...stats(50) },
  ),
  version('mixed-case', '1.0.0', { keywords: ['GraphQL', 'Edge'], description: 'Tabs\tand  double  spaces' }, { createdAt: '2025-12-01T00:00:00.000Z', ...stats(10) }),
  version('legacy-api', '3.0.0', { stability: 'deprecated', keywords: ['node', 'rest'], features: ['auth'] }, { createdAt: '2025-06-01T00:00:00.000Z', ...stats(5000) }),
  version(
    'evil',
    '1.0.0',
    { description: HOSTILE_DESCRIPTION, keywords: [HOSTILE_TAG], features: [HOSTILE_FEATURE], author: { name: '<i>Mallory</i>', url: 'javascript:window.__pwned=6' }, license: '<u>MIT</u>' },
    { downloadUrl: 'javascript:window.__pwned=7', repositoryUrl: 'javascript:window.__pwned=3', documentationUrl: 'https://docs.example.com/?a=1&b="2"' },
  ),
  ...FILLERS.map((id, i) => version(id, '1.0.0', { category: 'desktop', description: `Filler template number ${i + 1}` }, { createdAt: '2025-01-01T00:00:00.000Z' })),
];

let browser: Browser;
let host: FolderServer;
let root = '';
let document: RegistryDocument;

interface Opened {
  context: BrowserContext;
  problems: PageProblems;
  /** Problems this test expects (matched by pattern), left out of the check. */
  expected: RegExp[];
}
const opened: Opened[] = [];

/** The browser, the registry and its server for the file; every page checked for problems after its test. */
function setUpBrowser(): void {
  beforeAll(async () => {
    browser = await launchBrowser();
    root = await mkdtemp(path.join(tmpdir(), 'tr-catalog-browser-'));
    ({ document } = await buildRegistry(memorySource(VERSIONS), { outDir: root, now: () => NOW }));
    host = await serveFolder(root, { prefix: PREFIX });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await host?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  afterEach(async () => {
    for (const { context, problems, expected } of opened.splice(0)) {
      await context.close();
      // No console error, uncaught exception, CSP violation or failed request on any page.
      expect(problems.list.filter((p) => !expected.some((e) => e.test(p)))).toEqual([]);
    }
  });
}

/** Opens the catalog (under the prefix, `suffix` appended) in a fresh context, the clock fixed at NOW; waits until it has loaded. */
async function openCatalog(suffix = '', options: { colorScheme?: 'light' | 'dark'; expected?: RegExp[]; base?: string } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: options.colorScheme ?? 'light', permissions: ['clipboard-read', 'clipboard-write'] });
  const page = await context.newPage();
  opened.push({ context, problems: await watchProblems(page), expected: options.expected ?? [] });
  await page.clock.setFixedTime(NOW);
  await page.goto(`${options.base ?? host.url}${suffix}`);
  await page.locator('#catalog[aria-busy="false"]').waitFor({ state: 'attached' });
  return page;
}

/** The template ids shown, in order ("Show more" pressed until every match is there). */
async function shownIds(page: Page, all = true): Promise<string[]> {
  const more = page.locator('#more');
  while (all && (await more.isVisible())) await more.click();
  return page.locator('#results h3 a').allTextContents();
}

/** The ids `GET /templates` answers for the same query (one per template, the spec's selection). */
function serverIds(raw: RawQuery): string[] {
  const parsed = parseListQuery({ limit: '100', ...raw });
  if (!parsed.ok) throw new Error(`query refused: ${JSON.stringify(parsed.details)}`);
  return runListQuery(document, parsed.query).data.map((entry) => String(entry.id));
}

const hashOf = (page: Page): string => new URL(page.url()).hash;

/** `expect.poll` with room for a machine busy with other tests (the page answers in milliseconds when it is not). */
const poll = <T>(value: () => T | Promise<T>) => expect.poll(value, { timeout: 10_000, interval: 25 });

browserTests('the catalog page in a browser', () => {
  setUpBrowser();

  it('shows the first results under a path prefix, from index.json, without downloading registry.json', async () => {
    const requestsBefore = host.requests.length;
    const page = await openCatalog();
    await poll(() => textOf(page.locator('#count'))).toBe(`${FILLERS.length + 6} templates`);
    expect(await page.locator('#results > li').count()).toBe(50);
    // The spec's listing order: stability, then downloads, then name.
    expect((await shownIds(page, false)).slice(0, 4)).toEqual(['node-worker', 'node-api', 'mixed-case', 'evil']);
    await poll(() => textOf(page.locator('#summary'))).toBe(`${FILLERS.length + 6} templates · updated just now`);
    const card = page.locator('#results > li', { hasText: 'node-api' });
    await poll(() => textOf(card.locator('h3'))).toContain('1.10.0');
    await poll(() => textOf(card)).toContain('A Node.js REST API with auth');
    await poll(() => textOf(card)).toContain('Backend · 505 downloads · updated 3 days ago');
    await poll(() => card.locator('time').getAttribute('title')).toBe('2026-04-28T10:00:00.000Z');

    const requests = host.requests.slice(requestsBefore);
    expect(requests.every((r) => r.startsWith(PREFIX)), requests.join(' ')).toBe(true);
    expect(requests).toContain(`${PREFIX}index.json`);
    expect(requests.some((r) => r.includes('registry.json'))).toBe(false);

    // Ten at a time would be slow to scroll through; the rest come with "Show more".
    await poll(() => textOf(page.locator('#more'))).toBe('Show 6 more (6 not shown)');
    await page.locator('#more').click();
    expect(await page.locator('#results > li').count()).toBe(FILLERS.length + 6);
    await poll(() => page.locator('#more').isHidden()).toBe(true);
  });

  it('narrows the list as one types, with the search rule of the client and the server, and keeps the search in the URL', async () => {
    const page = await openCatalog();
    const search = page.getByLabel('Search');
    for (const query of ['node', 'NODE auth', 'graphql', 'single-page', 'edge  graphql', 'jobs node.js', 'double  spaces', 'tabs\tand', 'filler-0', 'nothing-matches', '']) {
      await search.fill(query);
      expect({ query, shown: (await shownIds(page)).sort() }).toEqual({ query, shown: serverIds({ q: query }).sort() });
    }
    await search.fill('react');
    await poll(() => textOf(page.locator('#count'))).toBe(`1 of ${FILLERS.length + 6} templates`);
    await poll(() => hashOf(page)).toBe('#q=react');
    await search.fill('nothing-matches');
    await poll(() => page.locator('#empty').isVisible()).toBe(true);
    await page.locator('#empty button').click();
    await poll(() => search.inputValue()).toBe('');
    await poll(() => textOf(page.locator('#count'))).toBe(`${FILLERS.length + 6} templates`);
  });

  it('combines category, stability, tag and feature filters, and the back button undoes each', async () => {
    const page = await openCatalog();
    await page.getByLabel('Category').selectOption('backend');
    await poll(() => textOf(page.locator('#count'))).toBe(`5 of ${FILLERS.length + 6} templates`);
    await page.getByLabel('Tag', { exact: true }).selectOption('node');
    await page.getByLabel('Feature', { exact: true }).selectOption('auth');
    await poll(() => shownIds(page)).toEqual(['node-api', 'legacy-api']);
    await poll(() => shownIds(page)).toEqual(serverIds({ category: 'backend', tags: 'node', features: 'auth' }));
    await page.getByLabel('Stability').selectOption('deprecated');
    await poll(() => shownIds(page)).toEqual(['legacy-api']);
    await page.getByLabel('Search').fill('node');
    await poll(() => shownIds(page)).toEqual(['legacy-api']);
    await page.getByLabel('Search').fill('worker');
    await poll(() => page.locator('#empty').isVisible()).toBe(true);
    await poll(() => hashOf(page)).toBe('#q=worker&category=backend&stability=deprecated&tag=node&feature=auth');

    // A view can be linked: the same URL opened anew shows the same list.
    const linked = await openCatalog('#category=backend&tag=node&feature=auth');
    await poll(() => shownIds(linked)).toEqual(['node-api', 'legacy-api']);
    await poll(() => linked.getByLabel('Category').inputValue()).toBe('backend');
    await poll(() => textOf(linked.locator('#chips'))).toContain('tag: node');

    // Back undoes the last filter (typing replaces the entry instead of adding one per key).
    await page.goBack();
    await poll(() => page.getByLabel('Stability').inputValue()).toBe('');
    await poll(() => page.getByLabel('Search').inputValue()).toBe('');
    await poll(() => shownIds(page)).toEqual(['node-api', 'legacy-api']);
    await page.goBack();
    await poll(() => shownIds(page)).toEqual(['node-worker', 'node-api', 'legacy-api']);
    await poll(() => shownIds(page)).toEqual(serverIds({ category: 'backend', tags: 'node' }));
    // A tag chip removes its filter; a tag on a card adds one.
    await page.getByRole('button', { name: 'Remove the tag filter node' }).click();
    await poll(() => textOf(page.locator('#count'))).toBe(`5 of ${FILLERS.length + 6} templates`);
    await page.locator('#results > li', { hasText: 'node-worker' }).getByRole('button', { name: 'queue' }).click();
    await poll(() => shownIds(page)).toEqual(['node-worker']);
    await poll(() => hashOf(page)).toBe('#category=backend&tag=queue');
  });

  it('sorts by popularity, name, last update and downloads', async () => {
    const page = await openCatalog('#category=backend');
    await poll(() => shownIds(page)).toEqual(['node-worker', 'node-api', 'mixed-case', 'evil', 'legacy-api']);
    const sort = page.getByLabel('Sort by');
    await sort.selectOption('name');
    await poll(() => shownIds(page)).toEqual(['evil', 'legacy-api', 'mixed-case', 'node-api', 'node-worker']);
    await sort.selectOption('updated');
    await poll(() => shownIds(page)).toEqual(['node-api', 'node-worker', 'evil', 'mixed-case', 'legacy-api']);
    await sort.selectOption('downloads');
    await poll(() => shownIds(page)).toEqual(['legacy-api', 'node-worker', 'node-api', 'mixed-case', 'evil']);
    await poll(() => hashOf(page)).toBe('#category=backend&sort=downloads');
    await page.goBack();
    await poll(() => sort.inputValue()).toBe('updated');
  });

  it("shows a template's page: every version highest first, dates for people, compatibility and the commands to copy", async () => {
    const page = await openCatalog('#q=node');
    await page.getByRole('link', { name: 'node-api' }).click();
    await poll(() => hashOf(page)).toBe('#t-node-api');
    const detail = page.locator('#detail-view');
    await poll(() => textOf(detail.locator('h2'))).toBe('node-api1.10.0');
    await poll(() => focusedOf(page)).toBe('H2 node-api1.10.0');
    await poll(() => page.title()).toBe('node-api · Template registry');
    await poll(() => textsOf(detail.locator('tbody th'))).toEqual(['2.0.0', '1.10.0latest', '1.9.0', '1.0.0']);
    const row = (v: string) => detail.locator('tbody tr', { has: page.locator('th', { hasText: new RegExp(`^${v.replace(/\./g, '\\.')}`) }) });
    await poll(() => textOf(row('2.0.0'))).toContain('beta');
    await poll(() => textOf(row('2.0.0'))).toContain('breaking');
    await poll(() => textOf(row('2.0.0'))).toContain('deprecated: legacyAuth');
    await poll(() => textOf(row('2.0.0').locator('time'))).toBe('12 hours ago');
    await poll(() => textOf(row('1.10.0').locator('time'))).toBe('3 days ago');
    await poll(() => textOf(row('1.10.0'))).toContain('methodology >=1.2 <2, node >=20');
    await poll(() => textOf(row('1.0.0').locator('time'))).toBe('2 Jan 2026');
    await poll(() => row('1.0.0').locator('time').getAttribute('title')).toBe('2026-01-02T03:04:05.000Z');
    await poll(() => row('1.0.0').getByRole('link', { name: 'Download' }).getAttribute('href')).toBe('https://registry.example.com/templates/node-api/versions/1.0.0/archive');
    await poll(() => textOf(detail.locator('dl').first())).toContain('Repositoryhttps://github.com/acme/node-api');
    // Who built the latest version, linking to the run its provenance names.
    await poll(() => textOf(detail.locator('dl').first())).toContain('Provenancebuilt by acme/node-api @ publish.yml');
    await poll(() => detail.getByRole('link', { name: 'built by acme/node-api @ publish.yml' }).getAttribute('href')).toBe('https://github.com/acme/node-api/actions/runs/42/attempts/1');
    await poll(() => textOf(detail.locator('dl').first())).toContain('Downloads505 (all versions)');
    await poll(() => textOf(detail.locator('dl').nth(1))).toContain('Methodology>=1.2 <2');
    await poll(() => textOf(detail.locator('dl').nth(1))).toContain('Node.js>=20');
    await poll(() => textOf(detail.locator('dl').nth(1))).toContain('Breaking changesno');

    const registryUrl = `${host.url}registry.json`;
    await poll(() => textsOf(detail.locator('.command code'))).toEqual([`export TEMPLATE_REGISTRY_URL=${registryUrl}`, 'template-registry create node-api']);
    await detail.getByRole('button', { name: 'Copy the create command' }).click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe('template-registry create node-api');
    await poll(() => textOf(detail.getByRole('button', { name: 'Copy the create command' }))).toBe('Copied');
    expect(host.requests).toContain(`${PREFIX}templates/node-api.json`);

    // Back to the list as it was, focus on the template just seen.
    await detail.getByRole('link', { name: '← All templates' }).click();
    await poll(() => hashOf(page)).toBe('#q=node');
    await poll(() => page.getByLabel('Search').inputValue()).toBe('node');
    await poll(() => focusedOf(page)).toBe('A node-api');
    await poll(() => page.title()).toBe('Template registry');
    await poll(() => textOf(page.locator('#use-cli code'))).toBe(`TEMPLATE_REGISTRY_URL=${registryUrl} template-registry list`);
  });

  it('opens the page of a template from a link (what documentationUrl points at) and says when there is none', async () => {
    const page = await openCatalog(catalogPagePath('node-worker'));
    await poll(() => textOf(page.locator('#detail-view h2'))).toBe('node-worker1.0.0');
    await poll(() => page.locator('#detail-view tbody tr').count()).toBe(1);
    await page.getByRole('link', { name: '← All templates' }).click();
    await poll(() => page.locator('#results > li').count()).toBe(50);

    const missing = await openCatalog('#t-no-such-template');
    await poll(() => textOf(missing.locator('#detail-view h2'))).toBe('Template not found');
    await poll(() => textOf(missing.locator('#detail-view'))).toContain('This registry has no template "no-such-template".');
  });

  it("draws nothing late when one leaves a template's page before its versions have loaded", async () => {
    const page = await openCatalog('#q=node');
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = false;
    await page.route('**/templates/node-api.json', async (route) => {
      asked = true;
      await held;
      await route.continue();
    });
    await page.getByRole('link', { name: 'node-api' }).click();
    await poll(() => asked).toBe(true);
    await poll(() => textOf(page.locator('#detail-view [role="status"]'))).toBe('Loading the versions…');
    await page.goBack();
    await poll(() => page.locator('#list-view').isVisible()).toBe(true);
    const responded = page.waitForResponse('**/templates/node-api.json');
    release();
    await (await responded).finished();
    // The page handles the body in a later task: one more task and a frame give it the chance to draw (wrongly).
    await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))');
    await poll(() => page.locator('#detail-view').isHidden()).toBe(true);
    expect(await page.locator('#detail-view *').count()).toBe(0);
    await poll(() => shownIds(page)).toEqual(serverIds({ q: 'node' }));
  });

  it("shows strangers' strings as text and never runs them", async () => {
    const page = await openCatalog('#q=pwned');
    const card = page.locator('#results > li');
    await poll(() => card.count()).toBe(1);
    await poll(() => textOf(card.locator('p').first())).toBe(HOSTILE_DESCRIPTION);
    await poll(() => card.getByRole('button', { name: HOSTILE_TAG }).isVisible()).toBe(true);
    await poll(() => card.getByRole('button', { name: HOSTILE_FEATURE }).isVisible()).toBe(true);
    await card.getByRole('link', { name: 'evil' }).click();
    const detail = page.locator('#detail-view');
    await poll(() => textOf(detail.locator('p').nth(1))).toBe(HOSTILE_DESCRIPTION);
    await poll(() => textOf(detail.locator('dl').first())).toContain('Author<i>Mallory</i>');
    await poll(() => textOf(detail.locator('dl').first())).toContain('License<u>MIT</u>');
    await poll(() => textOf(detail.locator('dl').first())).not.toContain('Repository');
    await poll(() => detail.getByRole('link', { name: 'https://docs.example.com/?a=1&b="2"' }).getAttribute('href')).toBe('https://docs.example.com/?a=1&b=%222%22');
    await poll(() => textOf(detail.locator('tbody td').last())).toBe('—');
    // Nothing of theirs became an element, a link to a script, or ran.
    expect(await page.locator('#catalog img, #catalog svg, #catalog script, #catalog b, #catalog i, #catalog u').count()).toBe(0);
    const hrefs = await page.evaluate<string[]>("Array.from(document.querySelectorAll('a[href]'), (a) => a.getAttribute('href'))");
    expect(hrefs.length).toBeGreaterThan(2);
    expect(hrefs.filter((href) => /^\s*javascript:/i.test(href))).toEqual([]);
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
  });

  it('runs no script but its own: its Content-Security-Policy blocks one injected into it', async () => {
    const page = await openCatalog('', { expected: [/Content Security Policy/, /CSP violation: (script-src|img-src)/, /request failed: \S+\/x csp/] });
    await page.evaluate(
      "(() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1'; document.body.appendChild(s); document.body.insertAdjacentHTML('beforeend', '<img src=x onerror=\"window.__ran = 2\">'); })()",
    );
    await poll(() => opened[0]?.problems.list.filter((p) => p.startsWith('CSP violation: script-src')).length).toBeGreaterThanOrEqual(2);
    expect(await page.evaluate('typeof window.__ran')).toBe('undefined');
  });

  it('is usable from the keyboard, with a label on every control', async () => {
    const page = await openCatalog();
    for (const label of ['Search', 'Category', 'Stability', 'Sort by']) await poll(() => page.getByLabel(label, { exact: true }).isVisible()).toBe(true);
    await page.keyboard.press('Tab');
    await poll(() => focusedOf(page)).toBe('A registry.json');
    await page.keyboard.press('Tab');
    await poll(() => focusedOf(page)).toBe('INPUT q');
    await page.keyboard.type('react');
    await poll(() => shownIds(page)).toEqual(['react-app']);
    // From the search box: the four filters, "Clear all filters", the sort, then the card's link.
    for (let i = 0; i < 7; i++) await page.keyboard.press('Tab');
    await poll(() => focusedOf(page)).toBe('A react-app');
    await page.keyboard.press('Enter');
    await poll(() => focusedOf(page)).toBe('H2 react-app0.3.0experimental');
    await poll(() => textOf(page.locator('#detail-view h2'))).toBe('react-app0.3.0experimental');
    await page.goBack();
    await poll(() => focusedOf(page)).toBe('A react-app');
  });

  it('follows the light or dark setting of the system', async () => {
    const light = await openCatalog('', { colorScheme: 'light' });
    const dark = await openCatalog('', { colorScheme: 'dark' });
    const background = (page: Page) => page.evaluate('getComputedStyle(document.body).backgroundColor');
    expect(await background(light)).toBe('rgb(255, 255, 255)');
    expect(await background(dark)).toBe('rgb(13, 17, 23)');
  });

  it("says what is wrong when index.json or a template's file cannot be loaded", async () => {
    const bare = await mkdtemp(path.join(tmpdir(), 'tr-catalog-bare-'));
    try {
      await writeFile(path.join(bare, 'index.html'), renderCatalog(document, {}));
      const server = await serveFolder(bare, { prefix: PREFIX });
      try {
        const page = await openCatalog('', { base: server.url, expected: [/404/] });
        await poll(() => textOf(page.locator('#count'))).toBe('Could not load the list of templates (HTTP 404 for index.json). The whole registry is in registry.json.');
        await poll(() => page.getByRole('link', { name: 'The whole registry is in registry.json.' }).getAttribute('href')).toBe(`${server.url}registry.json`);

        // With the index but not the template's file, the template's page says so.
        await copyFile(path.join(root, 'index.json'), path.join(bare, 'index.json'));
        const detail = await openCatalog('#t-node-api', { base: server.url, expected: [/404/] });
        await poll(() => textOf(detail.locator('#detail-view h2'))).toBe('node-api1.10.0');
        await expect
          .poll(() => textOf(detail.locator('#detail-view .error')))
          .toBe(`Could not load the versions of node-api: HTTP 404 for ${server.url}templates/node-api.json`);
      } finally {
        await server.close();
      }
    } finally {
      await rm(bare, { recursive: true, force: true });
    }
  });
});

// ---- what a template's page shows from its archive: README, questions, change log; only its own runtimes
const HOSTILE_README = [
  '# Py CLI',
  '',
  'A **bold** claim, a [good link](https://example.com/docs) and a [bad link](javascript:window.__pwned=10).',
  '',
  '<script>window.__pwned=11</script>',
  '',
  '<img src=x onerror="window.__pwned=12">',
  '',
  '![picture](javascript:window.__pwned=13)',
  '',
  '<a href="javascript:window.__pwned=14" onclick="window.__pwned=15">raw link</a> and [data link](data:text/html,<b>x</b>)',
  '',
  '- one',
  '- two',
].join('\n');

const PY_CHANGELOG_1_1 = ['# Changelog', '', '## [1.1.0] - 2026-03-01', '', '- Added the `--json` flag.', '', '## [1.0.0] - 2026-01-01', '', '- First release.', ''].join('\n');
const PY_CHANGELOG_2_0 = ['# Changelog', '', '## [2.0.0] - 2026-04-01', '', '- Dropped Python 3.9.', '', PY_CHANGELOG_1_1.split('\n').slice(2).join('\n')].join('\n');
const PY_PROMPTS = JSON.stringify({
  prompts: [
    { name: 'projectName', message: 'Project name?', type: 'input' },
    { name: 'db', message: 'Which database?', type: 'select', choices: [{ name: 'PostgreSQL', value: 'pg' }, { name: 'SQLite', value: 'sqlite' }] },
    { name: 'token', message: 'API token?', type: 'input' },
  ],
});
const PY_VARIABLES = JSON.stringify({
  variables: {
    projectName: { type: 'string', default: 'my-cli', description: 'The folder and package name' },
    db: { type: 'string', default: 'pg' },
    token: { type: 'string', default: 'sk-secret-default', secret: true },
  },
});

browserTests("a template's page in a browser: what its archive says, and only the runtimes it declares", () => {
  setUpBrowser();
  let pageRoot = '';
  let pageHost: FolderServer;

  beforeAll(async () => {
    pageRoot = await mkdtemp(path.join(tmpdir(), 'tr-catalog-page-'));
    const python = { dependencies: { python: '>=3.10' }, keywords: ['python', 'cli'], description: 'A Python command-line tool' };
    const older = await tgzOf({ 'template.json': '{}', 'README.md': '# old', 'CHANGELOG.md': PY_CHANGELOG_1_1.split('## [1.1.0]')[0] + PY_CHANGELOG_1_1.split('\n').slice(7).join('\n') });
    const presented = await tgzOf({ 'template.json': '{}', 'README.md': HOSTILE_README, 'CHANGELOG.md': PY_CHANGELOG_1_1, 'template.prompts.json': PY_PROMPTS, 'template.vars.json': PY_VARIABLES }, 'package/');
    const beta = await tgzOf({ 'template.json': '{}', 'README.md': '# beta', 'CHANGELOG.md': PY_CHANGELOG_2_0 });
    await buildRegistry(
      memorySource([
        version('py-cli', '1.0.0', python, { createdAt: '2026-01-01T00:00:00.000Z', readArchive: archiveReader(older) }),
        version('py-cli', '1.1.0', python, { createdAt: '2026-03-01T00:00:00.000Z', readArchive: archiveReader(presented) }),
        version('py-cli', '2.0.0', { ...python, stability: 'beta' }, { createdAt: '2026-04-01T00:00:00.000Z', readArchive: archiveReader(beta) }),
        version('node-tool', '1.0.0', { dependencies: { node: '>=20' } }),
      ]),
      { outDir: pageRoot, now: () => NOW },
    );
    pageHost = await serveFolder(pageRoot, { prefix: PREFIX });
  }, 60_000);

  afterAll(async () => {
    await pageHost?.close();
    if (pageRoot) await rm(pageRoot, { recursive: true, force: true });
  });

  it('shows the README rendered, with nothing of it run: no script, no event handler, no javascript: or data: link', async () => {
    const page = await openCatalog('#t-py-cli', { base: pageHost.url });
    const readme = page.locator('#detail-view .readme');
    await poll(() => textOf(readme)).toContain('Py CLI');
    await poll(() => readme.locator('strong').allTextContents()).toEqual(['bold']);
    await poll(() => readme.getByRole('link', { name: 'good link' }).getAttribute('href')).toBe('https://example.com/docs');
    expect(await readme.locator('li').allTextContents()).toEqual(['one', 'two']);
    // The hostile parts are at most text: no element of theirs, no handler, no link that runs code.
    expect(await page.locator('#detail-view script, #detail-view img, #detail-view iframe, #detail-view svg').count()).toBe(0);
    const attributes = await page.evaluate<string[]>("Array.from(document.querySelectorAll('#detail-view *')).flatMap((e) => Array.from(e.attributes, (a) => a.name + '=' + a.value))");
    expect(attributes.filter((a) => /^on/i.test(a))).toEqual([]);
    expect(attributes.filter((a) => /^(href|src)=\s*(javascript|data|vbscript):/i.test(a))).toEqual([]);
    expect(await readme.getByRole('link', { name: 'bad link' }).count()).toBe(0);
    expect(await readme.getByRole('link', { name: 'data link' }).count()).toBe(0);
    await poll(() => textOf(readme)).toContain('bad link');
    expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
  });

  it('shows the questions create asks, with their defaults (never a secret one)', async () => {
    const page = await openCatalog('#t-py-cli', { base: pageHost.url });
    const questions = page.locator('#detail-view table.questions tbody tr');
    await poll(() => textsOf(questions)).toEqual([
      'Project name?The folder and package nameprojectNametextmy-cli',
      'Which database?dbone of: PostgreSQL, SQLitepg',
      'API token?tokentext—',
    ]);
    await poll(() => textOf(page.locator('#detail-view'))).toContain('The 3 questions create asks');
    expect(await textOf(page.locator('#detail-view'))).not.toContain('sk-secret-default');
  });

  it("shows each version's change log section, the versions above the presented one from their own change log", async () => {
    const page = await openCatalog('#t-py-cli', { base: pageHost.url });
    const detail = page.locator('#detail-view');
    await poll(() => textsOf(detail.locator('table:not(.questions) tbody th'))).toEqual(['2.0.0', '1.1.0latest', '1.0.0']);
    const changes = (v: string) => detail.locator('table:not(.questions) tbody tr', { has: page.locator('th', { hasText: new RegExp(`^${v.replace(/\./g, '\\.')}`) }) }).locator('td').nth(3);
    await poll(() => textOf(changes('2.0.0'))).toBe('Change logDropped Python 3.9.');
    await poll(() => textOf(changes('1.1.0'))).toBe('Change logAdded the --json flag.');
    await poll(() => textOf(changes('1.0.0'))).toBe('Change logFirst release.');
    await changes('1.1.0').locator('summary').click();
    await poll(() => changes('1.1.0').locator('code').textContent()).toBe('--json');
  });

  it('shows only the runtimes a template declares: a Python template names Python, not Node.js', async () => {
    const page = await openCatalog('#t-py-cli', { base: pageHost.url });
    const detail = page.locator('#detail-view');
    const compatibility = detail.locator('dl').nth(1);
    await poll(() => textOf(compatibility)).toContain('python>=3.10');
    expect(await textOf(compatibility)).not.toMatch(/Node\.js|Methodology/);
    await poll(() => textOf(detail.locator('table:not(.questions) tbody tr').nth(1).locator('td').nth(2))).toBe('python >=3.10');
    expect(await textOf(detail)).not.toContain('Node.js');

    const node = await openCatalog('#t-node-tool', { base: pageHost.url });
    await poll(() => textOf(node.locator('#detail-view dl').nth(1))).toContain('Node.js>=20');
    // No README, questions or change log in its archive (none to read): the page says nothing of them.
    expect(await node.locator('#detail-view .readme, #detail-view table.questions').count()).toBe(0);
    await poll(() => textOf(node.locator('#detail-view tbody tr td').nth(3))).toBe('—');
  });
});
