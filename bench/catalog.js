#!/usr/bin/env node
// The catalog page in a real browser (Debian's chromium through playwright-core) on a registry of
// 10,000 templates x 10 versions, built with the compiled generator and served on 127.0.0.1 under
// a path prefix the way a static host serves it (index.json gzip-encoded from its .gz variant).
// Figures, each beside its floor measured in the same run, the same way (fresh browser context,
// the same probe), interleaved with it: a bare page (bench-only floor.html) that fetches and parses
// index.json and answers a keystroke with one pass of the search rule and a one-line count.
// - first results: navigation start -> the first 50 cards are in the DOM and the next frame has
//   run (painted), median of fresh page loads; floor: index.json fetched and parsed, next frame;
// - keystroke: keydown in the search box -> the results are in the DOM and the next frame has run,
//   median over the keystrokes of typing and erasing a few queries; floor: the bare search.
// Prints one JSON document (see bench/README.md). Needs `npm run build` (imports build/) and
// /usr/bin/chromium. BENCH_QUICK=1: 1,000 templates x 2 versions, fewer runs.
/* global window, performance -- the page functions run in the browser */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';

import { chromium } from 'playwright-core';

import { buildRegistry } from '../build/src/registry/index.js';
import { columnsToLines } from '../build/src/core/registry-index.js';
import * as search from '../build/src/core/search.js';
import { prng } from './fixtures/prng.js';
import { serveFolder } from './fixtures/static-host.js';

const QUICK = process.env.BENCH_QUICK === '1';
const TEMPLATES = QUICK ? 1_000 : 10_000;
const VERSIONS = QUICK ? 2 : 10;
const LOADS = QUICK ? 5 : 9;
const QUERIES = QUICK ? ['react', 'node api'] : ['react', 'node api', 'graphql worker', 'docker'];
// Issue 26 item 6: the first results within 150 ms (drawn into the page at build time), a keystroke within 50 ms.
const FIRST_TARGET_MS = 150;
const KEY_TARGET_MS = 50;
const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];
const PREFIX = '/mirror/acme/';

const started = performance.now();
/** Progress on stderr (stdout carries only the JSON document). */
const progress = (what) => process.stderr.write(`[catalog ${((performance.now() - started) / 1000).toFixed(1)} s] ${what}\n`);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (value) => (value >= 100 ? Math.round(value) : Math.round(value * 10) / 10);

const WORDS = 'api service node react vue svelte graphql rest grpc docker kubernetes lambda worker queue cli desktop mobile auth oauth postgres mysql sqlite redis kafka typescript python go rust testing lint monorepo static site blog shop dashboard admin chat realtime websocket cache search analytics payments email'.split(' ');
const CATEGORIES = ['frontend', 'backend', 'fullstack', 'mobile', 'desktop'];
const STABILITIES = ['stable', 'stable', 'stable', 'beta', 'experimental', 'deprecated'];
const FEATURES = ['auth', 'database', 'api', 'testing', 'docker', 'i18n', 'payments', 'ci'];

/** TEMPLATES x VERSIONS published versions with varied manifests (fixed seed). */
function syntheticVersions() {
  const random = prng(7);
  const pick = (list, count) => {
    const chosen = new Set();
    while (chosen.size < count) chosen.add(list[Math.floor(random() * list.length)]);
    return [...chosen];
  };
  const base = Date.UTC(2025, 0, 1);
  const versions = [];
  for (let t = 0; t < TEMPLATES; t++) {
    const words = pick(WORDS, 4);
    const name = `${words[0]}-${words[1]}-${t}`;
    const keywords = [...pick(WORDS, 2 + Math.floor(random() * 3)), `topic-${Math.floor(random() * 300)}`];
    const features = pick(FEATURES, 1 + Math.floor(random() * 3));
    for (let v = 0; v < VERSIONS; v++) {
      const version = `${1 + Math.floor(v / 4)}.${v % 4}.0`;
      versions.push({
        manifest: {
          name,
          version,
          description: `A ${words[0]} ${words[1]} template with ${words[2]} and ${words[3]}, version ${version}.`,
          category: CATEGORIES[t % CATEGORIES.length],
          stability: STABILITIES[Math.floor(random() * STABILITIES.length)],
          keywords,
          features,
          author: { name: `Author ${Math.floor(random() * 500)}` },
          license: 'MIT',
          methodologyVersion: '>=1.0.0',
          dependencies: { node: random() < 0.5 ? '>=18' : '>=20' },
        },
        downloadUrl: `archives/${name}/${version}.tgz`,
        createdAt: new Date(base + (t * VERSIONS + v) * 60_000).toISOString(),
        stats: { downloads: Math.floor(random() * 10_000), stars: 0, forks: 0, issues: 0 },
      });
    }
  }
  return versions;
}

// Installed before the page's own script: records when the first results are painted, and the
// time from each keydown in the search box to the next frame after the results changed.
const PROBE = `
window.__probe = { painted: null, keys: [], pending: null };
// The next frame after the mark, asked for the moment the mark is set (a PerformanceObserver is told
// later, when the page is idle, which would count what the page does after its first results).
const mark = performance.mark.bind(performance);
performance.mark = (name, ...rest) => {
  const entry = mark(name, ...rest);
  if (name === 'catalog-first-results') requestAnimationFrame(() => setTimeout(() => { window.__probe.painted = performance.now(); }, 0));
  return entry;
};
addEventListener('keydown', (event) => { if (event.target && event.target.id === 'q') window.__probe.pending = event.timeStamp; }, true);
addEventListener('DOMContentLoaded', () => {
  new MutationObserver(() => {
    const from = window.__probe.pending;
    if (from === null) return;
    window.__probe.pending = null;
    requestAnimationFrame(() => setTimeout(() => { window.__probe.keys.push(performance.now() - from); }, 0));
  }).observe(document.getElementById('results'), { childList: true });
});
`;

// The floor page: the least any page showing this registry must do, measured exactly like the
// catalog (fresh context, same probe). It fetches and parses index.json, marks "first results" with
// nothing rendered, and answers a keystroke with one pass of the search rule over every template
// and a one-line count: no cards, no URL, no filters.
const FLOOR_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>floor</title></head>
<body><input id="q" aria-label="q"><p id="results"></p>
<script>
${Object.values(search).filter((value) => typeof value === 'function').map((fn) => fn.toString()).join('\n')}
${columnsToLines.toString()}
fetch('index.json').then((response) => response.json()).then((index) => {
  performance.mark('catalog-first-results');
  const fields = ['name', 'description', 'tags', 'features', 'category'];
  // index.json as the generator writes it (formatVersion 2, columns) or as lines (formatVersion 1).
  const templates = index.formatVersion === 2 ? columnsToLines(index.columns) : index.templates;
  const texts = templates.map((t) => searchText({ name: t.id, description: t.description, tags: t.tags, features: t.features, category: t.category }, fields));
  const q = document.getElementById('q');
  const results = document.getElementById('results');
  q.addEventListener('input', () => {
    const terms = searchTerms(q.value);
    let found = 0;
    for (const text of texts) if (matchesTerms(text, terms)) found++;
    results.textContent = found + ' templates';
  });
});
</script></body></html>
`;

// The least any page pays for its first frame on this machine at this moment: a blank page that
// marks itself at the end of its body, measured the same way.
const BLANK_PAGE = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>blank</title></head><body><p id="results">blank</p><script>performance.mark("catalog-first-results")</script></body></html>\n';

if (!existsSync(CHROMIUM)) {
  process.stderr.write(`${CHROMIUM} is missing: install it with \`apt-get install -y chromium\`\n`);
  process.exit(1);
}

const dir = await mkdtemp(path.join(tmpdir(), 'bench-catalog-'));
let browser;
let host;
try {
  progress(`building ${TEMPLATES.toLocaleString('en')} templates x ${VERSIONS} versions`);
  const buildStarted = performance.now();
  await buildRegistry({ versions: async () => syntheticVersions() }, { outDir: dir, now: () => new Date(Date.UTC(2026, 0, 1)) });
  const buildSeconds = (performance.now() - buildStarted) / 1000;
  const indexBytes = (await stat(path.join(dir, 'index.json'))).size;
  const indexGzipBytes = (await stat(path.join(dir, 'index.json.gz'))).size;
  host = await serveFolder(dir, PREFIX, { gzipVariants: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });

  await writeFile(path.join(dir, 'floor.html'), FLOOR_PAGE);
  await writeFile(path.join(dir, 'blank.html'), BLANK_PAGE);

  /** One fresh page load of `file`: first results painted, in the DOM, and (with `keys`) every keystroke's time. */
  async function measure(file, keys) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.addInitScript({ content: PROBE });
      await page.goto(`${host.url}${file}`);
      await page.waitForFunction(() => window.__probe.painted !== null);
      if (errors.length > 0) throw new Error(`${file || 'the catalog'} failed: ${errors.join('; ')}`);
      const painted = await page.evaluate(() => window.__probe.painted);
      const dom = await page.evaluate(() => performance.getEntriesByName('catalog-first-results')[0].startTime);
      if (!keys) return { painted, dom, keys: [] };
      await page.waitForTimeout(200); // what start-up left for later (filter options, search texts) is done
      await page.focus('#q');
      for (const query of QUERIES) {
        for (const key of [...query.split(''), ...query.split('').map(() => 'Backspace')]) {
          const before = await page.evaluate(() => window.__probe.keys.length);
          await page.keyboard.press(key === ' ' ? 'Space' : key);
          await page.waitForFunction((count) => window.__probe.keys.length > count, before);
        }
      }
      return { painted, dom, keys: await page.evaluate(() => window.__probe.keys) };
    } finally {
      await context.close();
    }
  }

  // Interleaved, so a slow moment of the machine hits the catalog and its floor alike; keystrokes
  // on the last loads only (the first ones warm the machine up).
  const catalog = { painted: [], dom: [], keys: [] };
  const floor = { painted: [], dom: [], keys: [] };
  const blank = { painted: [], dom: [], keys: [] };
  for (let run = 0; run < LOADS; run++) {
    progress(`page load ${run + 1}/${LOADS}`);
    const keys = run >= LOADS - 3;
    for (const [file, into] of [['', catalog], ['floor.html', floor], ['blank.html', blank]]) {
      const result = await measure(file, keys && into !== blank);
      into.painted.push(result.painted);
      into.dom.push(result.dom);
      into.keys.push(...result.keys);
    }
  }
  const firstResults = catalog.painted;
  const domReady = catalog.dom;
  const keystrokes = catalog.keys;

  const first = median(firstResults);
  const keystroke = median(keystrokes);
  const floorFirst = median(floor.painted);
  const floorKey = median(floor.keys);
  const blankFirst = median(blank.painted);
  const ratio = (value, base) => Math.round((value / base) * 100) / 100;
  const notes = [
    `Both targets are absolute (issue 26 item 6: first results <= ${FIRST_TARGET_MS} ms, a keystroke <= ${KEY_TARGET_MS} ms); each floor is what a page showing this registry from index.json alone pays on the same machine at the same moment (getting and parsing index.json; one search pass and a DOM update), so value / floor says what drawing the first page at build time saves and what the catalog's search costs.`,
    `First results: the generator drew the first ${50} cards into index.html, so they are in the DOM ${round(median(domReady))} ms after navigation start (the floor: ${round(median(floor.dom))} ms to index.json parsed), without waiting for index.json; the full index is loaded after, for search, filters and sorts.`,
  ];
  notes.push(`Load average of the machine at the end of the run: ${loadavg()[0].toFixed(1)} on ${cpus().length} cores (other jobs share it: a blank page's first frame alone varies from about 50 to 130 ms under such load).`);
  if (first > FIRST_TARGET_MS) notes.push(`First results miss the ${FIRST_TARGET_MS} ms target: ${round(first)} ms, ${ratio(first, floorFirst)}x the floor of ${round(floorFirst)} ms.`);
  if (keystroke > KEY_TARGET_MS) notes.push(`Keystrokes miss the ${KEY_TARGET_MS} ms target: ${round(keystroke)} ms median, ${ratio(keystroke, floorKey)}x the floor.`);
  const result = {
    title: 'Catalog page in chromium',
    setup: `${TEMPLATES.toLocaleString('en')} templates x ${VERSIONS} versions (built in ${buildSeconds.toFixed(1)} s; index.json ${(indexBytes / 1048576).toFixed(2)} MB, ${(indexGzipBytes / 1048576).toFixed(2)} MB gzip, served gzip-encoded on 127.0.0.1 under ${PREFIX}); ${LOADS} fresh page loads each of the catalog and its floor, interleaved; ${keystrokes.length} keystrokes each; Debian chromium headless via playwright-core, ${cpus().length} cores, Node ${process.version}`,
    rows: [
      { name: 'first results painted (navigation start -> first 50 cards)', value: round(first), unit: 'ms', baseline: 'bare page: index.json fetched and parsed', baselineValue: round(floorFirst), ratio: ratio(first, floorFirst), target: `<= ${FIRST_TARGET_MS} ms`, met: first <= FIRST_TARGET_MS },
      { name: 'first frame of a blank page (the least any page pays here)', value: round(blankFirst), unit: 'ms', baseline: 'catalog first results / blank page', baselineValue: null, ratio: ratio(first, blankFirst), target: null, met: null },
      { name: 'keystroke in the search box -> results painted (median)', value: round(keystroke), unit: 'ms', baseline: 'bare page: one search pass and a count', baselineValue: round(floorKey), ratio: ratio(keystroke, floorKey), target: `<= ${KEY_TARGET_MS} ms`, met: keystroke <= KEY_TARGET_MS },
      { name: 'keystroke, slowest of all', value: round(Math.max(...keystrokes)), unit: 'ms', baseline: 'bare page, slowest', baselineValue: round(Math.max(...floor.keys)), ratio: null, target: null, met: null },
      { name: 'index.json, gzip', value: Math.round((indexGzipBytes / 1048576) * 100) / 100, unit: 'MB', baseline: null, baselineValue: null, ratio: null, target: null, met: null },
    ],
    notes,
  };
  console.log(JSON.stringify(result));
} finally {
  await browser?.close();
  await host?.close();
  await rm(dir, { recursive: true, force: true });
}
