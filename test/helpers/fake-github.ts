/**
 * A fake GitHub REST API for releases, on 127.0.0.1, for tests that point Octokit (or the action,
 * through GITHUB_API_URL) at it. It plays the endpoints the release code uses, answers with
 * bodies shaped like GitHub's (valid against the OpenAPI extract in test/fixtures), and behaves like
 * GitHub where that matters to the code under test:
 *
 * - `GET /releases` lists drafts too, newest first, paginated (`per_page` ≤ 100, `page`, a `Link`
 *   header with rel="next"/"last", which Octokit's paginate follows);
 * - `GET /releases/tags/{tag}` answers 404 for drafts;
 * - several drafts may share a tag name (as on GitHub: this is how a naive re-run ends up with
 *   duplicate drafts); creating or publishing a release whose tag already has a published release
 *   answers 422 `already_exists`;
 * - uploads go to `${url}/upload/repos/{o}/{r}/releases/{id}/assets?name=…` (the `upload_url`
 *   template), need a Content-Length (411 otherwise), answer 422 `already_exists` for a name the
 *   release already has, and keep size and sha256 (GitHub's `digest`) of the bytes received;
 * - every request needs `Authorization: token X` or `Bearer X` (and X must be `options.token` when
 *   given), 401 otherwise.
 *
 * `fail(plan)` makes the next requests (optionally only those matching a method and path) answer
 * with the given statuses instead, e.g. `fail([500])`, or `fail([{ status: 403, headers: {…} }])`
 * for a rate limit. Every request is recorded in `requests`, failed ones included.
 */
import { createHash } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeGitHubOptions {
  /** The accepted token; any non-empty token when absent. */
  token?: string;
  /** Requests for another repository answer 404. Default: any owner and repository. */
  owner?: string;
  repo?: string;
}

export interface RecordedRequest {
  method: string;
  /** The path without the query string, e.g. `/repos/acme/x/releases`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON; `{ bytes, sha256 }` for uploads; undefined when there was no body. */
  body: unknown;
  /** The status the fake answered with. */
  status: number;
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
    const link = (p: number, rel: string): string => `<${url}${path}?per_page=${perPage}&page=${p}>; rel="${rel}"`;
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
        const [status, payload] = route(method, path, parsed.searchParams, req.headers, record.body, raw, res);
        send(status, payload);
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
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
