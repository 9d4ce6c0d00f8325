/**
 * A small fake GitHub REST API on 127.0.0.1 for the registry's GitHub releases source: repository
 * info, releases (paginated) whose assets carry `download_count`, `size` and
 * `browser_download_url`, and asset downloads. As on GitHub:
 *
 * - `GET /repos/{o}/{r}` answers `html_url`, `stargazers_count`, `forks_count`, `open_issues_count`;
 *   an unknown repository answers 404;
 * - `GET /repos/{o}/{r}/releases` lists drafts and pre-releases too, newest first, with `per_page`,
 *   `page` and a `Link` header;
 * - `GET /repos/{o}/{r}/releases/assets/{id}` with `Accept: application/octet-stream` redirects
 *   (302) to a download URL, which serves the bytes with the asset's content type and needs no
 *   token; with another Accept it answers the asset's JSON;
 * - every API request needs `Authorization: token X` or `Bearer X` (X = `options.token` when given).
 *
 * `failRepo(fullName, status)` makes every request about that repository answer `status`
 * (`'drop'` closes the connection instead). Requests are recorded in `requests`.
 */
import { createServer, STATUS_CODES, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export interface AssetInit {
  name: string;
  content: string | Buffer | object;
  contentType?: string;
  downloadCount?: number;
}

export interface ReleaseInit {
  tag_name: string;
  draft?: boolean;
  prerelease?: boolean;
  published_at?: string;
  assets?: AssetInit[];
}

export interface FakeGitHubRepos {
  url: string;
  requests: { method: string; path: string; accept: string | undefined; status: number }[];
  addRepo(fullName: string, stats?: { stars?: number; forks?: number; issues?: number }): FakeRepo;
  addRelease(fullName: string, init: ReleaseInit): FakeRepoRelease;
  failRepo(fullName: string, status: number | 'drop'): void;
  close(): Promise<void>;
}

const DOCS = 'https://docs.github.com/rest';

export async function startFakeGitHubRepos(options: { token?: string } = {}): Promise<FakeGitHubRepos> {
  const repos = new Map<string, FakeRepo>();
  const failing = new Map<string, number | 'drop'>();
  const requests: FakeGitHubRepos['requests'] = [];
  let nextId = 7001;
  let url = '';

  const assetJson = (repo: FakeRepo, release: FakeRepoRelease, asset: FakeRepoAsset): Record<string, unknown> => ({
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

  const releaseJson = (repo: FakeRepo, r: FakeRepoRelease): Record<string, unknown> => ({
    url: `${url}/repos/${repo.owner}/${repo.repo}/releases/${r.id}`,
    html_url: `${url}/${repo.owner}/${repo.repo}/releases/tag/${encodeURIComponent(r.tag_name)}`,
    id: r.id,
    tag_name: r.tag_name,
    name: r.tag_name,
    draft: r.draft,
    prerelease: r.prerelease,
    created_at: r.created_at,
    published_at: r.published_at,
    assets: r.assets.map((a) => assetJson(repo, r, a)),
    body: null,
  });

  const repoJson = (repo: FakeRepo): Record<string, unknown> => ({
    id: 1,
    name: repo.repo,
    full_name: `${repo.owner}/${repo.repo}`,
    owner: { login: repo.owner },
    private: false,
    html_url: `${url}/${repo.owner}/${repo.repo}`,
    url: `${url}/repos/${repo.owner}/${repo.repo}`,
    stargazers_count: repo.stars,
    watchers_count: repo.stars,
    forks_count: repo.forks,
    open_issues_count: repo.issues,
    default_branch: 'main',
  });

  const send = (res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(payload);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers }).end(text);
  };

  const server = createServer((req, res) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const parsed = new URL(req.url ?? '/', url);
    const path = parsed.pathname;
    const record = { method, path, accept: req.headers.accept, status: 0 };
    requests.push(record);
    const reply = (status: number, payload: unknown, headers?: Record<string, string>): void => {
      record.status = status;
      send(res, status, payload, headers);
    };
    const notFound = (): void => reply(404, { message: 'Not Found', documentation_url: DOCS, status: '404' });

    // Downloads (the redirect target) need no token, as on GitHub's storage host.
    const download = /^\/_download\/(\d+)$/.exec(path);
    if (download) {
      for (const repo of repos.values()) {
        for (const release of repo.releases) {
          const asset = release.assets.find((a) => a.id === Number(download[1]));
          if (asset) {
            record.status = 200;
            res.writeHead(200, { 'content-type': asset.contentType, 'content-length': asset.content.length }).end(asset.content);
            return;
          }
        }
      }
      notFound();
      return;
    }

    const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    if (!m) return notFound();
    const fullName = `${decodeURIComponent(m[1] ?? '')}/${decodeURIComponent(m[2] ?? '')}`;
    const failure = failing.get(fullName);
    if (failure === 'drop') {
      record.status = -1;
      req.socket.destroy();
      return;
    }
    if (failure !== undefined) return reply(failure, { message: STATUS_CODES[failure] ?? 'Error', documentation_url: DOCS, status: String(failure) });

    const auth = /^(?:token|bearer)\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || (options.token !== undefined && auth !== options.token)) {
      return reply(401, { message: auth ? 'Bad credentials' : 'Requires authentication', documentation_url: DOCS, status: '401' });
    }
    if (method !== 'GET') return notFound();
    const repo = repos.get(fullName);
    if (!repo) return notFound();
    const rest = m[3] ?? '';

    if (rest === '') return reply(200, repoJson(repo));
    if (rest === '/releases') {
      const all = [...repo.releases].sort((a, b) => b.id - a.id);
      const perPage = Math.min(Math.max(Number(parsed.searchParams.get('per_page') ?? 30) || 30, 1), 100);
      const page = Math.max(Number(parsed.searchParams.get('page') ?? 1) || 1, 1);
      const last = Math.max(Math.ceil(all.length / perPage), 1);
      const headers: Record<string, string> = {};
      if (page < last) {
        headers.link = `<${url}${path}?per_page=${perPage}&page=${page + 1}>; rel="next", <${url}${path}?per_page=${perPage}&page=${last}>; rel="last"`;
      }
      return reply(200, all.slice((page - 1) * perPage, page * perPage).map((r) => releaseJson(repo, r)), headers);
    }
    const asset = /^\/releases\/assets\/(\d+)$/.exec(rest);
    if (asset) {
      for (const release of repo.releases) {
        const found = release.assets.find((a) => a.id === Number(asset[1]));
        if (!found) continue;
        if ((req.headers.accept ?? '').includes('application/octet-stream')) {
          record.status = 302;
          res.writeHead(302, { location: `${url}/_download/${found.id}`, 'content-length': 0 }).end();
          return;
        }
        return reply(200, assetJson(repo, release, found));
      }
    }
    return notFound();
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const repoOf = (fullName: string): FakeRepo => {
    const repo = repos.get(fullName);
    if (!repo) throw new Error(`fake GitHub: unknown repository ${fullName}`);
    return repo;
  };

  return {
    get url() {
      return url;
    },
    requests,
    addRepo(fullName, stats = {}) {
      const [owner = '', repo = ''] = fullName.split('/');
      const created: FakeRepo = { owner, repo, stars: stats.stars ?? 0, forks: stats.forks ?? 0, issues: stats.issues ?? 0, releases: [] };
      repos.set(fullName, created);
      return created;
    },
    addRelease(fullName, init) {
      const repo = repoOf(fullName);
      const published = init.published_at ?? '2026-03-01T12:00:00Z';
      const release: FakeRepoRelease = {
        id: nextId++,
        tag_name: init.tag_name,
        draft: init.draft ?? false,
        prerelease: init.prerelease ?? false,
        created_at: published,
        published_at: init.draft ? null : published,
        assets: (init.assets ?? []).map((a) => ({
          id: nextId++,
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
      failing.set(fullName, status);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
