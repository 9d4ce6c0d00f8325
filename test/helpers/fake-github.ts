/**
 * The fake GitHub REST API of the tests, on 127.0.0.1: one server for the three parts of GitHub the
 * code talks to (point Octokit, the actions through GITHUB_API_URL, or the registry's GitHub source at
 * `url`). It answers with bodies shaped like GitHub's and behaves like GitHub where that matters:
 *
 * Releases (the publish action's release code; valid against the OpenAPI extract in test/fixtures):
 * - `GET /releases` lists drafts too, newest first, paginated (`per_page` ≤ 100, `page`, a `Link`
 *   header with rel="next"/"last", which Octokit's paginate follows);
 * - `GET /releases/tags/{tag}` answers 404 for drafts;
 * - several drafts may share a tag name (as on GitHub: this is how a naive re-run ends up with
 *   duplicate drafts); creating or publishing a release whose tag already has a published release
 *   answers 422 `already_exists`;
 * - uploads go to `${url}/upload/repos/{o}/{r}/releases/{id}/assets?name=…` (the `upload_url`
 *   template), need a Content-Length (411 otherwise), answer 422 `already_exists` for a name the
 *   release already has, and keep size and sha256 (GitHub's `digest`) of the bytes received.
 *
 * Repositories added with `addRepo` (the registry's GitHub releases source), read-only:
 * - `GET /repos/{o}/{r}` answers `html_url`, `stargazers_count`, `forks_count`, `open_issues_count`;
 * - `GET /repos/{o}/{r}/releases` lists the releases given by `addRepoRelease`, whose assets carry
 *   `download_count`; `GET .../releases/assets/{id}` with `Accept: application/octet-stream`
 *   redirects (302) to a download URL that serves the bytes and needs no token;
 * - `failRepo(fullName, status)` makes every request about that repository answer `status`
 *   (`'drop'` closes the connection instead).
 *
 * Pull requests (the sync action):
 * - `GET /repos/{o}/{r}` of `options.owner`/`options.repo` answers its `default_branch`; of another
 *   repository not added with `addRepo`, 404;
 * - `GET /pulls` filters by `state` (default open) and `head` (`owner:branch`), paginated;
 * - creating a pull request answers 422 when the head branch does not exist (`branchExists`) or
 *   an open pull request already has the same head and base;
 * - adding labels creates the ones the repository lacks; removing one it lacks answers 404; comments.
 *
 * Every API request needs `Authorization: token X` or `Bearer X` (and X must be `options.token` when
 * given), 401 otherwise. `fail(plan)` makes the next requests (optionally only those matching a method
 * and path) answer with the given statuses instead, e.g. `fail([500])`, or `fail([{ status: 403,
 * headers: {…} }])` for a rate limit. Every request is recorded in `requests`, failed ones included.
 *
 * `memoryReleaseApi()` is the same releases without HTTP: a `ReleaseApi` in memory, for the action's
 * tests that inject one (`run({ releaseApi })`) rather than go through Octokit.
 */
import { createHash } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import type { GitHubRelease, GitHubReleaseAsset, ReleaseApi } from '../../src/github/index.js';

/** A release in memory with its assets. */
export type MemoryRelease = GitHubRelease & { assets: GitHubReleaseAsset[] };

/**
 * A `ReleaseApi` in memory: releases numbered from 1 in creation order, found by tag, updated in
 * place; an uploaded asset is listed on its release (id 100 + the release's) until deleted.
 */
export function memoryReleaseApi(): { api: ReleaseApi; releases: MemoryRelease[] } {
  const releases: MemoryRelease[] = [];
  const api: ReleaseApi = {
    findReleaseByTag: (tag) => Promise.resolve(releases.find((r) => r.tag_name === tag)),
    createRelease: ({ tag, name, body, draft }) => {
      const release: MemoryRelease = { id: releases.length + 1, tag_name: tag, name, body, draft, html_url: `https://github.test/r/${tag}`, upload_url: 'https://uploads.test{?name}', assets: [] };
      releases.push(release);
      return Promise.resolve(release);
    },
    updateRelease: (id, input) => Promise.resolve(Object.assign(releases.find((r) => r.id === id)!, input)),
    listAssets: (id) => Promise.resolve([...(releases.find((r) => r.id === id)?.assets ?? [])]),
    deleteAsset: (assetId) => {
      for (const release of releases) release.assets = release.assets.filter((asset) => asset.id !== assetId);
      return Promise.resolve();
    },
    uploadAsset: (release, asset) => {
      const uploaded = { id: 100 + release.id, name: asset.name, browser_download_url: `https://github.test/d/${asset.name}` };
      releases.find((r) => r.id === release.id)!.assets.push(uploaded);
      return Promise.resolve(uploaded);
    },
  };
  return { api, releases };
}

export interface FakeGitHubOptions {
  /** The accepted token; any non-empty token when absent. */
  token?: string;
  /** Requests for another repository answer 404. Default: any owner and repository. */
  owner?: string;
  repo?: string;
  /** The default branch of repositories not added with `addRepo`; default main. */
  defaultBranch?: string;
  /** Whether the repository has the branch (a pull request's head and base must exist); default any. */
  branchExists?: (branch: string) => boolean | Promise<boolean>;
}

export interface RecordedRequest {
  method: string;
  /** The path without the query string, e.g. `/repos/acme/x/releases`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON; `{ bytes, sha256 }` for uploads; undefined when there was no body. */
  body: unknown;
  /** The status the fake answered with (-1: the connection was dropped). */
  status: number;
  /** The Authorization and Accept headers, for short assertions. */
  authorization: string | undefined;
  accept: string | undefined;
}

export interface FakeAsset {
  id: number;
  name: string;
  label: string | null;
  contentType: string;
  size: number;
  sha256: string;
  content: Buffer;
  createdAt: string;
  updatedAt: string;
}

export interface FakeRelease {
  id: number;
  owner: string;
  repo: string;
  tag_name: string;
  target_commitish: string;
  name: string | null;
  body: string | null;
  draft: boolean;
  prerelease: boolean;
  created_at: string;
  published_at: string | null;
  updated_at: string;
  assets: FakeAsset[];
}

/** A canned answer: a status, optionally headers and a JSON body (default: GitHub's error shape). */
export interface FailResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface FailMatch {
  method?: string;
  /** Exact path, or a pattern tested against the path. */
  path?: string | RegExp;
}

export interface FakeRepoAsset {
  id: number;
  name: string;
  content: Buffer;
  contentType: string;
  downloadCount: number;
}

export interface FakeRepoRelease {
  id: number;
  tag_name: string;
  draft: boolean;
  prerelease: boolean;
  created_at: string;
  published_at: string | null;
  assets: FakeRepoAsset[];
}

export interface FakeRepo {
  owner: string;
  repo: string;
  stars: number;
  forks: number;
  issues: number;
  releases: FakeRepoRelease[];
}

export interface RepoAssetInit {
  name: string;
  content: string | Buffer | object;
  contentType?: string;
  downloadCount?: number;
}

export interface RepoReleaseInit {
  tag_name: string;
  draft?: boolean;
  prerelease?: boolean;
  published_at?: string;
  assets?: RepoAssetInit[];
}

export interface FakePull {
  number: number;
  state: 'open' | 'closed';
  title: string;
  body: string | null;
  head: string;
  base: string;
  labels: string[];
  comments: string[];
}

export interface FakeGitHub {
  /** `http://127.0.0.1:port`, to use as GITHUB_API_URL / baseUrl. */
  url: string;
  requests: RecordedRequest[];
  /** The releases by id, with their assets. */
  releases: Map<number, FakeRelease>;
  /** The next requests (matching `match`, when given) answer with these statuses, in order. */
  fail(plan: (number | FailResponse)[], match?: FailMatch): void;
  /** Adds a release directly (e.g. a draft left by a crashed run). */
  addRelease(init: Partial<Omit<FakeRelease, 'id' | 'assets'>> & { tag_name: string; assets?: { name: string; content: string | Buffer; contentType?: string }[] }): FakeRelease;
  /** The releases with this tag name, drafts included. */
  releasesByTag(tag: string): FakeRelease[];
  /** The JSON GitHub would answer for a release. */
  releaseJson(release: FakeRelease): Record<string, unknown>;
  /** A read-only repository with stars, forks and issues, whose releases `addRepoRelease` adds. */
  addRepo(fullName: string, stats?: { stars?: number; forks?: number; issues?: number }): FakeRepo;
  addRepoRelease(fullName: string, init: RepoReleaseInit): FakeRepoRelease;
  /** Every request about the repository answers `status` (`'drop'`: the connection is closed). */
  failRepo(fullName: string, status: number | 'drop'): void;
  /** The pull requests, in the order they were made. */
  pulls: FakePull[];
  /** A pull request made outside the code under test (e.g. by an earlier version of it). */
  addPull(init: Partial<FakePull> & { head: string; title: string }): FakePull;
  /** The requests that change something (not GET). */
  writes(): RecordedRequest[];
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest/releases/releases';

const timestamp = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

const notFound = (): HttpError => new HttpError(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
const validationFailed = (resource: string, code: string, field: string): HttpError =>
  new HttpError(422, { message: 'Validation Failed', errors: [{ resource, code, field }], documentation_url: DOCS, status: '422' });

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function matches(match: FailMatch | undefined, method: string, path: string): boolean {
  if (!match) return true;
  if (match.method && match.method.toUpperCase() !== method) return false;
  if (match.path === undefined) return true;
  return typeof match.path === 'string' ? match.path === path : match.path.test(path);
}

export async function startFakeGitHub(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  const requests: RecordedRequest[] = [];
  const releases = new Map<number, FakeRelease>();
  const plan: { response: FailResponse; match?: FailMatch }[] = [];
  let nextReleaseId = 1001;
  let nextAssetId = 5001;
  let url = '';
  const repos = new Map<string, FakeRepo>();
  const failingRepos = new Map<string, number | 'drop'>();
  let nextRepoId = 7001;
  const pulls: FakePull[] = [];
  const repoLabels = new Set<string>();
  let nextPullNumber = 1;

  const user = () => {
    const u = `${url}/users/github-actions%5Bbot%5D`;
    return {
      login: 'github-actions[bot]',
      id: 41898282,
      node_id: 'MDM6Qm90NDE4OTgyODI=',
      avatar_url: 'https://avatars.githubusercontent.com/in/15368?v=4',
      gravatar_id: '',
      url: u,
      html_url: `${url}/apps/github-actions`,
      followers_url: `${u}/followers`,
      following_url: `${u}/following{/other_user}`,
      gists_url: `${u}/gists{/gist_id}`,
      starred_url: `${u}/starred{/owner}{/repo}`,
      subscriptions_url: `${u}/subscriptions`,
      organizations_url: `${u}/orgs`,
      repos_url: `${u}/repos`,
      events_url: `${u}/events{/privacy}`,
      received_events_url: `${u}/received_events`,
      type: 'Bot',
      user_view_type: 'public',
      site_admin: false,
    };
  };

  const webBase = (r: FakeRelease): string => `${url}/${r.owner}/${r.repo}`;
  const apiBase = (r: FakeRelease): string => `${url}/repos/${r.owner}/${r.repo}`;

  const assetJson = (release: FakeRelease, asset: FakeAsset): Record<string, unknown> => ({
    url: `${apiBase(release)}/releases/assets/${asset.id}`,
    id: asset.id,
    node_id: Buffer.from(`ReleaseAsset${asset.id}`).toString('base64'),
    name: asset.name,
    label: asset.label,
    uploader: user(),
    content_type: asset.contentType,
    state: 'uploaded',
    size: asset.size,
    digest: `sha256:${asset.sha256}`,
    download_count: 0,
    created_at: asset.createdAt,
    updated_at: asset.updatedAt,
    browser_download_url: `${webBase(release)}/releases/download/${encodeURIComponent(release.draft ? `untagged-${release.id}` : release.tag_name)}/${encodeURIComponent(asset.name)}`,
  });

  const releaseJson = (r: FakeRelease): Record<string, unknown> => {
    const tag = encodeURIComponent(r.tag_name);
    return {
      url: `${apiBase(r)}/releases/${r.id}`,
      assets_url: `${apiBase(r)}/releases/${r.id}/assets`,
      upload_url: `${url}/upload/repos/${r.owner}/${r.repo}/releases/${r.id}/assets{?name,label}`,
      html_url: `${webBase(r)}/releases/tag/${r.draft ? `untagged-${r.id}` : tag}`,
      id: r.id,
      author: user(),
      node_id: Buffer.from(`Release${r.id}`).toString('base64'),
      tag_name: r.tag_name,
      target_commitish: r.target_commitish,
      name: r.name,
      draft: r.draft,
      immutable: false,
      prerelease: r.prerelease,
      created_at: r.created_at,
      updated_at: r.updated_at,
      published_at: r.published_at,
      assets: r.assets.map((a) => assetJson(r, a)),
      tarball_url: r.draft ? null : `${apiBase(r)}/tarball/${tag}`,
      zipball_url: r.draft ? null : `${apiBase(r)}/zipball/${tag}`,
      body: r.body,
    };
  };

  const publishedWithTag = (owner: string, repo: string, tag: string, except?: number): FakeRelease | undefined =>
    [...releases.values()].find((r) => r.owner === owner && r.repo === repo && r.tag_name === tag && !r.draft && r.id !== except);

  const makeAsset = (name: string, content: Buffer, contentType: string, label: string | null = null): FakeAsset => {
    const now = timestamp();
    return {
      id: nextAssetId++,
      name,
      label,
      contentType,
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      content,
      createdAt: now,
      updatedAt: now,
    };
  };

  const addRelease: FakeGitHub['addRelease'] = (init) => {
    const now = timestamp();
    const { assets = [], ...fields } = init;
    const release: FakeRelease = {
      owner: options.owner ?? 'acme',
      repo: options.repo ?? 'templates',
      target_commitish: 'main',
      name: init.tag_name,
      body: null,
      draft: false,
      prerelease: false,
      created_at: now,
      updated_at: now,
      published_at: null,
      ...fields,
      id: nextReleaseId++,
      assets: assets.map((a) => makeAsset(a.name, Buffer.from(a.content), a.contentType ?? 'application/octet-stream')),
    };
    if (!release.draft && release.published_at === null) release.published_at = now;
    releases.set(release.id, release);
    return release;
  };

  /** One page of `items` and the Link header pointing at the others. */
  function paginate<T>(items: T[], query: URLSearchParams, path: string, res: ServerResponse): T[] {
    const perPage = Math.min(Math.max(Number(query.get('per_page') ?? 30) || 30, 1), 100);
    const page = Math.max(Number(query.get('page') ?? 1) || 1, 1);
    const last = Math.max(Math.ceil(items.length / perPage), 1);
    // The other parameters (a filter such as `state` or `head`) stay in the links.
    const link = (p: number, rel: string): string => `<${url}${path}?${new URLSearchParams({ ...Object.fromEntries(query), per_page: String(perPage), page: String(p) }).toString()}>; rel="${rel}"`;
    const links: string[] = [];
    if (page > 1) links.push(link(1, 'first'), link(Math.min(page - 1, last), 'prev'));
    if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
    if (links.length > 0) res.setHeader('link', links.join(', '));
    return items.slice((page - 1) * perPage, page * perPage);
  }

  function jsonObject(body: unknown): Record<string, unknown> {
    if (body === undefined) return {};
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new HttpError(400, { message: 'Problems parsing JSON', documentation_url: DOCS, status: '400' });
    }
    return body as Record<string, unknown>;
  }

  function applyFields(release: FakeRelease, input: Record<string, unknown>): void {
    for (const key of ['tag_name', 'target_commitish', 'name', 'body'] as const) {
      const value = input[key];
      if (value === undefined) continue;
      if (typeof value !== 'string') throw validationFailed('Release', 'invalid', key);
      release[key] = value;
    }
    for (const key of ['draft', 'prerelease'] as const) {
      const value = input[key];
      if (value === undefined) continue;
      if (typeof value !== 'boolean') throw validationFailed('Release', 'invalid', key);
      release[key] = value;
    }
  }

  /** Answers a request; returns [status, JSON body or undefined]. */
  function route(method: string, path: string, query: URLSearchParams, headers: IncomingHttpHeaders, body: unknown, raw: Buffer, res: ServerResponse): [number, unknown] {
    const upload = /^\/upload\/repos\/([^/]+)\/([^/]+)\/releases\/(\d+)\/assets$/.exec(path);
    const api = /^\/repos\/([^/]+)\/([^/]+)\/releases(\/.*)?$/.exec(path);
    const m = upload ?? api;
    if (!m) throw notFound();
    const owner = decodeURIComponent(m[1] ?? '');
    const repo = decodeURIComponent(m[2] ?? '');
    if ((options.owner && owner !== options.owner) || (options.repo && repo !== options.repo)) throw notFound();
    const ofRepo = [...releases.values()].filter((r) => r.owner === owner && r.repo === repo);
    const release = (id: string | undefined): FakeRelease => {
      const found = releases.get(Number(id));
      if (!found || found.owner !== owner || found.repo !== repo) throw notFound();
      return found;
    };

    if (upload) {
      if (method !== 'POST') throw notFound();
      const target = release(upload[3]);
      const name = query.get('name');
      if (!name) throw validationFailed('ReleaseAsset', 'missing_field', 'name');
      if (headers['content-length'] === undefined) {
        throw new HttpError(411, { message: 'Length Required', documentation_url: DOCS, status: '411' });
      }
      if (target.assets.some((a) => a.name === name)) throw validationFailed('ReleaseAsset', 'already_exists', 'name');
      const asset = makeAsset(name, raw, headers['content-type'] ?? 'application/octet-stream', query.get('label'));
      target.assets.push(asset);
      return [201, assetJson(target, asset)];
    }

    const rest = api?.[3] ?? '';
    let sub: RegExpExecArray | null;
    if (rest === '') {
      if (method === 'GET') {
        const sorted = ofRepo.sort((a, b) => b.id - a.id);
        return [200, paginate(sorted, query, path, res).map(releaseJson)];
      }
      if (method === 'POST') {
        const input = jsonObject(body);
        if (typeof input.tag_name !== 'string' || input.tag_name === '') throw validationFailed('Release', 'missing_field', 'tag_name');
        const now = timestamp();
        const created: FakeRelease = {
          id: nextReleaseId++,
          owner,
          repo,
          tag_name: input.tag_name,
          target_commitish: 'main',
          name: null,
          body: null,
          draft: false,
          prerelease: false,
          created_at: now,
          updated_at: now,
          published_at: null,
          assets: [],
        };
        applyFields(created, input);
        if (!created.draft && publishedWithTag(owner, repo, created.tag_name)) throw validationFailed('Release', 'already_exists', 'tag_name');
        if (!created.draft) created.published_at = now;
        releases.set(created.id, created);
        res.setHeader('location', `${apiBase(created)}/releases/${created.id}`);
        return [201, releaseJson(created)];
      }
      throw notFound();
    }
    if ((sub = /^\/tags\/(.+)$/.exec(rest)) && method === 'GET') {
      const tag = decodeURIComponent(sub[1] ?? '');
      const found = ofRepo.find((r) => r.tag_name === tag && !r.draft);
      if (!found) throw notFound();
      return [200, releaseJson(found)];
    }
    if ((sub = /^\/assets\/(\d+)$/.exec(rest))) {
      const id = Number(sub[1]);
      const owning = ofRepo.find((r) => r.assets.some((a) => a.id === id));
      const asset = owning?.assets.find((a) => a.id === id);
      if (!owning || !asset) throw notFound();
      if (method === 'GET') return [200, assetJson(owning, asset)];
      if (method === 'DELETE') {
        owning.assets = owning.assets.filter((a) => a.id !== id);
        return [204, undefined];
      }
      throw notFound();
    }
    if ((sub = /^\/(\d+)\/assets$/.exec(rest)) && method === 'GET') {
      const target = release(sub[1]);
      return [200, paginate(target.assets, query, path, res).map((a) => assetJson(target, a))];
    }
    if ((sub = /^\/(\d+)$/.exec(rest))) {
      const target = release(sub[1]);
      if (method === 'GET') return [200, releaseJson(target)];
      if (method === 'DELETE') {
        releases.delete(target.id);
        return [204, undefined];
      }
      if (method === 'PATCH') {
        const updated = { ...target };
        applyFields(updated, jsonObject(body));
        if (!updated.draft && publishedWithTag(owner, repo, updated.tag_name, updated.id)) throw validationFailed('Release', 'already_exists', 'tag_name');
        const now = timestamp();
        if (target.draft && !updated.draft) updated.published_at = now;
        if (updated.draft) updated.published_at = null;
        updated.updated_at = now;
        Object.assign(target, updated);
        return [200, releaseJson(target)];
      }
    }
    throw notFound();
  }

  // ---- repositories added with addRepo (read-only, with download counts)

  const repoAssetJson = (repo: FakeRepo, release: FakeRepoRelease, asset: FakeRepoAsset): Record<string, unknown> => ({
    url: `${url}/repos/${repo.owner}/${repo.repo}/releases/assets/${asset.id}`,
    id: asset.id,
    name: asset.name,
    label: null,
    content_type: asset.contentType,
    state: 'uploaded',
    size: asset.content.length,
    download_count: asset.downloadCount,
    created_at: release.created_at,
    updated_at: release.created_at,
    browser_download_url: `${url}/${repo.owner}/${repo.repo}/releases/download/${encodeURIComponent(release.tag_name)}/${encodeURIComponent(asset.name)}`,
  });

  const repoReleaseJson = (repo: FakeRepo, r: FakeRepoRelease): Record<string, unknown> => ({
    url: `${url}/repos/${repo.owner}/${repo.repo}/releases/${r.id}`,
    html_url: `${url}/${repo.owner}/${repo.repo}/releases/tag/${encodeURIComponent(r.tag_name)}`,
    id: r.id,
    tag_name: r.tag_name,
    name: r.tag_name,
    draft: r.draft,
    prerelease: r.prerelease,
    created_at: r.created_at,
    published_at: r.published_at,
    assets: r.assets.map((a) => repoAssetJson(repo, r, a)),
    body: null,
  });

  const repoJson = (owner: string, name: string, repo: FakeRepo | undefined): Record<string, unknown> => ({
    id: 1,
    name,
    full_name: `${owner}/${name}`,
    owner: { login: owner },
    private: false,
    html_url: `${url}/${owner}/${name}`,
    url: `${url}/repos/${owner}/${name}`,
    stargazers_count: repo?.stars ?? 0,
    watchers_count: repo?.stars ?? 0,
    forks_count: repo?.forks ?? 0,
    open_issues_count: repo?.issues ?? 0,
    default_branch: options.defaultBranch ?? 'main',
  });

  /** The routes of a repository added with addRepo; undefined for a route it does not have. */
  function repoRoute(repo: FakeRepo, method: string, rest: string, query: URLSearchParams, path: string, headers: IncomingHttpHeaders, res: ServerResponse): [number, unknown] | 'sent' | undefined {
    if (method !== 'GET') return undefined;
    if (rest === '') return [200, repoJson(repo.owner, repo.repo, repo)];
    if (rest === '/releases') return [200, paginate([...repo.releases].sort((a, b) => b.id - a.id), query, path, res).map((r) => repoReleaseJson(repo, r))];
    const asset = /^\/releases\/assets\/(\d+)$/.exec(rest);
    if (!asset) return undefined;
    for (const release of repo.releases) {
      const found = release.assets.find((a) => a.id === Number(asset[1]));
      if (!found) continue;
      if ((headers.accept ?? '').includes('application/octet-stream')) {
        res.writeHead(302, { location: `${url}/_download/${found.id}`, 'content-length': 0 }).end();
        return 'sent';
      }
      return [200, repoAssetJson(repo, release, found)];
    }
    throw notFound();
  }

  const repoAsset = (id: number): FakeRepoAsset | undefined => {
    for (const repo of repos.values()) for (const release of repo.releases) for (const asset of release.assets) if (asset.id === id) return asset;
    return undefined;
  };

  // ---- pull requests, labels and comments

  const labelJson = (name: string) => ({ id: [...repoLabels].indexOf(name) + 1, name, color: 'ededed', default: false });
  const pullJson = (owner: string, repo: string, pull: FakePull) => ({
    url: `${url}/repos/${owner}/${repo}/pulls/${pull.number}`,
    html_url: `https://github.test/${owner}/${repo}/pull/${pull.number}`,
    number: pull.number,
    state: pull.state,
    title: pull.title,
    body: pull.body,
    user: { login: 'github-actions[bot]', type: 'Bot' },
    labels: pull.labels.map(labelJson),
    head: { ref: pull.head, label: `${owner}:${pull.head}`, repo: { full_name: `${owner}/${repo}` } },
    base: { ref: pull.base, label: `${owner}:${pull.base}`, repo: { full_name: `${owner}/${repo}` } },
  });

  const pullNumbered = (n: string | undefined): FakePull => {
    const pull = pulls.find((p) => p.number === Number(n));
    if (!pull) throw notFound();
    return pull;
  };

  const addPull: FakeGitHub['addPull'] = (init) => {
    const pull: FakePull = { number: nextPullNumber++, state: 'open', body: null, base: options.defaultBranch ?? 'main', labels: [], comments: [], ...init };
    for (const label of pull.labels) repoLabels.add(label);
    pulls.push(pull);
    return pull;
  };

  const invalid = (resource: string, code: string, field: string, message?: string): HttpError =>
    new HttpError(422, { message: 'Validation Failed', errors: [{ resource, code, field, ...(message ? { message } : {}) }], documentation_url: DOCS, status: '422' });

  /** The pull request routes (`/pulls`, `/issues/{n}/labels`, `/issues/{n}/comments`); undefined for another route. */
  async function pullsRoute(owner: string, repo: string, method: string, rest: string, query: URLSearchParams, path: string, body: unknown, res: ServerResponse): Promise<[number, unknown] | undefined> {
    let sub: RegExpExecArray | null;
    if (rest === '/pulls' && method === 'GET') {
      const state = query.get('state') ?? 'open';
      const head = query.get('head');
      const matching = pulls.filter((p) => (state === 'all' || p.state === state) && (!head || `${owner}:${p.head}` === head)).sort((a, b) => b.number - a.number);
      return [200, paginate(matching, query, path, res).map((p) => pullJson(owner, repo, p))];
    }
    if (rest === '/pulls' && method === 'POST') {
      const input = jsonObject(body);
      for (const key of ['title', 'head', 'base'] as const) {
        if (typeof input[key] !== 'string' || input[key] === '') throw invalid('PullRequest', 'missing_field', key);
      }
      const head = String(input.head).replace(new RegExp(`^${owner}:`), '');
      const base = String(input.base);
      const exists = options.branchExists ?? (() => true);
      if (!(await exists(head))) throw invalid('PullRequest', 'invalid', 'head');
      if (!(await exists(base))) throw invalid('PullRequest', 'invalid', 'base');
      if (pulls.some((p) => p.state === 'open' && p.head === head && p.base === base)) throw invalid('PullRequest', 'custom', 'head', `A pull request already exists for ${owner}:${head}.`);
      return [201, pullJson(owner, repo, addPull({ title: String(input.title), body: typeof input.body === 'string' ? input.body : null, head, base }))];
    }
    if ((sub = /^\/pulls\/(\d+)$/.exec(rest)) && method === 'PATCH') {
      const pull = pullNumbered(sub[1]);
      const input = jsonObject(body);
      if (typeof input.title === 'string') pull.title = input.title;
      if (typeof input.body === 'string') pull.body = input.body;
      if (input.state === 'open' || input.state === 'closed') pull.state = input.state;
      return [200, pullJson(owner, repo, pull)];
    }
    if ((sub = /^\/issues\/(\d+)\/labels$/.exec(rest)) && method === 'POST') {
      const pull = pullNumbered(sub[1]);
      const labels = jsonObject(body).labels;
      if (!Array.isArray(labels) || labels.some((l) => typeof l !== 'string')) throw invalid('Label', 'invalid', 'labels');
      for (const label of labels as string[]) {
        repoLabels.add(label);
        if (!pull.labels.includes(label)) pull.labels.push(label);
      }
      return [200, pull.labels.map(labelJson)];
    }
    if ((sub = /^\/issues\/(\d+)\/labels\/(.+)$/.exec(rest)) && method === 'DELETE') {
      const pull = pullNumbered(sub[1]);
      const name = decodeURIComponent(sub[2] ?? '');
      if (!pull.labels.includes(name)) throw new HttpError(404, { message: 'Label does not exist', documentation_url: DOCS, status: '404' });
      pull.labels = pull.labels.filter((l) => l !== name);
      return [200, pull.labels.map(labelJson)];
    }
    if ((sub = /^\/issues\/(\d+)\/comments$/.exec(rest)) && method === 'POST') {
      const pull = pullNumbered(sub[1]);
      const text = jsonObject(body).body;
      if (typeof text !== 'string' || text === '') throw invalid('IssueComment', 'missing_field', 'body');
      pull.comments.push(text);
      return [201, { id: pull.comments.length, body: text, html_url: `https://github.test/${owner}/${repo}/pull/${pull.number}#issuecomment-${pull.comments.length}` }];
    }
    return undefined;
  }

  /** Answers an API request: the routes of an added repository, then pull requests, then releases. */
  async function answer(method: string, path: string, query: URLSearchParams, headers: IncomingHttpHeaders, body: unknown, raw: Buffer, res: ServerResponse): Promise<[number, unknown] | 'sent'> {
    const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    if (m) {
      const owner = decodeURIComponent(m[1] ?? '');
      const name = decodeURIComponent(m[2] ?? '');
      const rest = m[3] ?? '';
      const added = repos.get(`${owner}/${name}`);
      if (added) return repoRoute(added, method, rest, query, path, headers, res) ?? Promise.reject(notFound());
      if ((options.owner && owner !== options.owner) || (options.repo && name !== options.repo)) throw notFound();
      // The repository of `options.owner`/`options.repo` exists; another one not added is unknown (404).
      if (rest === '' && method === 'GET' && options.owner !== undefined && options.repo !== undefined) return [200, repoJson(owner, name, undefined)];
      const pulled = await pullsRoute(owner, name, method, rest, query, path, body, res);
      if (pulled) return pulled;
    }
    return route(method, path, query, headers, body, raw, res);
  }

  const server = createServer((req, res) => {
    void (async () => {
      const method = (req.method ?? 'GET').toUpperCase();
      const parsed = new URL(req.url ?? '/', url);
      const path = parsed.pathname;
      const raw = await readBody(req);
      const isUpload = path.startsWith('/upload/');
      const record: RecordedRequest = {
        method,
        path,
        query: Object.fromEntries(parsed.searchParams),
        headers: req.headers,
        body: undefined,
        status: 0,
        authorization: req.headers.authorization,
        accept: req.headers.accept,
      };
      requests.push(record);

      const send = (status: number, payload: unknown, extraHeaders: Record<string, string> = {}): void => {
        record.status = status;
        for (const [name, value] of Object.entries(extraHeaders)) res.setHeader(name, value);
        if (payload === undefined || status === 204) {
          res.writeHead(status).end();
          return;
        }
        const text = JSON.stringify(payload);
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
      };

      // Downloads (the redirect target of an asset) need no token, as on GitHub's storage host.
      const download = /^\/_download\/(\d+)$/.exec(path);
      if (download) {
        const asset = repoAsset(Number(download[1]));
        if (!asset) return send(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });
        record.status = 200;
        res.writeHead(200, { 'content-type': asset.contentType, 'content-length': asset.content.length }).end(asset.content);
        return;
      }
      const about = /^\/repos\/([^/]+)\/([^/]+)/.exec(path);
      const repoFailure = about ? failingRepos.get(`${decodeURIComponent(about[1] ?? '')}/${decodeURIComponent(about[2] ?? '')}`) : undefined;
      if (repoFailure === 'drop') {
        record.status = -1;
        req.socket.destroy();
        return;
      }
      if (repoFailure !== undefined) return send(repoFailure, { message: STATUS_CODES[repoFailure] ?? 'Error', documentation_url: DOCS, status: String(repoFailure) });

      if (isUpload) {
        record.body = { bytes: raw.length, sha256: createHash('sha256').update(raw).digest('hex') };
      } else if (raw.length > 0) {
        try {
          record.body = JSON.parse(raw.toString('utf8'));
        } catch {
          send(400, { message: 'Problems parsing JSON', documentation_url: DOCS, status: '400' });
          return;
        }
      }

      const planned = plan.findIndex((p) => matches(p.match, method, path));
      if (planned >= 0) {
        const [{ response }] = plan.splice(planned, 1) as [{ response: FailResponse }];
        const message = STATUS_CODES[response.status] ?? 'Error';
        send(response.status, response.body ?? { message, documentation_url: DOCS, status: String(response.status) }, response.headers);
        return;
      }

      const auth = /^(?:token|bearer)\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (!auth) {
        send(401, { message: 'Requires authentication', documentation_url: DOCS, status: '401' });
        return;
      }
      if (options.token !== undefined && auth !== options.token) {
        send(401, { message: 'Bad credentials', documentation_url: DOCS, status: '401' });
        return;
      }

      try {
        const answered = await answer(method, path, parsed.searchParams, req.headers, record.body, raw, res);
        if (answered === 'sent') record.status = res.statusCode;
        else send(answered[0], answered[1]);
      } catch (error) {
        if (error instanceof HttpError) send(error.status, error.body);
        else send(500, { message: error instanceof Error ? error.message : String(error), status: '500' });
      }
    })().catch(() => res.destroy());
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    releases,
    fail: (failures, match) => {
      for (const f of failures) plan.push({ response: typeof f === 'number' ? { status: f } : f, ...(match ? { match } : {}) });
    },
    addRelease,
    releasesByTag: (tag) => [...releases.values()].filter((r) => r.tag_name === tag),
    releaseJson,
    addRepo(fullName, stats = {}) {
      const [owner = '', repo = ''] = fullName.split('/');
      const created: FakeRepo = { owner, repo, stars: stats.stars ?? 0, forks: stats.forks ?? 0, issues: stats.issues ?? 0, releases: [] };
      repos.set(fullName, created);
      return created;
    },
    addRepoRelease(fullName, init) {
      const repo = repos.get(fullName);
      if (!repo) throw new Error(`fake GitHub: unknown repository ${fullName} (addRepo first)`);
      const published = init.published_at ?? '2026-03-01T12:00:00Z';
      const release: FakeRepoRelease = {
        id: nextRepoId++,
        tag_name: init.tag_name,
        draft: init.draft ?? false,
        prerelease: init.prerelease ?? false,
        created_at: published,
        published_at: init.draft ? null : published,
        assets: (init.assets ?? []).map((a) => ({
          id: nextRepoId++,
          name: a.name,
          content: typeof a.content === 'string' || Buffer.isBuffer(a.content) ? Buffer.from(a.content) : Buffer.from(JSON.stringify(a.content, null, 2)),
          contentType: a.contentType ?? (a.name.endsWith('.json') ? 'application/json' : 'application/gzip'),
          downloadCount: a.downloadCount ?? 0,
        })),
      };
      repo.releases.push(release);
      return release;
    },
    failRepo(fullName, status) {
      failingRepos.set(fullName, status);
    },
    pulls,
    addPull,
    writes: () => requests.filter((r) => r.method !== 'GET'),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
