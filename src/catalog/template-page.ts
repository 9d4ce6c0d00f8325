/**
 * The page of one template, below its name: the facts, the commands to create a project, its
 * README, the questions `create` asks, and every version with what it requires and its change log
 * section. Drawn from the template's file (`templates/<id>.json`: its entries, and `page`, see
 * page-text.ts) and the template's line of index.json. Only the runtimes an entry declares are
 * shown (none when it declares none).
 */
import { REGISTRY_URL_ENV } from '../core/env-names.js';
import { formatNumber, shellWord, sizeText } from './format.js';
import { detailHash, isObject, stateHash, defaultState, type CatalogItem } from './list.js';
import { renderMarkdown } from './markdown.js';
import type { PageQuestion, TemplatePageText } from './page-text.js';
import { badge, commandBlock, link, timeView, type ViewContext } from './parts.js';
import { h, type View, type ViewChild, type ViewElement } from './view.js';

/** One version's entry as the template's file has it (strangers' data: read field by field). */
export type RawEntry = Record<string, unknown>;

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const texts = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);
const objectOf = (value: unknown): Record<string, unknown> => (isObject(value) ? value : {});

/** A range that says something: not empty, not `*`. */
const declared = (range: string): boolean => range.trim() !== '' && range.trim() !== '*';

/** The runtimes a version declares (its `dependencies`, or its compatibility lists): [name, range]. */
function declaredRuntimes(entry: RawEntry): [string, string][] {
  const compatibility = objectOf(entry.compatibility);
  const dependencies = objectOf(entry.dependencies);
  const methodology = texts(compatibility.methodologyVersions).filter(declared);
  const node = texts(compatibility.nodeVersions).filter(declared);
  const out: [string, string][] = [];
  const methodologyRange = methodology.length > 0 ? methodology.join(' || ') : text(dependencies.methodology);
  const nodeRange = node.length > 0 ? node.join(' || ') : text(dependencies.node);
  if (declared(methodologyRange)) out.push(['methodology', methodologyRange]);
  if (declared(nodeRange)) out.push(['node', nodeRange]);
  for (const tool of Object.keys(dependencies).sort()) {
    const range = dependencies[tool];
    if (tool !== 'methodology' && tool !== 'node' && typeof range === 'string' && declared(range)) out.push([tool, range]);
  }
  return out;
}

const RUNTIME_LABELS: Record<string, string> = { methodology: 'Methodology', node: 'Node.js' };

function fact(label: string, value: ViewChild): ViewChild[] {
  if (value === null || value === undefined || value === false || value === '') return [];
  return [h('dt', null, label), h('dd', null, value)];
}

function joined(nodes: readonly ViewElement[]): ViewElement | null {
  if (nodes.length === 0) return null;
  return h(
    'span',
    null,
    nodes.map((node, k) => [k > 0 ? ', ' : '', node]),
  );
}

function filterLink(kind: 'tag' | 'feature', value: string): ViewElement {
  const state = defaultState();
  if (kind === 'tag') state.tags = [value];
  else state.features = [value];
  return h('a', { href: stateHash(state) }, value);
}

function platforms(compatibility: Record<string, unknown>): string {
  const list = Array.isArray(compatibility.platforms) ? compatibility.platforms : [];
  return list
    .map((platform: unknown) => {
      if (typeof platform === 'string') return platform;
      if (!isObject(platform) || typeof platform.name !== 'string') return '';
      const notes = text(platform.notes);
      if (platform.supported === false) return `${platform.name} (not supported${notes ? `: ${notes}` : ''})`;
      return notes ? `${platform.name} (${notes})` : platform.name;
    })
    .filter(Boolean)
    .join(', ');
}

function compatibilityFacts(entry: RawEntry): ViewElement {
  const compatibility = objectOf(entry.compatibility);
  const deprecated = texts(compatibility.deprecated);
  const removed = texts(compatibility.removed);
  return h(
    'dl',
    { class: 'facts' },
    declaredRuntimes(entry).map(([tool, range]) => fact(RUNTIME_LABELS[tool] ?? tool, range)),
    fact('Platforms', platforms(compatibility)),
    fact('Breaking changes', compatibility.breaking === true ? h('span', null, badge('breaking', 'breaking'), ' this version breaks projects made with earlier ones') : 'no'),
    deprecated.length > 0 ? fact('Deprecated', deprecated.join(', ')) : null,
    removed.length > 0 ? fact('Removed', removed.join(', ')) : null,
  );
}

/** "methodology >=1.2 <2, node >=20"; '—' when the version declares none. */
function requirementsText(entry: RawEntry): string {
  return (
    declaredRuntimes(entry)
      .map(([tool, range]) => `${tool} ${range}`)
      .join(', ') || '—'
  );
}

/** What changed in a version: breaking, deprecated and removed, then its change log section. */
function changesCell(entry: RawEntry, notes: string | undefined): ViewChild[] {
  const compatibility = objectOf(entry.compatibility);
  const deprecated = texts(compatibility.deprecated);
  const removed = texts(compatibility.removed);
  const marks: ViewChild[] = [
    compatibility.breaking === true ? [badge('breaking', 'breaking'), ' '] : null,
    deprecated.length > 0 ? `deprecated: ${deprecated.join(', ')} ` : null,
    removed.length > 0 ? `removed: ${removed.join(', ')}` : null,
  ];
  const section = notes === undefined ? null : h('details', { class: 'notes' }, h('summary', null, 'Change log'), h('div', { class: 'markdown' }, renderMarkdown(notes, { headingLevel: 5 })));
  if (marks.every((mark) => mark === null) && section === null) return ['—'];
  return [h('span', null, marks), section];
}

const KINDS: Record<string, string> = { input: 'text', confirm: 'yes or no', select: 'one of', multiselect: 'any of' };

function questionRow(question: PageQuestion): ViewElement {
  const kind = KINDS[question.type] ?? question.type;
  return h(
    'tr',
    null,
    h('th', { scope: 'row' }, question.message, question.help ? [h('br'), h('small', { class: 'muted' }, question.help)] : null),
    h('td', null, h('code', null, question.name)),
    h('td', null, question.choices ? `${kind}: ${question.choices.join(', ')}` : kind),
    h('td', null, question.default ?? '—'),
  );
}

function questionsSection(questions: readonly PageQuestion[]): ViewElement[] {
  return [
    h('h3', null, questions.length === 1 ? 'The question create asks' : `The ${questions.length} questions create asks`),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'questions' },
        h('thead', null, h('tr', null, ['Question', 'Variable', 'Answer', 'Default'].map((title) => h('th', { scope: 'col' }, title)))),
        h('tbody', null, questions.map(questionRow)),
      ),
    ),
  ];
}

function readmeSection(page: TemplatePageText, shownVersion: string): ViewElement[] {
  const of = page.version === shownVersion ? 'README' : `README of ${page.version}`;
  return [
    h('h3', null, of),
    h('div', { class: 'markdown readme' }, renderMarkdown(page.readme ?? '', { headingLevel: 4 }), page.readmeCut ? h('p', { class: 'muted' }, '(The README is longer: the rest is in the template.)') : null),
  ];
}

/** Who built a version, as its provenance (verified by the registry) says, linking to the run. */
function provenanceFact(entry: RawEntry, base: string): ViewChild[] {
  const publisher = objectOf(entry.publisher);
  const repository = text(publisher.repository);
  const workflow = text(publisher.workflow);
  if (!repository || !workflow) return [];
  const builtBy = `built by ${repository} @ ${workflow}`;
  return fact('Provenance', link(publisher.runUrl, builtBy, base) ?? builtBy);
}

/** Whether `url` is this very page of template `id` (a documentationUrl pointing back at the catalog). */
function isThisPage(url: string, id: string, context: ViewContext): boolean {
  try {
    const target = new URL(url, context.registryUrl);
    return target.origin === new URL(context.pageUrl).origin && target.hash === detailHash(id);
  } catch {
    return false;
  }
}

/**
 * The page of `item` below its heading and description: `versions` are the entries of its file,
 * highest version first; `page` the file's `page`.
 */
export function templatePage(item: CatalogItem, versions: readonly RawEntry[], page: TemplatePageText | undefined, context: ViewContext): View[] {
  const latest = versions.find((entry) => entry.version === item.version) ?? versions[0] ?? {};
  const author = objectOf(latest.author);
  const authorName = [text(author.name), text(author.organization)].filter(Boolean).join(', ');
  const repository = text(latest.repositoryUrl);
  const documentation = text(latest.documentationUrl);
  const base = context.registryUrl;
  const facts = h(
    'dl',
    { class: 'facts' },
    fact('Category', context.categoryName(item.category)),
    fact('Author', authorName ? (link(author.url, authorName, base) ?? authorName) : ''),
    fact('License', text(latest.license)),
    fact('Downloads', `${formatNumber(item.downloads)} (all versions)`),
    item.updatedAt ? fact('Updated', timeView(item.updatedAt, context.now)) : null,
    fact('Repository', link(repository, repository, base)),
    provenanceFact(latest, base),
    documentation !== repository && !isThisPage(documentation, item.id, context) ? fact('Documentation', link(documentation, documentation, base)) : null,
    fact('Tags', joined(item.tags.map((tag) => filterLink('tag', tag)))),
    fact('Features', joined(item.features.map((feature) => filterLink('feature', feature)))),
  );
  const about = h('div', null, facts, h('h3', null, `Compatibility of ${text(latest.version)}`), compatibilityFacts(latest));
  const use = h(
    'div',
    null,
    h('h3', null, 'Create a project'),
    h('p', { class: 'muted' }, 'Point the template-registry CLI at this registry (once per shell):'),
    commandBlock('the command that points the CLI at this registry', `export ${REGISTRY_URL_ENV}=${shellWord(context.registryUrl)}`),
    h('p', { class: 'muted' }, 'then create a project from the latest version:'),
    commandBlock('the create command', `template-registry create ${shellWord(item.id)}`),
    h('p', { class: 'muted' }, 'or from a given version: ', h('code', null, `template-registry create ${shellWord(`${item.id}@${item.version}`)}`), '.'),
  );
  // The version lifecycle: a deprecated latest version says why (its deprecationMessage).
  const notice =
    text(latest.stability) === 'deprecated' ? h('p', { class: 'notice' }, badge('deprecated', 'stability-deprecated'), ` ${text(latest.deprecationMessage) || 'This version is deprecated.'}`) : null;

  const rows = versions.map((entry) => {
    const version = text(entry.version);
    const stability = h('td', null, text(entry.stability), text(entry.deprecationMessage) ? [h('br'), h('small', { class: 'muted' }, text(entry.deprecationMessage))] : null);
    return h(
      'tr',
      null,
      h(
        'th',
        { scope: 'row' },
        version,
        version === item.version ? badge('latest') : null,
        // Yanked versions stay listed here (still downloadable by exact version), marked.
        entry.yanked === true ? badge('yanked', 'breaking') : null,
      ),
      stability,
      h('td', null, timeView(text(entry.createdAt) || text(entry.updatedAt), context.now)),
      h('td', null, requirementsText(entry)),
      h('td', null, changesCell(entry, page?.changes?.[version])),
      h('td', null, link(entry.downloadUrl, `Download${sizeText(entry.size)}`, base) ?? '—'),
    );
  });
  const table = h(
    'table',
    null,
    h('thead', null, h('tr', null, ['Version', 'Stability', 'Published', 'Requires', 'Changes', 'Archive'].map((title) => h('th', { scope: 'col' }, title)))),
    h('tbody', null, rows),
  );

  return [
    notice,
    h('div', { class: 'detail-grid' }, about, use),
    page?.readme ? readmeSection(page, item.version) : null,
    page?.questions ? questionsSection(page.questions) : null,
    h('h3', null, versions.length === 1 ? '1 version' : `${versions.length} versions`),
    h('div', { class: 'table-wrap' }, table),
  ].flat().filter((view): view is ViewElement => view !== null);
}
