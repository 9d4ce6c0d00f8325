/**
 * The catalog page's script (bundled by scripts/build-catalog.js, inline, allowed by its hash in
 * the page's CSP). The generator wrote the first page of the default list into the page; this
 * script asks for `index.json` beside the page at once, then lists, searches, filters and sorts it,
 * and loads `templates/<id>.json` for the page of one template. Every URL is relative to the page,
 * so it works from any static host under any path prefix.
 *
 * What it shows comes from manifests written by strangers: views (../view.ts) become DOM nodes
 * through createElement, setAttribute and text nodes only, links are made from http(s) or relative
 * URLs only. Only the visible rows are in the DOM (PAGE_SIZE at a time, "Show more" adds the next
 * ones). The view (search, filters, sort, or the template shown) lives in the URL fragment: a view
 * can be linked, and Back returns to the last one.
 */
import { REGISTRY_URL_ENV } from '../../core/env-names.js';
import { compareText } from '../../core/listing.js';
import { columnsToLines } from '../../core/registry-index.js';
import { humanDate, plural, shellWord } from '../format.js';
import { safeUrl } from '../html.js';
import { cards, countText, FIRST_RESULTS_MARK, moreText, PAGE_SIZE, titleBadges } from '../list-view.js';
import { CatalogList, defaultState, detailHash, detailIdOf, isFiltered, isObject, parseState, readItem, SORTS, stabilityOptions, stateHash, type CatalogItem, type ListState, type SortName } from '../list.js';
import { readPageText } from '../page-text.js';
import { commandBlock, timeView, type ViewContext } from '../parts.js';
import { templatePage, type RawEntry } from '../template-page.js';
import { h } from '../view.js';
import { append, fragmentOf, toDom } from './dom.js';

const pageUrl = location.href.split('#')[0] as string;
const indexUrl = new URL('index.json', pageUrl).href;
// The list is asked for while the rest of the page is still being parsed: the script runs from
// <head>; everything that needs the page waits for init.
const indexResponse: Promise<Response> = fetch(indexUrl);
indexResponse.catch(() => undefined); // reported by init, once the page is there to say it
/** index.json read (set by init): parsing megabytes holds the main thread, so not before the first results are painted. */
let indexRequest: Promise<unknown> = Promise.resolve();

/** After the next frame is painted. */
const afterPaint = (): Promise<void> => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));

async function readIndex(waitForPaint: boolean): Promise<unknown> {
  if (waitForPaint) await afterPaint();
  const response = await indexResponse;
  if (!response.ok) throw new Error(`HTTP ${response.status} for index.json`);
  return response.json() as Promise<unknown>;
}

interface Ui {
  root: HTMLElement;
  q: HTMLInputElement;
  category: HTMLSelectElement;
  stability: HTMLSelectElement;
  tag: HTMLSelectElement;
  feature: HTMLSelectElement;
  sort: HTMLSelectElement;
  count: HTMLElement;
  chips: HTMLElement;
  clear: HTMLButtonElement;
  results: HTMLElement;
  more: HTMLButtonElement;
  empty: HTMLElement;
  listView: HTMLElement;
  detailView: HTMLElement;
  summary: HTMLElement;
  useCli: HTMLElement;
}

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the catalog page has no #${id}`);
  return node as T;
}

let ui: Ui;
let baseTitle = '';
let registryUrl = '';
const categoryNames = new Map<string, string>();
let catalog: CatalogList | undefined;
let templatePath = 'templates/{id}.json';
const templateFiles = new Map<string, Promise<{ versions: RawEntry[]; page: ReturnType<typeof readPageText> }>>();
let state: ListState = defaultState();
let matches: readonly CatalogItem[] = [];
let shown = 0;
/** The state the list shows ('' for the default list); null when none is drawn. */
let listKey: string | null = null;
let routed: string | null = null;
let listHash = '';
let listScroll = 0;
let cameFromList = false;
let lastDetailId: string | null = null;
let detailToken = 0;
let marked = false;

const categoryName = (id: string): string => categoryNames.get(id) ?? id;
const context = (): ViewContext => ({ categoryName, now: Date.now(), registryUrl, pageUrl });

function markFirstResults(): void {
  if (marked) return;
  marked = true;
  performance.mark(FIRST_RESULTS_MARK);
}

function readConfig(root: HTMLElement): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(root.getAttribute('data-config') ?? '{}');
    return isObject(value) ? value : {};
  } catch {
    return {};
  }
}

function withState(change: (next: ListState) => void): ListState {
  const next: ListState = { ...state, tags: [...state.tags], features: [...state.features] };
  change(next);
  return next;
}

// ---- navigation
function go(hash: string, replace: boolean): void {
  flushUrl();
  const url = hash || location.pathname + location.search;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  route();
}

// Typing updates the list at once and the URL a moment later: a history update on every key
// would cost more than the search. Anything that navigates writes it first (flushUrl).
let urlTimer: ReturnType<typeof setTimeout> | null = null;
let typedHash = '';
function typed(q: string): void {
  state = withState((next) => (next.q = q));
  typedHash = stateHash(state);
  showList();
  if (urlTimer !== null) clearTimeout(urlTimer);
  urlTimer = setTimeout(flushUrl, 300);
}
function flushUrl(): void {
  if (urlTimer === null) return;
  clearTimeout(urlTimer);
  urlTimer = null;
  history.replaceState(null, '', typedHash || location.pathname + location.search);
  routed = typedHash;
  listHash = typedHash;
}
function route(): void {
  if (!catalog) return;
  if (urlTimer !== null) {
    clearTimeout(urlTimer);
    urlTimer = null;
  }
  const hash = location.hash === '#' ? '' : location.hash;
  if (hash === routed) return;
  const fromList = routed !== null && detailIdOf(routed) === null;
  routed = hash;
  const id = detailIdOf(hash);
  if (id !== null) {
    if (fromList) {
      listScroll = window.scrollY;
      cameFromList = true;
    }
    showDetail(id);
  } else {
    listHash = hash;
    state = parseState(hash.slice(1));
    showList();
  }
}

// ---- the list
function drawRows(from: number): void {
  const end = Math.min(shown, matches.length);
  const rows = fragmentOf(cards(matches, from, end, context()));
  if (from === 0) ui.results.textContent = '';
  ui.results.appendChild(rows);
  const left = matches.length - end;
  ui.more.hidden = left <= 0;
  ui.more.textContent = moreText(left);
}
function drawCount(): void {
  const total = catalog?.items.length ?? 0;
  ui.count.textContent = countText(matches.length, total);
  ui.empty.hidden = matches.length !== 0;
}
function drawChips(): void {
  ui.chips.textContent = '';
  const chip = (kind: 'tag' | 'feature', value: string): void => {
    const button = toDom(h('button', { type: 'button', class: 'chip', 'aria-label': `Remove the ${kind} filter ${value}` }, `${kind}: ${value} ×`));
    button.addEventListener('click', () => {
      go(
        stateHash(
          withState((next) => {
            if (kind === 'tag') next.tags = next.tags.filter((tag) => tag !== value);
            else next.features = next.features.filter((feature) => feature !== value);
          }),
        ),
        false,
      );
    });
    ui.chips.appendChild(append(document.createElement('li'), button));
  };
  for (const tag of state.tags) chip('tag', tag);
  for (const feature of state.features) chip('feature', feature);
  ui.clear.hidden = !isFiltered(state);
}
function optionOf(select: HTMLSelectElement, value: string): HTMLOptionElement | undefined {
  return Array.from(select.options).find((option) => option.value === value);
}
function option(value: string, label: string): HTMLOptionElement {
  const node = document.createElement('option');
  node.value = value;
  node.textContent = label;
  return node;
}
function setSelect(select: HTMLSelectElement, value: string, label: string): void {
  if (value !== '' && !optionOf(select, value)) select.appendChild(option(value, label));
  select.value = value;
}
function syncControls(): void {
  if (ui.q.value !== state.q) ui.q.value = state.q;
  setSelect(ui.category, state.category, categoryName(state.category));
  setSelect(ui.stability, state.stability, state.stability);
  ui.sort.value = state.sort;
}
function showList(): void {
  detailToken++; // a template's page still loading is not drawn any more
  ui.detailView.hidden = true;
  ui.detailView.textContent = '';
  ui.listView.hidden = false;
  document.title = baseTitle;
  syncControls();
  if (!catalog) return;
  const key = stateHash(state);
  if (key !== listKey) {
    listKey = key;
    matches = catalog.find(state);
    shown = PAGE_SIZE;
    // A card link that has the focus keeps it when its card is drawn again.
    const focused = document.activeElement instanceof HTMLAnchorElement && ui.results.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null;
    drawRows(0);
    drawCount();
    drawChips();
    if (focused !== null) ui.results.querySelector<HTMLAnchorElement>(`a[href="${CSS.escape(focused)}"]`)?.focus({ preventScroll: true });
  }
  if (lastDetailId !== null) {
    window.scrollTo(0, listScroll);
    ui.results.querySelector<HTMLAnchorElement>(`a[href="${CSS.escape(detailHash(lastDetailId))}"]`)?.focus({ preventScroll: true });
    lastDetailId = null;
  }
}

// ---- the page of one template
function loadTemplate(id: string): Promise<{ versions: RawEntry[]; page: ReturnType<typeof readPageText> }> {
  let file = templateFiles.get(id);
  if (!file) {
    const url = new URL(templatePath.split('{id}').join(encodeURIComponent(id)), indexUrl).href;
    file = fetch(url)
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status} for ${url}`);
        return response.json() as Promise<unknown>;
      })
      .then((json) => {
        if (!isObject(json) || !Array.isArray(json.versions) || (json.id !== undefined && json.id !== id)) throw new Error(`${url} is not the file of ${id}`);
        // The generator writes versions in document order (lowest first); the page lists the highest first.
        const versions = json.versions.filter((entry): entry is RawEntry => isObject(entry) && typeof entry.version === 'string' && (entry.id === undefined || entry.id === id)).reverse();
        return { versions, page: readPageText(json.page) };
      });
    file.catch(() => templateFiles.delete(id));
    templateFiles.set(id, file);
  }
  return file;
}
function showDetail(id: string): void {
  const token = ++detailToken;
  lastDetailId = id;
  ui.listView.hidden = true;
  const view = ui.detailView;
  view.hidden = false;
  view.textContent = '';
  const back = toDom(h('a', { href: listHash || '#' }, '← All templates'));
  back.addEventListener('click', (event) => {
    event.preventDefault();
    if (cameFromList) history.back();
    else go(listHash, false);
  });
  view.appendChild(append(document.createElement('p'), back));
  const item = catalog?.byId.get(id);
  const heading = document.createElement('h2');
  heading.tabIndex = -1;
  view.appendChild(heading);
  window.scrollTo(0, 0);
  if (!item) {
    heading.textContent = 'Template not found';
    append(view, h('p', null, `This registry has no template ${JSON.stringify(id)}.`));
    document.title = `Not found · ${baseTitle}`;
    heading.focus();
    return;
  }
  document.title = `${item.name} · ${baseTitle}`;
  append(heading, item.name, ...titleBadges(item));
  append(view, h('p', null, item.description));
  const status = toDom(h('p', { class: 'muted', role: 'status' }, 'Loading the versions…')) as HTMLElement;
  view.appendChild(status);
  heading.focus();
  loadTemplate(id).then(
    ({ versions, page }) => {
      if (token !== detailToken) return;
      status.remove();
      view.appendChild(fragmentOf(templatePage(item, versions, page, context())));
    },
    (error: unknown) => {
      if (token !== detailToken) return;
      status.className = 'error';
      status.textContent = `Could not load the versions of ${item.id}: ${error instanceof Error ? error.message : String(error)}`;
    },
  );
}

// ---- copying a command
function copy(button: HTMLElement): void {
  const value = button.getAttribute('data-copy') ?? '';
  const code = button.parentElement?.querySelector('code');
  const done = (message: string): void => {
    button.textContent = message;
    setTimeout(() => (button.textContent = 'Copy'), 2000);
  };
  const selectIt = (): void => {
    if (!code) return;
    const range = document.createRange();
    range.selectNodeContents(code);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    done('Press Ctrl+C');
  };
  if (typeof navigator.clipboard?.writeText === 'function') navigator.clipboard.writeText(value).then(() => done('Copied'), selectIt);
  else selectIt();
}

// ---- start
function fillOptions(select: HTMLSelectElement, counts: ReadonlyMap<string, number>, order: readonly string[], label: (value: string) => string): void {
  const rows = document.createDocumentFragment();
  for (const value of order) {
    const count = counts.get(value);
    if (count === undefined) continue;
    const text = `${label(value)} (${count.toLocaleString('en-US')})`;
    const existing = optionOf(select, value);
    if (existing) existing.textContent = text;
    else rows.appendChild(option(value, text));
  }
  select.appendChild(rows);
}
const tally = (counts: Map<string, number>, value: string): void => {
  counts.set(value, (counts.get(value) ?? 0) + 1);
};
const byCountThenName = (counts: ReadonlyMap<string, number>): string[] => [...counts.keys()].sort((a, b) => (counts.get(b) ?? 0) - (counts.get(a) ?? 0) || compareText(a, b));

/** The filters' options with their counts, and the search's index: after the first results are shown. */
function prepareFilters(list: CatalogList): void {
  const categories = new Map<string, number>();
  const stabilities = new Map<string, number>();
  const tags = new Map<string, number>();
  const features = new Map<string, number>();
  for (const item of list.items) {
    tally(categories, item.category);
    tally(stabilities, item.stability);
    for (const tag of item.tags) tally(tags, tag);
    for (const feature of item.features) tally(features, feature);
  }
  const known = [...categoryNames.keys()];
  fillOptions(ui.category, categories, [...known, ...[...categories.keys()].filter((id) => !categoryNames.has(id)).sort(compareText)], categoryName);
  fillOptions(ui.stability, stabilities, stabilityOptions(stabilities.keys()), String);
  fillOptions(ui.tag, tags, byCountThenName(tags), String);
  fillOptions(ui.feature, features, byCountThenName(features), String);
  ui.tag.disabled = tags.size === 0;
  ui.feature.disabled = features.size === 0;
  ui.category.value = state.category;
  ui.stability.value = state.stability;
  list.prepareSearch();
}

function start(read: unknown): void {
  let index = read;
  // index.json's columns layout (formatVersion 2, core/registry-index.ts) as the lines this page reads.
  if (isObject(index) && index.formatVersion === 2) {
    const lines = columnsToLines(index.columns);
    if (typeof lines === 'string') throw new Error(`index.json: ${lines}`);
    index = { formatVersion: 1, lastUpdated: index.lastUpdated, templatePath: index.templatePath, templates: lines };
  }
  if (!isObject(index) || index.formatVersion !== 1 || !Array.isArray(index.templates)) throw new Error('index.json is not a template index this page knows (formatVersion 1)');
  if (typeof index.templatePath === 'string' && index.templatePath.includes('{id}') && safeUrl(index.templatePath) !== undefined) templatePath = index.templatePath;
  const list = new CatalogList(index.templates.map(readItem).filter((item): item is CatalogItem => item !== null));
  catalog = list;
  ui.summary.textContent = '';
  append(ui.summary, plural(list.items.length, 'template', 'templates'));
  if (typeof index.lastUpdated === 'string') append(ui.summary, ' · updated ', timeView(index.lastUpdated, Date.now()));
  // What was typed while the list loaded is the view to show.
  flushUrl();
  routed = null;
  listKey = null;
  route();
  ui.root.setAttribute('aria-busy', 'false');
  ui.root.setAttribute('data-state', 'ready');
  markFirstResults();
  setTimeout(() => prepareFilters(list), 0);
}
function fail(error: unknown): void {
  ui.root.setAttribute('aria-busy', 'false');
  ui.root.setAttribute('data-state', 'error');
  ui.count.className = 'error';
  ui.count.textContent = `Could not load the list of templates (${error instanceof Error ? error.message : String(error)}). `;
  const whole = h('a', { href: registryUrl, rel: 'nofollow noopener noreferrer' }, 'The whole registry is in registry.json.');
  append(ui.count, whole);
}

/** The dates of the list the generator drew, written for now ("3 days ago"), as the script writes them. */
function refreshDates(root: HTMLElement): void {
  const now = Date.now();
  for (const time of Array.from(root.querySelectorAll('time[datetime]'))) {
    const at = Date.parse(time.getAttribute('datetime') ?? '');
    if (!Number.isNaN(at)) time.textContent = humanDate(at, now);
  }
}

function init(): void {
  ui = {
    root: byId('catalog'),
    q: byId('q'),
    category: byId('category'),
    stability: byId('stability'),
    tag: byId('tag'),
    feature: byId('feature'),
    sort: byId('sort'),
    count: byId('count'),
    chips: byId('chips'),
    clear: byId('clear'),
    results: byId('results'),
    more: byId('more'),
    empty: byId('empty'),
    listView: byId('list-view'),
    detailView: byId('detail-view'),
    summary: byId('summary'),
    useCli: byId('use-cli'),
  };
  const config = readConfig(ui.root);
  baseTitle = document.title;
  registryUrl = typeof config.registryUrl === 'string' && safeUrl(config.registryUrl) !== undefined ? new URL(config.registryUrl, pageUrl).href : new URL('registry.json', pageUrl).href;
  for (const category of Array.isArray(config.categories) ? config.categories : []) {
    if (isObject(category) && typeof category.id === 'string' && typeof category.name === 'string') categoryNames.set(category.id, category.name);
  }
  ui.useCli.appendChild(toDom(commandBlock('the command that points the CLI at this registry', `${REGISTRY_URL_ENV}=${shellWord(registryUrl)} template-registry list`)));

  // The first page of the default list is already there (the generator drew it); any other view waits for the list.
  const hash = location.hash === '#' ? '' : location.hash;
  const drawn = hash === '' && ui.results.children.length > 0;
  if (drawn) {
    refreshDates(ui.results);
    listKey = '';
    markFirstResults();
  }
  indexRequest = readIndex(drawn);
  if (!drawn) {
    ui.results.textContent = '';
    ui.more.hidden = true;
    ui.count.textContent = 'Loading the templates…';
    if (detailIdOf(hash) !== null) ui.listView.hidden = true;
  }

  ui.q.addEventListener('input', () => typed(ui.q.value));
  document.addEventListener('click', flushUrl, true);
  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest<HTMLElement>('button[data-copy]') : null;
    if (button) copy(button);
  });
  window.addEventListener('pagehide', flushUrl);
  for (const [control, field] of [
    [ui.category, 'category'],
    [ui.stability, 'stability'],
    [ui.sort, 'sort'],
  ] as const) {
    control.addEventListener('change', () => {
      const value = control.value;
      go(
        stateHash(
          withState((next) => {
            if (field !== 'sort') next[field] = value;
            else next.sort = (SORTS as readonly string[]).includes(value) ? (value as SortName) : 'popular';
          }),
        ),
        false,
      );
    });
  }
  for (const [control, field] of [
    [ui.tag, 'tags'],
    [ui.feature, 'features'],
  ] as const) {
    control.addEventListener('change', () => {
      const value = control.value;
      control.value = '';
      if (value === '' || state[field].includes(value)) return;
      go(stateHash(withState((next) => next[field].push(value))), false);
    });
  }
  ui.results.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-tag], button[data-feature]') : null;
    if (!button) return;
    const tag = button.getAttribute('data-tag');
    const feature = button.getAttribute('data-feature');
    go(
      stateHash(
        withState((next) => {
          if (tag !== null && !next.tags.includes(tag)) next.tags.push(tag);
          if (feature !== null && !next.features.includes(feature)) next.features.push(feature);
        }),
      ),
      false,
    );
  });
  ui.more.addEventListener('click', () => {
    // Before the list is loaded, the button the generator drew waits for it.
    void indexRequest.then(() => {
      if (!catalog) return;
      const from = shown;
      shown += PAGE_SIZE;
      drawRows(from);
      ui.results.children[from]?.querySelector('a')?.focus();
    });
  });
  ui.clear.addEventListener('click', () => go('', false));
  ui.empty.querySelector('button')?.addEventListener('click', () => go('', false));
  window.addEventListener('popstate', route);
  window.addEventListener('hashchange', route);
  indexRequest.then(start).catch(fail);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
else init();
