#!/usr/bin/env node
// Regenerates docs/catalog.png: the catalog page of a small, realistic registry (12 templates),
// built with the compiled generator, served on 127.0.0.1 under a path prefix and shot in Debian's
// chromium at 1280x800 (light theme, the clock fixed so the dates read the same every time).
// Needs `npm run build` first and /usr/bin/chromium (`apt-get install -y chromium`).
// Usage: node scripts/catalog-screenshot.js [out.png] [--detail <id>]
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { serveFolder } from '../bench/fixtures/static-host.js';
import { buildRegistry } from '../build/src/registry/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'];
const NOW = new Date('2026-11-28T15:00:00.000Z');
const PREFIX = '/registry/';

const args = process.argv.slice(2);
const detailAt = args.indexOf('--detail');
const detail = detailAt === -1 ? undefined : args[detailAt + 1];
const out = path.resolve(args.find((a, i) => !a.startsWith('--') && (detailAt === -1 || i !== detailAt + 1)) ?? path.join(root, 'docs', 'catalog.png'));

const day = 24 * 3600 * 1000;
const ago = (days) => new Date(NOW.getTime() - days * day).toISOString();

/** name, category, description, keywords, features, node range, versions as [version, stability, days ago, downloads]. */
const TEMPLATES = [
  ['node-service', 'backend', 'A Node.js HTTP service with structured logging, health checks and a test suite.', ['node', 'typescript', 'http'], ['tests', 'docker', 'ci'], '>=20', [['1.0.0', 'stable', 210, 3120], ['1.1.0', 'stable', 120, 2890], ['1.2.0', 'stable', 3, 1404], ['2.0.0', 'beta', 1, 88]]],
  ['fastify-api', 'backend', 'REST API on Fastify with OpenAPI, JSON Schema validation and rate limits.', ['fastify', 'rest', 'openapi'], ['auth', 'tests', 'docker'], '>=20', [['0.9.0', 'beta', 160, 640], ['1.0.0', 'stable', 45, 2210]]],
  ['graphql-gateway', 'backend', 'A GraphQL gateway that stitches several services, with persisted queries.', ['graphql', 'gateway'], ['auth', 'caching'], '>=20', [['0.3.0', 'experimental', 12, 97]]],
  ['queue-worker', 'backend', 'Background jobs from a Redis queue, with retries and a dead-letter queue.', ['node', 'redis', 'jobs'], ['tests', 'metrics'], '>=18', [['1.0.0', 'stable', 300, 1510], ['1.3.1', 'stable', 20, 980]]],
  ['react-spa', 'frontend', 'React single-page app with Vite, routing, and component tests.', ['react', 'vite', 'typescript'], ['tests', 'storybook'], '>=20', [['2.0.0', 'stable', 90, 5210], ['2.1.0', 'stable', 8, 3122]]],
  ['vue-dashboard', 'frontend', 'An admin dashboard in Vue 3 with charts, tables and dark mode.', ['vue', 'dashboard'], ['i18n', 'charts'], '>=20', [['1.0.0', 'stable', 70, 1333]]],
  ['astro-docs', 'frontend', 'A documentation site with Astro: search, versioned docs, MDX.', ['astro', 'docs', 'mdx'], ['search'], '>=20', [['0.5.0', 'beta', 30, 402]]],
  ['nextjs-saas', 'fullstack', 'Next.js SaaS starter: auth, billing, Postgres and e-mail.', ['nextjs', 'react', 'postgres'], ['auth', 'billing', 'tests'], '>=20', [['1.0.0', 'stable', 150, 4020], ['1.4.0', 'stable', 5, 2710]]],
  ['remix-shop', 'fullstack', 'A small shop on Remix with a cart, checkout and an admin.', ['remix', 'react', 'commerce'], ['auth', 'payments'], '>=20', [['0.8.0', 'experimental', 2, 61]]],
  ['expo-app', 'mobile', 'React Native app with Expo, navigation and push notifications.', ['react-native', 'expo'], ['push', 'tests'], '>=20', [['1.0.0', 'stable', 40, 890]]],
  ['electron-app', 'desktop', 'Electron desktop app with auto-update and a secure preload bridge.', ['electron', 'desktop'], ['auto-update', 'tests'], '>=20', [['3.0.0', 'stable', 60, 1120], ['3.1.0', 'stable', 15, 640]]],
  ['express-legacy', 'backend', 'The old Express 4 service layout; use node-service for new projects.', ['express', 'node'], ['tests'], '>=16', [['1.0.0', 'deprecated', 400, 7400]]],
];

function versions() {
  const list = [];
  for (const [name, category, description, keywords, features, node, releases] of TEMPLATES) {
    for (const [version, stability, days, downloads] of releases) {
      list.push({
        manifest: {
          name,
          version,
          description,
          category,
          stability,
          keywords,
          features,
          license: 'MIT',
          author: { name: 'Acme Platform Team', url: 'https://github.com/acme' },
          repository: { type: 'git', url: `https://github.com/acme/${name}` },
          methodologyVersion: '>=1.2 <2',
          dependencies: { node, npm: '>=10' },
          ...(version.startsWith('2.0') || version.startsWith('3.0') ? { compatibility: { breaking: true, deprecated: ['config.legacyMode'] } } : {}),
        },
        downloadUrl: `archives/${name}/${version}.tgz`,
        createdAt: ago(days),
        stats: { downloads, stars: Math.round(downloads / 40), forks: 3, issues: 1 },
      });
    }
  }
  return list;
}

if (!existsSync(CHROMIUM)) {
  console.error(`${CHROMIUM} is missing: install it with \`apt-get install -y chromium\``);
  process.exit(1);
}
const dir = await mkdtemp(path.join(tmpdir(), 'catalog-shot-'));
const host = await serveFolder(dir, PREFIX);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
try {
  await buildRegistry({ versions: async () => versions() }, { outDir: dir, now: () => NOW });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 }, colorScheme: 'light', deviceScaleFactor: 1 });
  await page.clock.setFixedTime(NOW);
  await page.goto(`${host.url}${detail ? `#t-${detail}` : ''}`);
  await page.waitForSelector(detail ? '#detail-view table' : '#results li');
  await page.screenshot({ path: out });
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
} finally {
  await browser.close();
  await host.close();
  await rm(dir, { recursive: true, force: true });
}
