/**
 * The catalog page's script (inline, allowed by its hash in the page's CSP). It loads `index.json`
 * beside the page, lists, searches, filters and sorts it, and loads `templates/<id>.json` for the
 * detail view of one template. Every URL is relative to the page, so the page works from any static
 * host under any path prefix.
 *
 * Everything it shows comes from manifests written by strangers: text is set with textContent
 * only, and links are made from http(s) or relative URLs only (`safeUrl`, embedded). Search uses
 * the very functions the client and the server use (their source is embedded), so the page finds
 * what `template-registry search` and `GET /templates?q=` find.
 *
 * Only the visible rows are in the DOM (PAGE_SIZE at a time, "Show more" adds the next ones), so
 * 10,000 templates load and answer a keystroke quickly. The view (search, filters, sort, or the
 * template shown) lives in the URL fragment: a view can be linked, and Back returns to the last one.
 */
import { STABILITY_ORDER } from '../core/listing.js';
import * as search from '../core/search.js';
import { matchesTerms, SEARCH_FIELDS, searchTerms, searchText } from '../core/search.js';
import { safeUrl } from './catalog-text.js';

/**
 * The source of a self-contained function (no outer references but those the script defines), for
 * the page's script. Indentation and runs of blanks are collapsed, line breaks kept (a `//` comment
 * the compiler left in would otherwise swallow the rest of the function).
 */
function embeddable(fn: EmbeddedFunction): string {
  return fn
    .toString()
    .replace(/[ \t]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n');
}

type EmbeddedFunction = (...args: never[]) => unknown;

/**
 * `searchText` and the functions of core/search.ts it calls (found in its source, transitively),
 * helpers first: the page computes the search text with the very code the client and the server run.
 */
function withSearchHelpers(main: EmbeddedFunction): EmbeddedFunction[] {
  const functions = (Object.values(search) as unknown[]).filter((value): value is EmbeddedFunction => typeof value === 'function');
  const needed: EmbeddedFunction[] = [main];
  for (let i = 0; i < needed.length; i++) {
    const source = needed[i]!.toString();
    for (const fn of functions) {
      if (!needed.includes(fn) && source.includes(`${fn.name}(`)) needed.push(fn);
    }
  }
  return needed.reverse();
}

/** How many cards are added at a time. */
export const PAGE_SIZE = 50;

/** The name of the performance mark the page sets when its first results are in the DOM. */
export const FIRST_RESULTS_MARK = 'catalog-first-results';

export const CATALOG_SCRIPT = String.raw`
(function () {
'use strict';
${[...withSearchHelpers(searchText), searchTerms, matchesTerms, safeUrl].map(embeddable).join('\n')}
// The embedded functions under the names this script uses (a bundler may have renamed them).
var SEARCH_FIELDS = ${JSON.stringify(SEARCH_FIELDS)};
var searchText = ${searchText.name}, searchTerms = ${searchTerms.name}, matchesTerms = ${matchesTerms.name}, safeUrl = ${safeUrl.name};
var STABILITIES = ${JSON.stringify(STABILITY_ORDER)};
var PAGE_SIZE = ${PAGE_SIZE};
var FIRST_RESULTS_MARK = ${JSON.stringify(FIRST_RESULTS_MARK)};
var SORTS = ['popular', 'name', 'updated', 'downloads'];
var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

var pageUrl = location.href.split('#')[0];
var indexUrl = new URL('index.json', pageUrl).href;
// The list is asked for while the rest of the page is still being parsed: it is the slowest part
// of the first view. (The script runs from <head>; everything that needs the page waits for init.)
var indexRequest = fetch(indexUrl).then(function (response) {
  if (!response.ok) throw new Error('HTTP ' + response.status + ' for index.json');
  return response.json();
});
indexRequest.catch(function () { /* reported by init, once the page is there to say it */ });

function byId(id) { return document.getElementById(id); }
var root, ui, config, baseTitle, registryUrl;
var categoryNames = {};

var items = [];
var itemsById = new Map();
var orders = {};
var templatePath = 'templates/{id}.json';
var templateFiles = new Map();
var state = defaultState();
var matches = [];
var shown = 0;
var listKey = null;
var routed = null;
var listHash = '';
var listScroll = 0;
var cameFromList = false;
var lastDetailId = null;
var detailToken = 0;
var loaded = false;

function readConfig() {
  try {
    var value = JSON.parse(root.getAttribute('data-config') || '{}');
    return value && typeof value === 'object' ? value : {};
  } catch (error) {
    return {};
  }
}

// ---- values read from the registry's files (strangers' data: only the expected types are kept)
function text(value) { return typeof value === 'string' ? value : ''; }
var NO_TEXTS = [];
function texts(value) {
  if (!Array.isArray(value)) return NO_TEXTS;
  for (var i = 0; i < value.length; i++) {
    if (typeof value[i] !== 'string') return value.filter(function (v) { return typeof v === 'string'; });
  }
  return value;
}
function amount(value) { return typeof value === 'number' && isFinite(value) && value >= 0 ? value : 0; }
function isObject(value) { return value !== null && typeof value === 'object' && !Array.isArray(value); }

function normalize(raw) {
  if (!isObject(raw) || text(raw.id) === '') return null;
  var item = {
    id: raw.id, name: text(raw.name) || raw.id, version: text(raw.version), stability: text(raw.stability),
    category: text(raw.category), description: text(raw.description), tags: texts(raw.tags), features: texts(raw.features),
    downloads: amount(raw.downloads), updatedAt: text(raw.updatedAt)
  };
  item.time = Date.parse(item.updatedAt) || 0;
  item.rank = STABILITIES.indexOf(item.stability);
  if (item.rank === -1) item.rank = STABILITIES.length;
  item.text = null;
  return item;
}
/** The search text of an item, made on first use (start() makes them all once the first results are shown). */
function searchTextOf(item) {
  if (item.text === null) item.text = searchText(item, SEARCH_FIELDS);
  return item.text;
}

// ---- ordering: "popular" is the spec's listing order (stability, downloads, name)
function compareText(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
function byName(a, b) { return compareText(a.name, b.name) || compareText(a.id, b.id); }
var COMPARE = {
  popular: function (a, b) { return a.rank - b.rank || b.downloads - a.downloads || byName(a, b); },
  name: byName,
  updated: function (a, b) { return b.time - a.time || byName(a, b); },
  downloads: function (a, b) { return b.downloads - a.downloads || byName(a, b); }
};
function ordered(sort) {
  if (!orders[sort]) orders[sort] = items.slice().sort(COMPARE[sort]);
  return orders[sort];
}

// ---- the list state and the URL fragment
function defaultState() { return { q: '', category: '', stability: '', tags: [], features: [], sort: 'popular' }; }
function unique(values) { return values.filter(function (v, i) { return v !== '' && values.indexOf(v) === i; }); }
function parseState(fragment) {
  var params = new URLSearchParams(fragment);
  var parsed = defaultState();
  parsed.q = params.get('q') || '';
  parsed.category = params.get('category') || '';
  parsed.stability = params.get('stability') || '';
  parsed.tags = unique(params.getAll('tag'));
  parsed.features = unique(params.getAll('feature'));
  var sort = params.get('sort');
  if (sort && SORTS.indexOf(sort) !== -1) parsed.sort = sort;
  return parsed;
}
function stateHash(s) {
  var params = new URLSearchParams();
  if (s.q) params.append('q', s.q);
  if (s.category) params.append('category', s.category);
  if (s.stability) params.append('stability', s.stability);
  s.tags.forEach(function (t) { params.append('tag', t); });
  s.features.forEach(function (f) { params.append('feature', f); });
  if (s.sort !== 'popular') params.append('sort', s.sort);
  var encoded = params.toString();
  return encoded ? '#' + encoded : '';
}
function withState(change) {
  var next = { q: state.q, category: state.category, stability: state.stability, tags: state.tags.slice(), features: state.features.slice(), sort: state.sort };
  change(next);
  return next;
}
function detailHash(id) { return '#t-' + encodeURIComponent(id); }
function detailIdOf(hash) {
  if (hash.indexOf('#t-') !== 0) return null;
  try { return decodeURIComponent(hash.slice(3)); } catch (error) { return hash.slice(3); }
}
function go(hash, replace) {
  flushUrl();
  var url = hash || location.pathname + location.search;
  if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
  route();
}
// Typing updates the list at once and the URL a moment later: a history update on every key
// would cost more than the search. Anything that navigates writes it first (flushUrl).
var urlTimer = null;
var typedHash = '';
function typed(q) {
  state = withState(function (s) { s.q = q; });
  typedHash = stateHash(state);
  showList();
  if (urlTimer !== null) clearTimeout(urlTimer);
  urlTimer = setTimeout(flushUrl, 300);
}
function flushUrl() {
  if (urlTimer === null) return;
  clearTimeout(urlTimer);
  urlTimer = null;
  history.replaceState(null, '', typedHash || location.pathname + location.search);
  routed = typedHash;
  listHash = typedHash;
}
function route() {
  if (!loaded) return;
  if (urlTimer !== null) { clearTimeout(urlTimer); urlTimer = null; }
  var hash = location.hash === '#' ? '' : location.hash;
  if (hash === routed) return;
  var fromList = routed !== null && detailIdOf(routed) === null;
  routed = hash;
  var id = detailIdOf(hash);
  if (id !== null) {
    if (fromList) { listScroll = window.scrollY; cameFromList = true; }
    showDetail(id);
  } else {
    listHash = hash;
    state = parseState(hash.slice(1));
    showList();
  }
}

// ---- small DOM helpers: text only ever goes in through textContent
function el(tag, className, content) {
  var node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined && content !== null) node.textContent = String(content);
  return node;
}
function add(parent) {
  for (var i = 1; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined || child === '') continue;
    parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return parent;
}
function link(url, label, base) {
  var safe = safeUrl(url);
  if (safe === undefined) return null;
  var a = el('a', null, label);
  a.href = new URL(safe, base || registryUrl).href;
  a.rel = 'nofollow noopener noreferrer';
  return a;
}
function badge(label, className) { return el('span', 'badge' + (className ? ' ' + className : ''), label); }
function stabilityBadge(stability) {
  if (stability === '' || stability === 'stable') return null;
  return badge(stability, STABILITIES.indexOf(stability) === -1 ? '' : 'stability-' + stability);
}
function plural(n, one, many) { return formatNumber(n) + ' ' + (n === 1 ? one : many); }
var NUMBER_FORMAT = new Intl.NumberFormat('en-US');
function formatNumber(n) { return NUMBER_FORMAT.format(n); }
function categoryName(id) { return Object.prototype.hasOwnProperty.call(categoryNames, id) ? categoryNames[id] : id; }

// ---- dates written for people: "3 days ago" for the last month, else "25 Nov 2026" (UTC), ISO as title
function humanDate(time, now) {
  var seconds = Math.round((now - time) / 1000);
  if (seconds >= -60) {
    if (seconds < 60) return 'just now';
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes === 1 ? '1 minute ago' : minutes + ' minutes ago';
    var hours = Math.floor(minutes / 60);
    if (hours < 24) return hours === 1 ? '1 hour ago' : hours + ' hours ago';
    var days = Math.floor(hours / 24);
    if (days === 1) return 'yesterday';
    if (days < 31) return days + ' days ago';
  }
  var date = new Date(time);
  return date.getUTCDate() + ' ' + MONTHS[date.getUTCMonth()] + ' ' + date.getUTCFullYear();
}
function timeEl(iso) {
  var time = Date.parse(iso);
  if (!iso || isNaN(time)) return el('span', null, 'unknown');
  var node = el('time', null, humanDate(time, Date.now()));
  node.setAttribute('datetime', iso);
  node.title = iso;
  return node;
}

// ---- shell commands to copy: anything but plain URL characters is single-quoted
function shellWord(word) { return /^[A-Za-z0-9._~:\/%@+,=-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'"; }
function commandBlock(label, command) {
  var wrap = el('div', 'command');
  var code = el('code', null, command);
  var button = el('button', null, 'Copy');
  button.type = 'button';
  button.setAttribute('aria-label', 'Copy ' + label);
  button.addEventListener('click', function () { copy(command, code, button); });
  add(wrap, add(el('pre'), code), button);
  return wrap;
}
function copy(value, code, button) {
  function done(message) {
    button.textContent = message;
    setTimeout(function () { button.textContent = 'Copy'; }, 2000);
  }
  function selectIt() {
    var range = document.createRange();
    range.selectNodeContents(code);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    done('Press Ctrl+C');
  }
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(value).then(function () { done('Copied'); }, selectIt);
  } else selectIt();
}
function useRegistryCommand() { return 'TEMPLATE_REGISTRY_URL=' + shellWord(registryUrl) + ' template-registry list'; }

// ---- the list
function filterItems(s) {
  var terms = searchTerms(s.q);
  var list = ordered(s.sort);
  var out = [];
  for (var i = 0; i < list.length; i++) {
    var item = list[i];
    if (s.category !== '' && item.category !== s.category) continue;
    if (s.stability !== '' && item.stability !== s.stability) continue;
    if (!hasAll(item.tags, s.tags) || !hasAll(item.features, s.features)) continue;
    if (terms.length > 0 && !matchesTerms(searchTextOf(item), terms)) continue;
    out.push(item);
  }
  return out;
}
function hasAll(values, wanted) {
  for (var i = 0; i < wanted.length; i++) if (values.indexOf(wanted[i]) === -1) return false;
  return true;
}
function isFiltered(s) { return s.q !== '' || s.category !== '' || s.stability !== '' || s.tags.length > 0 || s.features.length > 0; }

function card(item) {
  var li = el('li', 'card');
  var title = el('a', null, item.name);
  title.href = detailHash(item.id);
  add(li, add(el('h3'), title, badge(item.version), stabilityBadge(item.stability)));
  add(li, el('p', null, item.description));
  if (item.tags.length > 0 || item.features.length > 0) {
    var tags = el('ul', 'tags');
    tags.setAttribute('aria-label', 'Tags and features');
    item.tags.forEach(function (t) { tags.appendChild(add(el('li'), filterButton('tag', t))); });
    item.features.forEach(function (f) { tags.appendChild(add(el('li'), filterButton('feature', f))); });
    li.appendChild(tags);
  }
  var meta = add(el('p', 'muted meta'), categoryName(item.category) + ' · ' + plural(item.downloads, 'download', 'downloads'));
  if (item.updatedAt) add(meta, ' · updated ', timeEl(item.updatedAt));
  li.appendChild(meta);
  return li;
}
function filterButton(kind, value) {
  var button = el('button', kind === 'tag' ? 'tag' : 'tag feature', value);
  button.type = 'button';
  button.setAttribute('data-' + kind, value);
  button.title = 'Show only templates with the ' + kind + ' ' + value;
  return button;
}
function drawRows(from) {
  var rows = document.createDocumentFragment();
  var end = Math.min(shown, matches.length);
  for (var i = from; i < end; i++) rows.appendChild(card(matches[i]));
  if (from === 0) ui.results.textContent = '';
  ui.results.appendChild(rows);
  var left = matches.length - end;
  ui.more.hidden = left <= 0;
  ui.more.textContent = 'Show ' + Math.min(left, PAGE_SIZE) + ' more (' + formatNumber(left) + ' not shown)';
}
function drawCount() {
  var total = items.length;
  ui.count.textContent = matches.length === total ? plural(total, 'template', 'templates') : formatNumber(matches.length) + ' of ' + plural(total, 'template', 'templates');
  ui.empty.hidden = matches.length !== 0;
}
function drawChips() {
  ui.chips.textContent = '';
  function chip(kind, value) {
    var button = el('button', 'chip', kind + ': ' + value + ' ×');
    button.type = 'button';
    button.setAttribute('aria-label', 'Remove the ' + kind + ' filter ' + value);
    button.addEventListener('click', function () {
      go(stateHash(withState(function (s) {
        if (kind === 'tag') s.tags = s.tags.filter(function (t) { return t !== value; });
        else s.features = s.features.filter(function (f) { return f !== value; });
      })), false);
    });
    ui.chips.appendChild(add(el('li'), button));
  }
  state.tags.forEach(function (t) { chip('tag', t); });
  state.features.forEach(function (f) { chip('feature', f); });
  ui.clear.hidden = !isFiltered(state);
}
function syncControls() {
  if (ui.q.value !== state.q) ui.q.value = state.q;
  setSelect(ui.category, state.category, categoryName(state.category));
  setSelect(ui.stability, state.stability, state.stability);
  ui.sort.value = state.sort;
}
function setSelect(select, value, label) {
  if (value !== '' && !optionOf(select, value)) select.appendChild(option(value, label));
  select.value = value;
}
function optionOf(select, value) {
  return Array.prototype.find.call(select.options, function (o) { return o.value === value; });
}
function option(value, label) {
  var node = el('option', null, label);
  node.value = value;
  return node;
}
function showList() {
  detailToken++; // a template's page still loading is not drawn any more
  ui.detailView.hidden = true;
  ui.detailView.textContent = '';
  ui.listView.hidden = false;
  document.title = baseTitle;
  syncControls();
  var key = stateHash(state);
  if (key !== listKey) {
    listKey = key;
    matches = filterItems(state);
    shown = PAGE_SIZE;
    drawRows(0);
    drawCount();
    drawChips();
  }
  if (lastDetailId !== null) {
    window.scrollTo(0, listScroll);
    var opened = ui.results.querySelector('a[href="' + CSS.escape(detailHash(lastDetailId)) + '"]');
    if (opened) opened.focus({ preventScroll: true });
    lastDetailId = null;
  }
}

// ---- the detail view of one template
function loadTemplate(id) {
  if (!templateFiles.has(id)) {
    var url = new URL(templatePath.split('{id}').join(encodeURIComponent(id)), indexUrl).href;
    templateFiles.set(id, fetch(url).then(function (response) {
      if (!response.ok) throw new Error('HTTP ' + response.status + ' for ' + url);
      return response.json();
    }).then(function (file) {
      if (!isObject(file) || !Array.isArray(file.versions) || (file.id !== undefined && file.id !== id)) throw new Error(url + ' is not the file of ' + id);
      // The generator writes versions in document order (lowest first); the page lists the highest first.
      return file.versions.filter(function (v) { return isObject(v) && typeof v.version === 'string' && (v.id === undefined || v.id === id); }).reverse();
    }));
    templateFiles.get(id).catch(function () { templateFiles.delete(id); });
  }
  return templateFiles.get(id);
}
function showDetail(id) {
  var token = ++detailToken;
  lastDetailId = id;
  ui.listView.hidden = true;
  var view = ui.detailView;
  view.hidden = false;
  view.textContent = '';
  var back = el('a', null, '← All templates');
  back.href = listHash || '#';
  back.addEventListener('click', function (event) {
    event.preventDefault();
    if (cameFromList) history.back(); else go(listHash, false);
  });
  add(view, add(el('p'), back));
  var item = itemsById.get(id);
  var heading = el('h2');
  heading.tabIndex = -1;
  view.appendChild(heading);
  window.scrollTo(0, 0);
  if (!item) {
    heading.textContent = 'Template not found';
    add(view, el('p', null, 'This registry has no template ' + JSON.stringify(id) + '.'));
    document.title = 'Not found · ' + baseTitle;
    heading.focus();
    return;
  }
  document.title = item.name + ' · ' + baseTitle;
  add(heading, item.name, badge(item.version), stabilityBadge(item.stability));
  add(view, el('p', null, item.description));
  var status = el('p', 'muted', 'Loading the versions…');
  status.setAttribute('role', 'status');
  view.appendChild(status);
  heading.focus();
  loadTemplate(id).then(function (versions) {
    if (token !== detailToken) return;
    status.remove();
    drawDetail(view, item, versions);
  }, function (error) {
    if (token !== detailToken) return;
    status.className = 'error';
    status.textContent = 'Could not load the versions of ' + item.id + ': ' + error.message;
  });
}
function fact(list, label, value) {
  if (value === null || value === undefined || value === '') return;
  add(list, el('dt', null, label), add(el('dd'), value));
}
function joined(nodes) {
  var span = el('span');
  nodes.forEach(function (node, i) { add(span, i > 0 ? ', ' : '', node); });
  return nodes.length > 0 ? span : null;
}
function isThisPage(url, id) {
  try {
    var target = new URL(url, registryUrl);
    return target.origin === location.origin && target.hash === detailHash(id);
  } catch (error) {
    return false;
  }
}
function drawDetail(view, item, versions) {
  var latest = versions.filter(function (v) { return v.version === item.version; })[0] || versions[0] || {};
  var columns = el('div', 'detail-grid');
  var about = el('div');
  var facts = el('dl', 'facts');
  fact(facts, 'Category', categoryName(item.category));
  var author = isObject(latest.author) ? latest.author : {};
  var authorName = [text(author.name), text(author.organization)].filter(Boolean).join(', ');
  fact(facts, 'Author', authorName ? (link(author.url, authorName) || authorName) : '');
  fact(facts, 'License', text(latest.license));
  fact(facts, 'Downloads', formatNumber(item.downloads) + ' (all versions)');
  if (item.updatedAt) fact(facts, 'Updated', timeEl(item.updatedAt));
  fact(facts, 'Repository', link(latest.repositoryUrl, text(latest.repositoryUrl)));
  // Who built the latest version, as its provenance (verified by the registry) says, linking to the run.
  var publisher = isObject(latest.publisher) ? latest.publisher : {};
  if (text(publisher.repository) && text(publisher.workflow)) {
    var builtBy = 'built by ' + text(publisher.repository) + ' @ ' + text(publisher.workflow);
    fact(facts, 'Provenance', link(publisher.runUrl, builtBy) || builtBy);
  }
  var documentation = text(latest.documentationUrl);
  if (documentation !== text(latest.repositoryUrl) && !isThisPage(documentation, item.id)) fact(facts, 'Documentation', link(documentation, documentation));
  fact(facts, 'Tags', joined(item.tags.map(function (t) { return filterLink('tag', t); })));
  fact(facts, 'Features', joined(item.features.map(function (f) { return filterLink('feature', f); })));
  add(about, facts, el('h3', null, 'Compatibility of ' + text(latest.version)), compatibility(latest));
  // The version lifecycle: a deprecated latest version says why (its deprecationMessage).
  if (text(latest.stability) === 'deprecated') add(view, add(el('p', 'notice'), badge('deprecated', 'stability-deprecated'), ' ' + (text(latest.deprecationMessage) || 'This version is deprecated.')));

  var use = el('div');
  add(use, el('h3', null, 'Create a project'));
  add(use, el('p', 'muted', 'Point the template-registry CLI at this registry (once per shell):'));
  use.appendChild(commandBlock('the command that points the CLI at this registry', 'export TEMPLATE_REGISTRY_URL=' + shellWord(registryUrl)));
  add(use, el('p', 'muted', 'then create a project from the latest version:'));
  use.appendChild(commandBlock('the create command', 'template-registry create ' + shellWord(item.id)));
  add(use, add(el('p', 'muted'), 'or from a given version: ', el('code', null, 'template-registry create ' + shellWord(item.id + '@' + item.version)), '.'));
  add(view, add(columns, about, use));

  add(view, el('h3', null, versions.length === 1 ? '1 version' : versions.length + ' versions'));
  var table = el('table');
  var head = el('tr');
  ['Version', 'Stability', 'Published', 'Requires', 'Changes', 'Archive'].forEach(function (h) {
    var th = el('th', null, h);
    th.scope = 'col';
    head.appendChild(th);
  });
  add(table, add(el('thead'), head));
  var body = el('tbody');
  versions.forEach(function (v) {
    var row = el('tr');
    var name = add(el('th'), v.version);
    name.scope = 'row';
    if (v.version === item.version) add(name, badge('latest'));
    // Yanked versions stay listed here (still downloadable by exact version), marked.
    if (v.yanked === true) add(name, badge('yanked', 'breaking'));
    var stabilityCell = el('td', null, text(v.stability));
    if (text(v.deprecationMessage)) add(stabilityCell, el('br'), el('small', 'muted', text(v.deprecationMessage)));
    add(row, name, stabilityCell, add(el('td'), timeEl(text(v.createdAt) || text(v.updatedAt))),
      el('td', null, requirements(v)), add(el('td'), changes(v)), add(el('td'), link(v.downloadUrl, 'Download' + size(v.size)) || '—'));
    body.appendChild(row);
  });
  table.appendChild(body);
  view.appendChild(add(el('div', 'table-wrap'), table));
}
function filterLink(kind, value) {
  var a = el('a', null, value);
  a.href = stateHash(kind === 'tag' ? { q: '', category: '', stability: '', tags: [value], features: [], sort: 'popular' } : { q: '', category: '', stability: '', tags: [], features: [value], sort: 'popular' });
  return a;
}
function size(bytes) {
  if (typeof bytes !== 'number' || !isFinite(bytes) || bytes < 0) return '';
  return bytes < 1024 ? ' (' + bytes + ' B)' : bytes < 1048576 ? ' (' + (bytes / 1024).toFixed(1) + ' kB)' : ' (' + (bytes / 1048576).toFixed(1) + ' MB)';
}
function ranges(v) {
  var compat = isObject(v.compatibility) ? v.compatibility : {};
  var deps = isObject(v.dependencies) ? v.dependencies : {};
  var methodology = texts(compat.methodologyVersions);
  var node = texts(compat.nodeVersions);
  var out = [['methodology', methodology.length > 0 ? methodology.join(' || ') : text(deps.methodology)], ['node', node.length > 0 ? node.join(' || ') : text(deps.node)]];
  Object.keys(deps).sort().forEach(function (tool) {
    if (tool !== 'methodology' && tool !== 'node' && typeof deps[tool] === 'string') out.push([tool, deps[tool]]);
  });
  return out;
}
function requirements(v) {
  return ranges(v).filter(function (r) { return r[1] !== '' && r[1] !== '*'; }).map(function (r) { return r[0] + ' ' + r[1]; }).join(', ') || 'any';
}
function platforms(compat) {
  var list = Array.isArray(compat.platforms) ? compat.platforms : [];
  return list.map(function (p) {
    if (typeof p === 'string') return p;
    if (!isObject(p) || typeof p.name !== 'string') return '';
    return p.name + (p.supported === false ? ' (not supported' + (text(p.notes) ? ': ' + p.notes : '') + ')' : text(p.notes) ? ' (' + p.notes + ')' : '');
  }).filter(Boolean).join(', ');
}
function changes(v) {
  var compat = isObject(v.compatibility) ? v.compatibility : {};
  var span = el('span');
  if (compat.breaking === true) add(span, badge('breaking', 'breaking'), ' ');
  var deprecated = texts(compat.deprecated);
  var removed = texts(compat.removed);
  if (deprecated.length > 0) add(span, 'deprecated: ' + deprecated.join(', ') + ' ');
  if (removed.length > 0) add(span, 'removed: ' + removed.join(', '));
  if (!span.firstChild) span.textContent = '—';
  return span;
}
function compatibility(v) {
  var compat = isObject(v.compatibility) ? v.compatibility : {};
  var list = el('dl', 'facts');
  ranges(v).forEach(function (r) {
    fact(list, r[0] === 'methodology' ? 'Methodology' : r[0] === 'node' ? 'Node.js' : r[0], r[1] === '' || r[1] === '*' ? 'any' : r[1]);
  });
  fact(list, 'Platforms', platforms(compat) || 'any');
  fact(list, 'Breaking changes', compat.breaking === true ? add(el('span'), badge('breaking', 'breaking'), ' this version breaks projects made with earlier ones') : 'no');
  var deprecated = texts(compat.deprecated);
  var removed = texts(compat.removed);
  if (deprecated.length > 0) fact(list, 'Deprecated', deprecated.join(', '));
  if (removed.length > 0) fact(list, 'Removed', removed.join(', '));
  return list;
}

// ---- start
function fillOptions(select, counts, order, label) {
  var rows = document.createDocumentFragment();
  order.forEach(function (value) {
    if (!counts.has(value)) return;
    var text = label(value) + ' (' + formatNumber(counts.get(value)) + ')';
    var existing = optionOf(select, value);
    if (existing) existing.textContent = text; else rows.appendChild(option(value, text));
  });
  select.appendChild(rows);
}
function count(counts, value) { counts.set(value, (counts.get(value) || 0) + 1); }
function byCountThenName(counts) {
  return Array.from(counts.keys()).sort(function (a, b) { return counts.get(b) - counts.get(a) || compareText(a, b); });
}
function othersSorted(counts, known) {
  return Array.from(counts.keys()).filter(function (value) { return known.indexOf(value) === -1; }).sort(compareText);
}
/** The filters' options with their counts, and every search text: after the first results are shown. */
function prepareFilters() {
  var categories = new Map();
  var stabilities = new Map();
  var tags = new Map();
  var features = new Map();
  items.forEach(function (item) {
    searchTextOf(item);
    count(categories, item.category);
    count(stabilities, item.stability);
    item.tags.forEach(function (t) { count(tags, t); });
    item.features.forEach(function (f) { count(features, f); });
  });
  var known = Object.keys(categoryNames);
  fillOptions(ui.category, categories, known.concat(othersSorted(categories, known)), categoryName);
  fillOptions(ui.stability, stabilities, STABILITIES.concat(othersSorted(stabilities, STABILITIES)), String);
  fillOptions(ui.tag, tags, byCountThenName(tags), String);
  fillOptions(ui.feature, features, byCountThenName(features), String);
  ui.tag.disabled = tags.size === 0;
  ui.feature.disabled = features.size === 0;
  ui.category.value = state.category;
  ui.stability.value = state.stability;
}
function start(index) {
  if (!isObject(index) || index.formatVersion !== 1 || !Array.isArray(index.templates)) throw new Error('index.json is not a template index this page knows (formatVersion 1)');
  if (typeof index.templatePath === 'string' && index.templatePath.indexOf('{id}') !== -1 && safeUrl(index.templatePath) !== undefined) templatePath = index.templatePath;
  index.templates.forEach(function (raw) {
    var item = normalize(raw);
    if (item && !itemsById.has(item.id)) { items.push(item); itemsById.set(item.id, item); }
  });
  ui.summary.textContent = '';
  add(ui.summary, plural(items.length, 'template', 'templates'));
  if (typeof index.lastUpdated === 'string') add(ui.summary, ' · updated ', timeEl(index.lastUpdated));
  loaded = true;
  route();
  root.setAttribute('aria-busy', 'false');
  root.setAttribute('data-state', 'ready');
  performance.mark(FIRST_RESULTS_MARK);
  setTimeout(prepareFilters, 0);
}
function fail(error) {
  root.setAttribute('aria-busy', 'false');
  root.setAttribute('data-state', 'error');
  ui.count.className = 'error';
  ui.count.textContent = 'Could not load the list of templates (' + error.message + '). ';
  add(ui.count, link(registryUrl, 'The whole registry is in registry.json.'));
}

function init() {
  root = byId('catalog');
  ui = {
    q: byId('q'), category: byId('category'), stability: byId('stability'), tag: byId('tag'), feature: byId('feature'),
    sort: byId('sort'), count: byId('count'), chips: byId('chips'), clear: byId('clear'), results: byId('results'),
    more: byId('more'), empty: byId('empty'), listView: byId('list-view'), detailView: byId('detail-view'),
    summary: byId('summary'), useCli: byId('use-cli')
  };
  config = readConfig();
  baseTitle = document.title;
  registryUrl = typeof config.registryUrl === 'string' && safeUrl(config.registryUrl) !== undefined
    ? new URL(config.registryUrl, pageUrl).href
    : new URL('registry.json', pageUrl).href;
  (Array.isArray(config.categories) ? config.categories : []).forEach(function (c) {
    if (c && typeof c.id === 'string' && typeof c.name === 'string') categoryNames[c.id] = c.name;
  });
  ui.useCli.appendChild(commandBlock('the command that points the CLI at this registry', useRegistryCommand()));
  ui.q.addEventListener('input', function () { typed(ui.q.value); });
  document.addEventListener('click', flushUrl, true);
  window.addEventListener('pagehide', flushUrl);
  [['category', 'category'], ['stability', 'stability'], ['sort', 'sort']].forEach(function (pair) {
    ui[pair[0]].addEventListener('change', function (event) {
      var value = event.target.value;
      go(stateHash(withState(function (s) { s[pair[1]] = value; })), false);
    });
  });
  [['tag', 'tags'], ['feature', 'features']].forEach(function (pair) {
    ui[pair[0]].addEventListener('change', function (event) {
      var value = event.target.value;
      event.target.value = '';
      if (value === '' || state[pair[1]].indexOf(value) !== -1) return;
      go(stateHash(withState(function (s) { s[pair[1]].push(value); })), false);
    });
  });
  ui.results.addEventListener('click', function (event) {
    var button = event.target.closest('button[data-tag], button[data-feature]');
    if (!button) return;
    var tag = button.getAttribute('data-tag');
    var feature = button.getAttribute('data-feature');
    go(stateHash(withState(function (s) {
      if (tag !== null && s.tags.indexOf(tag) === -1) s.tags.push(tag);
      if (feature !== null && s.features.indexOf(feature) === -1) s.features.push(feature);
    })), false);
  });
  ui.more.addEventListener('click', function () {
    var from = shown;
    shown += PAGE_SIZE;
    drawRows(from);
    var next = ui.results.children[from];
    if (next) next.querySelector('a').focus();
  });
  ui.clear.addEventListener('click', function () { go('', false); });
  ui.empty.querySelector('button').addEventListener('click', function () { go('', false); });
  window.addEventListener('popstate', route);
  window.addEventListener('hashchange', route);
  indexRequest.then(start).catch(fail);
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init); else init();
})();
`;
