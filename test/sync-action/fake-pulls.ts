/**
 * A fake GitHub REST API for pull requests, on 127.0.0.1, for the sync action's tests: the
 * repository (its default branch), pulls (list with `state` and `head` filters, create, update),
 * issue labels (add, remove) and comments. It behaves like GitHub where the action depends on it:
 *
 * - every request needs `Authorization: token X` or `Bearer X`, X being `options.token`; 401 otherwise;
 * - `GET /pulls` filters by `state` (default open) and `head` (`owner:branch`), is paginated
 *   (`per_page`, `page`, a `Link` header with rel="next");
 * - creating a pull request answers 422 when the head branch does not exist (`branchExists`) or
 *   an open pull request already has the same head and base;
 * - adding labels creates the ones the repository lacks; removing one it lacks answers 404.
 *
 * Every request is recorded in `requests` (`writes()` gives those that are not GETs).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakePullsOptions {
  owner: string;
  repo: string;
  token: string;
  defaultBranch?: string;
  /** Whether the repository has the branch (a pull request's head must exist); default any. */
  branchExists?: (branch: string) => boolean | Promise<boolean>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | undefined;
  status: number;
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

export interface FakePulls {
  url: string;
  requests: RecordedRequest[];
  pulls: FakePull[];
  /** The requests that change something (not GET). */
  writes(): RecordedRequest[];
  /** A pull request made outside the action (e.g. by an earlier version of it). */
  addPull(init: Partial<FakePull> & { head: string; title: string }): FakePull;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors?: unknown[],
  ) {
    super(message);
  }
}

const DOCS = 'https://docs.github.com/rest/pulls/pulls';

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'Problems parsing JSON');
  }
}

function fields(body: unknown): Record<string, unknown> {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'Problems parsing JSON');
  return body as Record<string, unknown>;
}

export async function startFakePulls(options: FakePullsOptions): Promise<FakePulls> {
  const { owner, repo } = options;
  const requests: RecordedRequest[] = [];
  const pulls: FakePull[] = [];
  const repoLabels = new Set<string>();
  let nextNumber = 1;
  let url = '';

  const labelJson = (name: string) => ({ id: [...repoLabels].indexOf(name) + 1, name, color: 'ededed', default: false });
  const pullJson = (pull: FakePull) => ({
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
    if (!pull) throw new HttpError(404, 'Not Found');
    return pull;
  };

  const addPull: FakePulls['addPull'] = (init) => {
    const pull: FakePull = { number: nextNumber++, state: 'open', body: null, base: options.defaultBranch ?? 'main', labels: [], comments: [], ...init };
    for (const label of pull.labels) repoLabels.add(label);
    pulls.push(pull);
    return pull;
  };

  async function route(method: string, path: string, query: URLSearchParams, body: unknown, setHeader: (name: string, value: string) => void): Promise<[number, unknown]> {
    const m = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
    if (!m || decodeURIComponent(m[1] ?? '') !== owner || decodeURIComponent(m[2] ?? '') !== repo) throw new HttpError(404, 'Not Found');
    const rest = m[3] ?? '';
    let sub: RegExpExecArray | null;

    if (rest === '' && method === 'GET') {
      return [200, { id: 1, name: repo, full_name: `${owner}/${repo}`, owner: { login: owner }, private: false, default_branch: options.defaultBranch ?? 'main', html_url: `https://github.test/${owner}/${repo}` }];
    }
    if (rest === '/pulls' && method === 'GET') {
      const state = query.get('state') ?? 'open';
      const head = query.get('head');
      const matching = pulls.filter((p) => (state === 'all' || p.state === state) && (!head || `${owner}:${p.head}` === head)).sort((a, b) => b.number - a.number);
      const perPage = Math.min(Math.max(Number(query.get('per_page') ?? 30) || 30, 1), 100);
      const page = Math.max(Number(query.get('page') ?? 1) || 1, 1);
      if (page * perPage < matching.length) setHeader('link', `<${url}${path}?${new URLSearchParams({ ...Object.fromEntries(query), page: String(page + 1) }).toString()}>; rel="next"`);
      return [200, matching.slice((page - 1) * perPage, page * perPage).map(pullJson)];
    }
    if (rest === '/pulls' && method === 'POST') {
      const input = fields(body);
      for (const key of ['title', 'head', 'base'] as const) {
        if (typeof input[key] !== 'string' || input[key] === '') throw new HttpError(422, 'Validation Failed', [{ resource: 'PullRequest', code: 'missing_field', field: key }]);
      }
      const head = String(input.head).replace(new RegExp(`^${owner}:`), '');
      const base = String(input.base);
      const exists = options.branchExists ?? (() => true);
      if (!(await exists(head))) throw new HttpError(422, 'Validation Failed', [{ resource: 'PullRequest', code: 'invalid', field: 'head' }]);
      if (!(await exists(base))) throw new HttpError(422, 'Validation Failed', [{ resource: 'PullRequest', code: 'invalid', field: 'base' }]);
      if (pulls.some((p) => p.state === 'open' && p.head === head && p.base === base)) {
        throw new HttpError(422, 'Validation Failed', [{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${owner}:${head}.` }]);
      }
      const pull = addPull({ title: String(input.title), body: typeof input.body === 'string' ? input.body : null, head, base });
      return [201, pullJson(pull)];
    }
    if ((sub = /^\/pulls\/(\d+)$/.exec(rest)) && method === 'PATCH') {
      const pull = pullNumbered(sub[1]);
      const input = fields(body);
      if (typeof input.title === 'string') pull.title = input.title;
      if (typeof input.body === 'string') pull.body = input.body;
      if (input.state === 'open' || input.state === 'closed') pull.state = input.state;
      return [200, pullJson(pull)];
    }
    if ((sub = /^\/issues\/(\d+)\/labels$/.exec(rest)) && method === 'POST') {
      const pull = pullNumbered(sub[1]);
      const labels = fields(body).labels;
      if (!Array.isArray(labels) || labels.some((l) => typeof l !== 'string')) throw new HttpError(422, 'Validation Failed', [{ resource: 'Label', code: 'invalid', field: 'labels' }]);
      for (const label of labels as string[]) {
        repoLabels.add(label);
        if (!pull.labels.includes(label)) pull.labels.push(label);
      }
      return [200, pull.labels.map(labelJson)];
    }
    if ((sub = /^\/issues\/(\d+)\/labels\/(.+)$/.exec(rest)) && method === 'DELETE') {
      const pull = pullNumbered(sub[1]);
      const name = decodeURIComponent(sub[2] ?? '');
      if (!pull.labels.includes(name)) throw new HttpError(404, 'Label does not exist');
      pull.labels = pull.labels.filter((l) => l !== name);
      return [200, pull.labels.map(labelJson)];
    }
    if ((sub = /^\/issues\/(\d+)\/comments$/.exec(rest)) && method === 'POST') {
      const pull = pullNumbered(sub[1]);
      const text = fields(body).body;
      if (typeof text !== 'string' || text === '') throw new HttpError(422, 'Validation Failed', [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }]);
      pull.comments.push(text);
      return [201, { id: pull.comments.length, body: text, html_url: `https://github.test/${owner}/${repo}/pull/${pull.number}#issuecomment-${pull.comments.length}` }];
    }
    throw new HttpError(404, 'Not Found');
  }

  const server = createServer((req, res) => {
    void (async () => {
      const method = (req.method ?? 'GET').toUpperCase();
      const parsed = new URL(req.url ?? '/', url);
      const record: RecordedRequest = { method, path: parsed.pathname, query: Object.fromEntries(parsed.searchParams), body: undefined, authorization: req.headers.authorization, status: 0 };
      requests.push(record);
      const send = (status: number, payload: unknown): void => {
        record.status = status;
        const text = JSON.stringify(payload);
        res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
      };
      try {
        record.body = await readJson(req);
        const auth = /^(?:token|bearer)\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
        if (!auth) throw new HttpError(401, 'Requires authentication');
        if (auth !== options.token) throw new HttpError(401, 'Bad credentials');
        const [status, payload] = await route(method, parsed.pathname, parsed.searchParams, record.body, (name, value) => res.setHeader(name, value));
        send(status, payload);
      } catch (error) {
        if (error instanceof HttpError) send(error.status, { message: error.message, ...(error.errors ? { errors: error.errors } : {}), documentation_url: DOCS, status: String(error.status) });
        else send(500, { message: error instanceof Error ? error.message : String(error) });
      }
    })().catch(() => res.destroy());
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    pulls,
    writes: () => requests.filter((r) => r.method !== 'GET'),
    addPull,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
