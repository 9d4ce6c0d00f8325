import { execFileSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { createGitHubClient } from '../../src/github/client.js';
import { InputError, parseSyncInputs } from '../../src/sync-action/inputs.js';
import { NEEDS_ATTENTION_LABEL, octokitPullRequestApi, run, syncProject, SyncError, type SyncActionCore, type SyncProjectOptions, type SyncResult } from '../../src/sync-action/main.js';
import type { TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { buildFreshBundle, runBundledAction, type FreshBundle } from '../helpers/run-bundled-action.js';
import { SECRET_ENV, secretFiles } from '../helpers/secret-template.js';
import { APP_V1, publishVersions, stepFile, TEMPLATE, type VersionSpec } from '../project/versions.js';
import { startFakeGitHub, type FakeGitHub } from '../helpers/fake-github.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

const TOKEN = 'ghs_sync_test_secret_4711';
const OWNER = 'acme';
const REPO = 'shop';
const BRANCH = `template-update/${TEMPLATE}-1.1.0`;
const BOT = '41898282+github-actions[bot]@users.noreply.github.com';

const V1: VersionSpec = { version: '1.0.0', files: { 'template/app.txt.liquid': APP_V1 } };
/** 1.1.0 changes line 6 of app.txt and adds NEW.md. */
const V1_1: VersionSpec = {
  version: '1.1.0',
  files: { 'template/app.txt.liquid': APP_V1.replace('line 6', 'line 6 from the template'), 'template/NEW.md': 'new in 1.1.0 for {{ projectName }}\n' },
};
const V1_2: VersionSpec = { version: '1.2.0', files: { ...V1_1.files, 'template/NEW.md': 'new in 1.2.0 for {{ projectName }}\n' } };

/** git as a person would run it in the tests' repositories (never the code under test's helper). */
function gitOutput(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Dev', '-c', 'user.email=dev@example.com', '-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
const git = (cwd: string, ...args: string[]): string => gitOutput(cwd, ...args).trim();
/** A ref's sha in the bare remote, or '' when it does not exist. */
function remoteRef(bare: string, ref: string): string {
  try {
    return git(bare, 'rev-parse', '--verify', '--quiet', ref);
  } catch {
    return '';
  }
}

interface Setup {
  server: TestServer;
  github: FakeGitHub;
  bare: string;
  workspace: string;
  project: string;
  sync: (extra?: Partial<SyncProjectOptions>) => Promise<SyncResult>;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/**
 * A repository like a generated project's: a bare remote as origin, the project created with the
 * CLI from `first` (in `shop/`), `edit` applied, committed and pushed to main; then `later`
 * published. `sync` runs the action's workflow against the fake GitHub API.
 */
async function setup(first: VersionSpec[], later: VersionSpec[], edit?: (project: string) => Promise<void>): Promise<Setup> {
  const server = await startRegistryServer();
  await publishVersions(server, first);
  const root = await tempDir('tr-sync-');
  const bare = path.join(root, 'remote.git');
  const workspace = path.join(root, 'workspace');
  git(root, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
  git(root, 'init', '--quiet', '--initial-branch=main', workspace);
  git(workspace, 'remote', 'add', 'origin', bare);
  const project = path.join(workspace, 'shop');
  const created = await cli('create', `${TEMPLATE}@${first.at(-1)!.version}`, project, '--registry', `${server.url}/registry.json`, '--defaults', '--set', 'projectName=shop');
  expect(created.code, created.stderr).toBe(0);
  await edit?.(project);
  git(workspace, 'add', '-A');
  git(workspace, 'commit', '--quiet', '-m', 'Generated shop');
  git(workspace, 'push', '--quiet', 'origin', 'main');
  await publishVersions(server, later);

  const github = await startFakeGitHub({ owner: OWNER, repo: REPO, token: TOKEN, branchExists: (branch) => remoteRef(bare, `refs/heads/${branch}`) !== '' });
  closers.push(() => github.close());
  // The real Octokit implementation, without the write spacing of plugin-throttling (1 s per write).
  const api = octokitPullRequestApi(createGitHubClient({ token: TOKEN, baseUrl: github.url, retries: 0, throttle: { enabled: false }, log: () => undefined }), OWNER, REPO);
  const sync = (extra: Partial<SyncProjectOptions> = {}) => syncProject({ workspace, projectDir: project, owner: OWNER, api, ...extra });
  return { server, github, bare, workspace, project, sync };
}

const show = (bare: string, ref: string, file: string): string => gitOutput(bare, 'show', `${ref}:shop/${file}`);
const lockAt = (bare: string, ref: string): TemplateLock => JSON.parse(show(bare, ref, '.template-lock.json')) as TemplateLock;

describe('the sync action on a generated project', () => {
  it('opens one pull request on template-update/<id>-<version> with the update; a second run changes nothing', async () => {
    const { github, bare, sync, server } = await setup([V1], [V1_1]);
    const main = remoteRef(bare, 'refs/heads/main');

    const first = await sync();
    expect(first).toMatchObject({ status: 'updated', fromVersion: '1.0.0', version: '1.1.0', branch: BRANCH, pushed: true, pullRequestAction: 'created', conflicts: [], superseded: [] });

    // The branch on the remote: one commit by the bot on top of main, holding the updated project.
    const head = remoteRef(bare, `refs/heads/${BRANCH}`);
    expect(head).not.toBe('');
    expect(git(bare, 'rev-parse', `${head}^`)).toBe(main);
    expect(git(bare, 'log', '-1', '--format=%an <%ae>|%cn <%ce>|%s', head)).toBe(`github-actions[bot] <${BOT}>|github-actions[bot] <${BOT}>|Update ${TEMPLATE} to 1.1.0`);
    expect(show(bare, head, 'app.txt')).toBe(APP_V1.replace('{{ projectName }}', 'shop').replace('line 6', 'line 6 from the template'));
    expect(show(bare, head, 'NEW.md')).toBe('new in 1.1.0 for shop\n');
    expect(lockAt(bare, head).template).toEqual({ name: TEMPLATE, version: '1.1.0', source: `${server.url}/registry.json#${TEMPLATE}@1.1.0` });
    // Nothing else: no backups, no journal.
    expect(git(bare, 'diff', '--name-only', main, head).split('\n').sort()).toEqual(['shop/.template-lock.json', 'shop/NEW.md', 'shop/app.txt']);

    expect(github.pulls).toHaveLength(1);
    const [pull] = github.pulls;
    expect(pull).toMatchObject({ number: 1, state: 'open', title: `Update ${TEMPLATE} to 1.1.0`, head: BRANCH, base: 'main', labels: [] });
    expect(pull!.body).toMatch(/^Updates the project in `shop` from template \*\*demo-template\*\* `1\.0\.0` to `1\.1\.0`\./);
    expect(pull!.body).toContain('**Breaking:** no');
    expect(pull!.body).toContain('### Changed files\n\n- created `shop/NEW.md`\n- updated `shop/app.txt`\n');
    expect(pull!.body).toContain('### Migration steps applied\n\nNone.');
    expect(pull!.body).toContain('#### 1.1.0\n\n- Changes of 1.1.0');
    expect(pull!.body).not.toContain('Conflicts to resolve');
    expect(github.requests.every((r) => r.authorization === `token ${TOKEN}`)).toBe(true);
    const requestsBefore = github.requests.length;

    const second = await sync();
    expect(second).toMatchObject({ status: 'updated', pushed: false, pullRequestAction: 'unchanged', pullRequest: { number: 1 } });
    expect(remoteRef(bare, `refs/heads/${BRANCH}`)).toBe(head);
    const again = github.requests.slice(requestsBefore);
    expect(again.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(again.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /repos/${OWNER}/${REPO}`, `GET /repos/${OWNER}/${REPO}/pulls`, `GET /repos/${OWNER}/${REPO}/pulls`]);
    expect(again[1]?.query).toMatchObject({ state: 'open', head: `${OWNER}:${BRANCH}` });
  });

  it('opens nothing for a project already at the latest version', async () => {
    const { github, bare, sync, workspace } = await setup([V1, V1_1], []);
    const result = await sync();
    expect(result).toMatchObject({ status: 'up-to-date', version: '1.1.0', pushed: false, conflicts: [] });
    expect(result.pullRequest).toBeUndefined();
    expect(github.writes()).toEqual([]);
    expect(github.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /repos/${OWNER}/${REPO}`]);
    expect(git(bare, 'for-each-ref', '--format=%(refname)')).toBe('refs/heads/main');
    expect(git(workspace, 'status', '--porcelain')).toBe('');
  });

  it('marks a pull request with conflicts as needing attention and lists them', async () => {
    const { github, bare, sync } = await setup([V1], [V1_1], async (project) => {
      const file = path.join(project, 'app.txt');
      await writeFile(file, (await readFile(file, 'utf8')).replace('line 6', 'line 6 mine'));
    });

    const result = await sync();
    expect(result).toMatchObject({ status: 'updated', conflicts: ['app.txt'], pushed: true });
    expect(show(bare, `refs/heads/${BRANCH}`, 'app.txt')).toContain('<<<<<<< project\nline 6 mine\n=======\nline 6 from the template\n>>>>>>> demo-template@1.1.0\n');

    const [pull] = github.pulls;
    expect(pull!.labels).toEqual([NEEDS_ATTENTION_LABEL]);
    expect(pull!.body!.split('\n')[0]).toBe('> **⚠️ Needs attention:** 1 file has conflicts to resolve before merging (see *Conflicts to resolve* below).');
    expect(pull!.body).toContain('### Conflicts to resolve');
    expect(pull!.body).toContain('- conflict `shop/app.txt`: 1 conflicting change in the project and in the template');
    expect(pull!.body).toContain('<<<<<<< project\n');
    expect(github.writes().map((r) => `${r.method} ${r.path}`)).toEqual([`POST /repos/${OWNER}/${REPO}/pulls`, `POST /repos/${OWNER}/${REPO}/issues/1/labels`]);

    // Someone resolves the conflict on the branch: later runs leave their work alone.
    const clone = path.join(await tempDir('tr-clone-'), 'clone');
    git(path.dirname(clone), 'clone', '--quiet', '--branch', BRANCH, bare, clone);
    await writeFile(path.join(clone, 'shop/app.txt'), APP_V1.replace('{{ projectName }}', 'shop').replace('line 6', 'line 6 mine and the template'));
    git(clone, 'commit', '--quiet', '-am', 'Resolve the conflict');
    git(clone, 'push', '--quiet', 'origin', BRANCH);
    const resolved = remoteRef(bare, `refs/heads/${BRANCH}`);
    const writes = github.writes().length;

    const again = await sync();
    expect(again).toMatchObject({ branchTakenOver: true, pushed: false, pullRequest: { number: 1 } });
    expect(remoteRef(bare, `refs/heads/${BRANCH}`)).toBe(resolved);
    expect(github.writes()).toHaveLength(writes);
  });

  it('closes the pull request of an older version as superseded by the newer one', async () => {
    const { github, server, sync } = await setup([V1], [V1_1]);
    await sync();
    await publishVersions(server, [V1_2]);

    const result = await sync();
    expect(result).toMatchObject({ version: '1.2.0', branch: `template-update/${TEMPLATE}-1.2.0`, pullRequest: { number: 2 }, superseded: [1] });
    expect(github.pulls.map((p) => [p.number, p.state, p.head])).toEqual([
      [1, 'closed', BRANCH],
      [2, 'open', `template-update/${TEMPLATE}-1.2.0`],
    ]);
    expect(github.pulls[0]!.comments).toEqual(['Superseded by #2, the update to 1.2.0.']);
    // (1.2.0 was published alone, so its change log has no 1.1.0 section.)
    expect(github.pulls[1]!.body).toContain('#### 1.2.0\n\n- Changes of 1.2.0\n\n#### 1.1.0\n\n(the change log has no section for this version)');
  });

  it('fails without pushing or opening anything when the update cannot be planned', async () => {
    const broken: VersionSpec = { version: '1.1.0', files: { ...V1_1.files, 'migrations/readme.json': stepFile('readme', '1.0.0', '1.1.0', [{ type: 'update', path: 'README.md', content: 'new\n' }]) } };
    const { github, bare, sync } = await setup([V1], [broken], (project) => rm(path.join(project, 'README.md')));
    const error = await sync().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncError);
    expect((error as SyncError).errors).toEqual(['step readme: cannot update "README.md": the file does not exist']);
    expect(remoteRef(bare, `refs/heads/${BRANCH}`)).toBe('');
    expect(github.writes()).toEqual([]);
  });
});

describe('the sync action run as the runner runs it', () => {
  let bundle: FreshBundle;
  beforeAll(async () => {
    bundle = await buildFreshBundle('sync-action/index');
  });
  afterAll(async () => {
    await bundle.remove();
  });

  it('takes its inputs from INPUT_* and GITHUB_*, sets its outputs and never prints the token', async () => {
    const { github, bare, server, workspace } = await setup([V1], [V1_1]);
    const env = {
      GITHUB_REPOSITORY: `${OWNER}/${REPO}`,
      GITHUB_WORKSPACE: workspace,
      GITHUB_API_URL: github.url,
      'INPUT_GITHUB-TOKEN': TOKEN,
      'INPUT_PROJECT-PATH': 'shop',
      // The base URL form: the action turns it into the document's.
      'INPUT_REGISTRY-URL': server.url,
      'INPUT_BASE-BRANCH': 'main',
    };
    const first = await runBundledAction(bundle.file, env, { cwd: workspace });
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.outputs).toEqual({ updated: 'true', version: '1.1.0', 'pull-request-number': '1', 'pull-request-url': `https://github.test/${OWNER}/${REPO}/pull/1`, conflicts: '0' });
    expect(first.stdout).toContain('::group::Update demo-template 1.0.0 -> 1.1.0');
    // The only place the token appears is the runner's command that masks it.
    expect(`${first.stdout}${first.stderr}`.replace(`::add-mask::${TOKEN}`, '')).not.toContain(TOKEN);
    expect(remoteRef(bare, `refs/heads/${BRANCH}`)).not.toBe('');
    // The base branch was given: the repository was not asked for its default.
    expect(github.requests.map((r) => r.path)).not.toContain(`/repos/${OWNER}/${REPO}`);

    const second = await runBundledAction(bundle.file, env, { cwd: workspace });
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.outputs).toMatchObject({ updated: 'true', 'pull-request-number': '1' });
    expect(github.writes()).toHaveLength(1);
  });

  it('fails naming the input when the token is missing, and sets no output', async () => {
    const calls: string[] = [];
    const core: SyncActionCore = {
      setOutput: (name, value) => void calls.push(`output ${name}=${value}`),
      setSecret: () => undefined,
      setFailed: (message) => void calls.push(`failed ${message}`),
      info: () => undefined,
      warning: () => undefined,
      startGroup: () => undefined,
      endGroup: () => undefined,
    };
    const outcome = await run({ env: { GITHUB_REPOSITORY: 'acme/shop', 'INPUT_PROJECT-PATH': '.' }, core });
    expect(outcome.ok).toBe(false);
    expect(calls).toEqual([expect.stringMatching(/^failed input github-token is required/)]);
  });
});

describe('parseSyncInputs', () => {
  const env = { GITHUB_REPOSITORY: 'acme/shop', 'INPUT_GITHUB-TOKEN': TOKEN };

  it('has defaults for everything but the token', () => {
    expect(parseSyncInputs({ ...env, GITHUB_WORKSPACE: '/ws' })).toEqual({
      githubToken: TOKEN,
      workspace: '/ws',
      projectDir: '/ws',
      repository: { owner: 'acme', repo: 'shop' },
      apiUrl: 'https://api.github.com',
    });
    expect(parseSyncInputs(env, '/here').workspace).toBe('/here');
  });

  it('reads every input; the registry as a base or document URL', () => {
    const inputs = parseSyncInputs({
      ...env,
      GITHUB_WORKSPACE: '/ws',
      GITHUB_API_URL: 'https://ghe.example/api/v3',
      'INPUT_REGISTRY-URL': 'https://registry.example/templates/',
      'INPUT_PROJECT-PATH': 'apps/shop',
      'INPUT_BASE-BRANCH': 'release/2.x',
    });
    expect(inputs).toMatchObject({ registryUrl: 'https://registry.example/templates/registry.json', projectDir: '/ws/apps/shop', baseBranch: 'release/2.x', apiUrl: 'https://ghe.example/api/v3' });
    expect(parseSyncInputs({ ...env, 'INPUT_REGISTRY-URL': 'https://registry.example/registry.json' }).registryUrl).toBe('https://registry.example/registry.json');
  });

  it('refuses a missing token, a project outside the workspace and bad values, naming the input', () => {
    expect(() => parseSyncInputs({ GITHUB_REPOSITORY: 'acme/shop' })).toThrow(InputError);
    expect(() => parseSyncInputs({ GITHUB_REPOSITORY: 'acme/shop' })).toThrow(/input github-token is required/);
    expect(() => parseSyncInputs({ ...env, GITHUB_WORKSPACE: '/ws', 'INPUT_PROJECT-PATH': '../elsewhere' })).toThrow(/input project-path must stay inside the workspace \/ws/);
    expect(() => parseSyncInputs({ ...env, GITHUB_WORKSPACE: '/ws', 'INPUT_PROJECT-PATH': '/etc' })).toThrow(/input project-path/);
    expect(() => parseSyncInputs({ ...env, 'INPUT_REGISTRY-URL': 'ftp://registry.example' })).toThrow(/input registry-url must be an http\(s\) URL/);
    expect(() => parseSyncInputs({ ...env, 'INPUT_BASE-BRANCH': '--force' })).toThrow(/input base-branch is not a valid branch name/);
    expect(() => parseSyncInputs({ ...env, 'INPUT_BASE-BRANCH': 'a..b' })).toThrow(/input base-branch/);
    expect(() => parseSyncInputs({ 'INPUT_GITHUB-TOKEN': TOKEN })).toThrow(/GITHUB_REPOSITORY must be owner\/repo/);
  });
});

describe('the sync action and a secret answer', () => {
  const secret = 'tok_sync7c6b5a4f3e';
  const S1: VersionSpec = { version: '1.0.0', files: secretFiles };
  /** 1.1.0 changes the file that holds the secret: the update needs it. */
  const S1_1: VersionSpec = { version: '1.1.0', files: { ...secretFiles, 'template/config/api.txt': 'token={{ apiToken }}\nretries=3\n' } };

  it('reads the secret from the environment it is given; without it the update stops naming the variable; no pull request or lock holds it', async () => {
    process.env[SECRET_ENV] = secret;
    let context: Setup;
    try {
      context = await setup([S1], [S1_1]);
    } finally {
      delete process.env[SECRET_ENV];
    }
    const { github, bare, sync } = context;
    await expect(sync()).rejects.toThrow(`apiToken: is a secret (kept in no file) that this update needs to render "config/api.txt" again: give it with --set apiToken=... or the environment variable ${SECRET_ENV}`);
    expect(github.pulls).toHaveLength(0);

    const result = await sync({ env: { [SECRET_ENV]: secret } });
    expect(result).toMatchObject({ status: 'updated', version: '1.1.0', pushed: true });
    const head = remoteRef(bare, `refs/heads/${BRANCH}`);
    expect(show(bare, head, 'config/api.txt')).toBe(`token=${secret}\nretries=3\n`);
    expect(show(bare, head, '.template-lock.json')).not.toContain(secret);
    expect(github.pulls[0]?.body).toContain('config/api.txt');
    expect(github.pulls[0]?.body).not.toContain(secret);
  });
});
