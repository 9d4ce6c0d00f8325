/**
 * The catalog page: a static, self-contained `index.html` listing the latest version of every
 * template, grouped by category, with a category filter and a search box that work client-side.
 *
 * Everything shown comes from manifests written by strangers: every string is HTML-escaped, and
 * links are only made from http(s) (or relative) URLs. The page loads nothing from elsewhere; its
 * Content-Security-Policy allows exactly its own inline style and script (by hash) and nothing else.
 */
import { createHash } from 'node:crypto';

import { latestEntries, sortEntries } from '../core/listing.js';
import type { Category, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { matchesTerms, searchTerms, searchText } from '../core/search.js';

export interface CatalogOptions {
  /** Public base URL of the registry; the page links to `<publicUrl>/registry.json`. */
  publicUrl?: string;
  /** Page title (default "Template registry"). */
  title?: string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and (quoted) attribute values. */
export function escapeHtml(text: string | number | null | undefined): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** `url` when it is an http(s) URL or a relative one; undefined for anything else (javascript:, data:, ...). */
export function safeUrl(url: unknown): string | undefined {
  if (typeof url !== 'string' || url.trim() === '') return undefined;
  try {
    const parsed = new URL(url, 'https://relative.invalid/');
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The source of a self-contained function (no outer references), for the page's script. Runs of
 * white space are collapsed so the text does not depend on how the code was compiled.
 */
function embeddable(fn: (...args: never[]) => unknown): string {
  return fn.toString().replace(/\s+/g, ' ');
}

const STYLE = `
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--card:#f6f8fa;--line:#d1d9e0;--accent:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--card:#151b23;--line:#3d444d;--accent:#4493f8}}
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header,main,footer{max-width:72rem;margin:0 auto;padding:1rem}
h1{margin:.5rem 0}
a{color:var(--accent)}
.muted{color:var(--muted);font-size:.9em}
.controls{display:flex;flex-wrap:wrap;gap:.5rem;margin:1rem 0}
.controls input,.controls select{font:inherit;padding:.4rem .6rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
.controls input{flex:1 1 20rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(20rem,1fr));gap:1rem;padding:0;list-style:none}
.card{display:flex;flex-direction:column;gap:.4rem;padding:1rem;border:1px solid var(--line);border-radius:8px;background:var(--card)}
.card h3{margin:0;font-size:1.1rem;overflow-wrap:anywhere}
.card p{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:0 .45rem;border:1px solid var(--line);border-radius:999px;font-size:.8em;margin-left:.3rem}
.stability-beta{border-color:#bf8700}.stability-experimental{border-color:#cf222e}.stability-deprecated{opacity:.7;text-decoration:line-through}
.tags{display:flex;flex-wrap:wrap;gap:.3rem;padding:0;margin:0;list-style:none}
.tags li{font-size:.8em;padding:0 .4rem;border-radius:4px;background:var(--bg);border:1px solid var(--line)}
.links{display:flex;gap:1rem;margin-top:auto}
`;

/**
 * The page's filter script. Its search matches with the very functions the client and the server
 * use (their source is embedded), over the search text the page stores on each card.
 */
const SCRIPT = `
(function () {
  ${embeddable(searchTerms)}
  ${embeddable(matchesTerms)}
  var q = document.getElementById('q');
  var category = document.getElementById('category');
  var count = document.getElementById('count');
  var empty = document.getElementById('empty');
  var sections = document.querySelectorAll('section[data-category]');
  var total = document.querySelectorAll('[data-search]').length;
  function apply() {
    var terms = searchTerms(q.value);
    var wanted = category.value;
    var shown = 0;
    for (var i = 0; i < sections.length; i++) {
      var section = sections[i];
      var inCategory = wanted === '' || section.getAttribute('data-category') === wanted;
      var cards = section.querySelectorAll('[data-search]');
      var visible = 0;
      for (var j = 0; j < cards.length; j++) {
        var match = inCategory && matchesTerms(cards[j].getAttribute('data-search') || '', terms);
        cards[j].hidden = !match;
        if (match) visible++;
      }
      section.hidden = visible === 0;
      shown += visible;
    }
    var noun = total === 1 ? ' template' : ' templates';
    count.textContent = shown === total ? total + noun : shown + ' of ' + total + noun;
    empty.hidden = shown !== 0;
  }
  q.addEventListener('input', apply);
  category.addEventListener('change', apply);
  apply();
})();
`;

function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

function link(url: unknown, label: string, attributes = ''): string {
  const href = safeUrl(url);
  return href === undefined ? '' : `<a href="${escapeHtml(href)}"${attributes}>${escapeHtml(label)}</a>`;
}

function card(entry: TemplateEntry): string {
  const tags = entry.tags ?? [];
  const meta = [
    entry.author?.name ? `by ${escapeHtml(entry.author.name)}` : '',
    entry.license ? escapeHtml(entry.license) : '',
    `${escapeHtml(entry.stats?.downloads ?? 0)} downloads`,
    entry.updatedAt ? `updated ${escapeHtml(entry.updatedAt.slice(0, 10))}` : '',
  ].filter(Boolean);
  const links = [
    link(entry.downloadUrl, 'Download', ' rel="nofollow noopener"'),
    link(entry.documentationUrl, 'Documentation', ' rel="nofollow noopener"'),
    entry.repositoryUrl !== entry.documentationUrl ? link(entry.repositoryUrl, 'Repository', ' rel="nofollow noopener"') : '',
  ].filter(Boolean);
  return [
    `<li class="card" id="t-${escapeHtml(entry.id)}" data-search="${escapeHtml(searchText(entry))}">`,
    `<h3>${escapeHtml(entry.name)}<span class="badge">${escapeHtml(entry.version)}</span>`,
    entry.stability === 'stable' ? '' : `<span class="badge stability-${escapeHtml(entry.stability)}">${escapeHtml(entry.stability)}</span>`,
    `</h3>`,
    `<p>${escapeHtml(entry.description)}</p>`,
    tags.length > 0 ? `<ul class="tags">${tags.map((t) => `<li>${escapeHtml(t)}</li>`).join('')}</ul>` : '',
    `<p class="muted">${meta.join(' · ')}</p>`,
    links.length > 0 ? `<p class="links">${links.join('')}</p>` : '',
    `</li>`,
  ]
    .filter(Boolean)
    .join('\n');
}

function section(category: Category, entries: readonly TemplateEntry[]): string {
  return [
    `<section data-category="${escapeHtml(category.id)}" aria-labelledby="c-${escapeHtml(category.id)}">`,
    `<h2 id="c-${escapeHtml(category.id)}">${escapeHtml(category.name)}</h2>`,
    category.description ? `<p class="muted">${escapeHtml(category.description)}</p>` : '',
    `<ul class="cards">`,
    ...entries.map(card),
    `</ul>`,
    `</section>`,
  ]
    .filter(Boolean)
    .join('\n');
}

/**
 * The catalog page of `document`: per category (in the document's order, empty ones left out),
 * the latest version of each template (highest stable, else highest) in the spec's listing order.
 * Deterministic: the same document and options give the same bytes.
 */
export function renderCatalog(document: RegistryDocument, options: CatalogOptions = {}): string {
  const title = options.title ?? 'Template registry';
  const latest = latestEntries(document.templates);
  const groups = document.categories
    .map((category) => ({ category, entries: sortEntries(latest.filter((e) => e.category === category.id)) }))
    .filter((g) => g.entries.length > 0);
  const registryUrl = options.publicUrl ? `${options.publicUrl.replace(/\/+$/, '')}/registry.json` : 'registry.json';
  const csp = `default-src 'none'; style-src ${cspHash(STYLE)}; script-src ${cspHash(SCRIPT)}; base-uri 'none'; form-action 'none'`;
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">`,
    '<meta name="referrer" content="no-referrer">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    '<header>',
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="muted"><span id="count">${latest.length} template${latest.length === 1 ? '' : 's'}</span> · updated ${escapeHtml(document.lastUpdated)} · ${link(registryUrl, 'registry.json')}</p>`,
    '<div class="controls" role="search">',
    '<input id="q" type="search" placeholder="Search name, description, tags, features" aria-label="Search templates" autocomplete="off">',
    '<select id="category" aria-label="Category">',
    '<option value="">All categories</option>',
    ...groups.map((g) => `<option value="${escapeHtml(g.category.id)}">${escapeHtml(g.category.name)} (${g.entries.length})</option>`),
    '</select>',
    '</div>',
    '</header>',
    '<main>',
    ...groups.map((g) => section(g.category, g.entries)),
    `<p id="empty" class="muted"${latest.length === 0 ? '' : ' hidden'}>No template matches.</p>`,
    '</main>',
    '<footer class="muted">Generated by template-registry from registry.json. Each template lists its latest stable version (else its highest).</footer>',
    `<script>${SCRIPT}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
