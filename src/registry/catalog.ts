/**
 * The catalog page `index.html`: the first page of the default list (the spec's listing order),
 * drawn at build time, and a script that loads `index.json` beside it for everything else (search,
 * filters, sorts, more results) and `templates/<id>.json` for one template's page. The first
 * results are there as soon as the page is; the page changes only when they, the number of
 * templates, the options or the category names do. The page's code is src/catalog/ (its script:
 * src/catalog/browser/main.ts, bundled at build time); the first page is drawn with the very views
 * the script draws later.
 *
 * Everything shown comes from manifests written by strangers: it is escaped here, and set as text
 * by the script; links are made only from http(s) or relative URLs. The page loads nothing from
 * elsewhere; its Content-Security-Policy allows exactly its own inline style and script (by hash)
 * and fetches from its own origin, nothing else.
 */
import { createHash } from 'node:crypto';

import { countText, moreText, PAGE_SIZE, cards } from '../catalog/list-view.js';
import { CatalogList, defaultState, readItem, type CatalogItem } from '../catalog/list.js';
import { escapeHtml, safeUrl } from '../catalog/html.js';
import { toHtml } from '../catalog/view.js';
import { plural } from '../catalog/format.js';
import type { RegistryDocument } from '../core/schema-types.js';
import type { IndexLines } from '../core/registry-index.js';
import { CATALOG_SCRIPT } from './catalog-script.js';
import { CATALOG_STYLE } from './catalog-style.js';
import { buildSparseIndex } from './document.js';

export { escapeHtml, safeUrl } from '../catalog/html.js';

export interface CatalogOptions {
  /** Public base URL of the registry; the page links to `<publicUrl>/registry.json` and shows it in the CLI commands. */
  publicUrl?: string;
  /** Page title (default "Template registry"). */
  title?: string;
}

// Inline, the script must not end its element early or open a comment the parser would honour.
if (/<\/script|<!--/i.test(CATALOG_SCRIPT)) throw new Error('the catalog page script holds </script or <!--: it cannot be inlined');

function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

const CSP = [
  "default-src 'none'",
  `style-src ${cspHash(CATALOG_STYLE)}`,
  `script-src ${cspHash(CATALOG_SCRIPT)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** What the page's script reads from the page itself: where registry.json is, and the category names. */
interface PageConfig {
  registryUrl?: string;
  categories: { id: string; name: string }[];
}

/**
 * The catalog page of a registry: the title, the registry's public URL, the names of `document`'s
 * categories (for the category filter) and the first page of its templates in listing order, drawn
 * from `index` (the document's index.json, made from it when not given). Deterministic: the same
 * index, categories and options give the same bytes.
 */
export function renderCatalog(document: RegistryDocument, options: CatalogOptions = {}, index: IndexLines = buildSparseIndex(document)): string {
  const title = options.title ?? 'Template registry';
  const publicUrl = options.publicUrl === undefined ? undefined : safeUrl(options.publicUrl);
  const registryUrl = publicUrl ? `${publicUrl.replace(/\/+$/, '')}/registry.json` : 'registry.json';
  const config: PageConfig = {
    ...(publicUrl ? { registryUrl } : {}),
    categories: document.categories.map((category) => ({ id: String(category.id), name: String(category.name) })),
  };
  const registryLink = `<a href="${escapeHtml(registryUrl)}">registry.json</a>`;
  // The first page of the default list, drawn as the script draws it (calendar dates: the script
  // writes them relative to the reader's now).
  const names = new Map(config.categories.map((category) => [category.id, category.name]));
  const list = new CatalogList(index.templates.map(readItem).filter((item): item is CatalogItem => item !== null));
  const matches = list.find(defaultState());
  const firstPage = toHtml(cards(matches, 0, PAGE_SIZE, { categoryName: (id) => names.get(id) ?? id, registryUrl, pageUrl: 'https://relative.invalid/' }));
  const left = matches.length - Math.min(PAGE_SIZE, matches.length);
  const total = list.items.length;
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(CSP)}">`,
    '<meta name="referrer" content="no-referrer">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${CATALOG_STYLE}</style>`,
    // In <head>: the script asks for index.json before the body is parsed.
    `<script>${CATALOG_SCRIPT}</script>`,
    '</head>',
    '<body>',
    '<header>',
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="muted"><span id="summary">${escapeHtml(plural(total, 'template', 'templates'))}</span> · ${registryLink}</p>`,
    '</header>',
    `<main id="catalog" aria-busy="true" data-config="${escapeHtml(JSON.stringify(config))}">`,
    `<noscript><p>This catalog needs JavaScript to search and to list more templates. The whole registry is in ${registryLink}.</p></noscript>`,
    '<section id="list-view" aria-label="Templates">',
    '<div class="controls" role="search">',
    '<div class="field search"><label for="q">Search</label><input id="q" type="search" placeholder="Name, description, tags, features, category" autocomplete="off" spellcheck="false"></div>',
    '<div class="field"><label for="category">Category</label><select id="category"><option value="">All categories</option></select></div>',
    '<div class="field"><label for="stability">Stability</label><select id="stability"><option value="">Any stability</option></select></div>',
    '<div class="field"><label for="tag">Tag</label><select id="tag"><option value="">Add a tag filter</option></select></div>',
    '<div class="field"><label for="feature">Feature</label><select id="feature"><option value="">Add a feature filter</option></select></div>',
    '</div>',
    '<div class="bar">',
    `<p id="count" role="status" aria-live="polite">${escapeHtml(countText(matches.length, total))}</p>`,
    '<ul id="chips" class="chips" aria-label="Tag and feature filters"></ul>',
    '<button id="clear" type="button" class="link-button" hidden>Clear all filters</button>',
    '<label class="sort" for="sort">Sort by</label><select id="sort"><option value="popular">Popular (stable first)</option><option value="name">Name</option><option value="updated">Recently updated</option><option value="downloads">Most downloads</option></select>',
    '</div>',
    `<ul id="results" class="cards" aria-label="Templates found">${firstPage}</ul>`,
    `<p id="empty" class="muted"${total === 0 ? '' : ' hidden'}>No template matches. <button type="button" class="link-button">Clear all filters</button></p>`,
    `<button id="more" type="button" class="more"${left > 0 ? '' : ' hidden'}>${escapeHtml(moreText(left))}</button>`,
    '<section class="panel" aria-labelledby="use-title">',
    '<h2 id="use-title">Use this registry</h2>',
    '<p>Point the <code>template-registry</code> CLI at it, then <code>list</code>, <code>search</code>, <code>info</code> or <code>create</code>:</p>',
    '<div id="use-cli"></div>',
    '</section>',
    '</section>',
    '<article id="detail-view" class="detail" hidden></article>',
    '</main>',
    '<footer class="muted">Generated by template-registry. Each template shows its latest stable version (else its highest); its page lists every version.</footer>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
