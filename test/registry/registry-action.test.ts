import { access, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { createGitHubClient } from '../../src/github/index.js';
import type { RegistryDocument } from '../../src/core/schema-types.js';
import { InputError, parseRegistryInputs } from '../../src/registry-action/inputs.js';
import { run, type RegistryActionCore } from '../../src/registry-action/main.js';
import { startFakeGitHub } from '../helpers/fake-github.js';
import { tempDir } from '../helpers/fixtures.js';
import { S3RVER_CREDENTIALS, startFakeS3 } from '../helpers/s3-server.js';
import { startFakeApi } from '../helpers/fake-cdn.js';
import { privateJwk, publicJwk } from '../helpers/signing-keys.js';
import { manifest, memorySource, version } from './memory-source.js';

function recordingCore() {
  const calls = {
    outputs: {} as Record<string, string>,
    secrets: [] as string[],
    failed: [] as string[],
    info: [] as string[],
    warnings: [] as string[],
    summary: [] as string[],
    summaryWritten: false,
  };
  const core: RegistryActionCore = {
    setOutput: (name, value) => void (calls.outputs[name] = value),
    setSecret: (secret) => void calls.secrets.push(secret),
    setFailed: (message) => void calls.failed.push(message),
    info: (message) => void calls.info.push(message),
    warning: (message) => void calls.warnings.push(message),
    summary: {
      addHeading: (text) => calls.summary.push(text),
      addTable: (rows) => calls.summary.push(JSON.stringify(rows)),
      addRaw: (text) => calls.summary.push(text),
      write: () => {
        calls.summaryWritten = true;
        return Promise.resolve();
      },
    },
  };
  return { core, calls };
}

describe('parseRegistryInputs', () => {
  it('applies the defaults and resolves paths against the workspace', () => {
    expect(parseRegistryInputs({ GITHUB_WORKSPACE: '/ws', 'INPUT_GITHUB-TOKEN': 'ghs_x' })).toEqual({
      configPath: '/ws/registry.config.json',
      outDir: '/ws/public',
      githubToken: 'ghs_x',
    });
  });

  it('reads every input', () => {
    expect(
      parseRegistryInputs({
        GITHUB_WORKSPACE: '/ws',
        GITHUB_API_URL: 'https://ghe.example.com/api/v3',
        INPUT_CONFIG: 'conf/registry.json',
        'INPUT_OUT-DIR': '/abs/site',
        'INPUT_GITHUB-TOKEN': ' ghs_x ',
        'INPUT_PUBLIC-URL': 'https://acme.github.io/registry',
      }),
    ).toEqual({
      configPath: '/ws/conf/registry.json',
      outDir: '/abs/site',
      githubToken: 'ghs_x',
      publicUrl: 'https://acme.github.io/registry',
      apiUrl: 'https://ghe.example.com/api/v3',
    });
  });

  it('refuses a missing token and a public-url that is not http(s)', () => {
    expect(() => parseRegistryInputs({})).toThrow(InputError);
    expect(() => parseRegistryInputs({})).toThrow(/github-token is required/);
    expect(() => parseRegistryInputs({ 'INPUT_GITHUB-TOKEN': 'x', 'INPUT_PUBLIC-URL': 'ftp://x' })).toThrow(/public-url must be an http\(s\) URL/);
  });

  it('takes an s3:// out-dir as a bucket and prefix, with the S3 inputs', () => {
    expect(
      parseRegistryInputs({
        GITHUB_WORKSPACE: '/ws',
        'INPUT_GITHUB-TOKEN': 'x',
        'INPUT_OUT-DIR': 's3://registry-site/prod/',
        'INPUT_S3-ENDPOINT': 'https://acct.r2.cloudflarestorage.com',
        'INPUT_S3-FORCE-PATH-STYLE': 'true',
      }),
    ).toEqual({
      configPath: '/ws/registry.config.json',
      outDir: 's3://registry-site/prod/',
      s3: { bucket: 'registry-site', prefix: 'prod/', endpoint: 'https://acct.r2.cloudflarestorage.com', forcePathStyle: true },
      githubToken: 'x',
    });
    expect(parseRegistryInputs({ 'INPUT_GITHUB-TOKEN': 'x', 'INPUT_OUT-DIR': 's3://registry-site', 'INPUT_S3-FORCE-PATH-STYLE': 'false' }).s3).toEqual({
      bucket: 'registry-site',
      prefix: '',
      forcePathStyle: false,
    });
  });

  it.each([
    [{ 'INPUT_OUT-DIR': 's3:///prod' }, /^input out-dir: must name a bucket/],
    [{ 'INPUT_OUT-DIR': 's3://Registry/prod' }, /^input out-dir: bucket "Registry" must be/],
    [{ 'INPUT_OUT-DIR': 's3://registry/prod?x=1' }, /^input out-dir: must not have a query string/],
    [{ 'INPUT_OUT-DIR': 'gs://registry/prod' }, /^input out-dir: must be a folder or an s3:\/\/bucket\/prefix URL/],
    [{ 'INPUT_OUT-DIR': 'public', 'INPUT_S3-ENDPOINT': 'https://minio.example' }, /^input s3-endpoint needs an out-dir of the form s3:\/\/bucket\/prefix/],
    [{ 'INPUT_OUT-DIR': 'public', 'INPUT_S3-FORCE-PATH-STYLE': 'true' }, /^input s3-force-path-style needs an out-dir/],
    [{ 'INPUT_OUT-DIR': 's3://registry/prod', 'INPUT_S3-ENDPOINT': 'minio:9000' }, /^input s3-endpoint must be an http\(s\) URL/],
    [{ 'INPUT_OUT-DIR': 's3://registry/prod', 'INPUT_S3-FORCE-PATH-STYLE': 'yes' }, /^input s3-force-path-style must be true or false/],
  ])('refuses %j naming the input', (inputs, message) => {
    expect(() => parseRegistryInputs({ 'INPUT_GITHUB-TOKEN': 'x', ...inputs })).toThrow(InputError);
    expect(() => parseRegistryInputs({ 'INPUT_GITHUB-TOKEN': 'x', ...inputs })).toThrow(message);
  });
});

describe('registry/action.yml', () => {
  it('points at the bundle relative to its own folder and declares the inputs and outputs run() uses', async () => {
    const yml = await readFile('registry/action.yml', 'utf8');
    const main = /^\s+main:\s*(\S+)\s*$/m.exec(yml)?.[1] ?? '';
    expect(main).toBe('../dist/registry-action/index.js');
    await access(path.resolve('registry', main));
    expect(yml).toMatch(/^\s+using:\s*node24\s*$/m);
    const section = (name: string) => (new RegExp(`^${name}:\\n([\\s\\S]*?)(?=^\\S)`, 'm').exec(yml)?.[1] ?? '').match(/^ {2}([a-z0-9-]+):/gm)?.map((k) => k.trim().slice(0, -1));
    expect(section('inputs')).toEqual(['config', 'out-dir', 'github-token', 'public-url', 's3-endpoint', 's3-force-path-style', 'purge', 'cdn-url', 'sign-key']);
    expect(section('outputs')).toEqual(['changed', 'templates', 'versions', 'etag', 'last-updated', 'purged', 'signed-by']);
    expect(yml).toMatch(/config:[\s\S]*?default: registry\.config\.json/);
    expect(yml).toMatch(/out-dir:[\s\S]*?default: public/);
    expect(yml).toMatch(/s3-force-path-style:[\s\S]*?default: 'false'/);
    expect(yml).toContain('default: ${{ github.token }}');
  });
});

describe('the registry action run()', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.unstubAllEnvs();
    await Promise.all(closers.splice(0).map((close) => close()));
  });

  it('builds into an s3:// out-dir with the s3 inputs and the AWS credentials of the environment', async () => {
    const s3 = await startFakeS3(['registry-site']);
    closers.push(() => s3.close());
    // Credentials reach the SDK the way aws-actions/configure-aws-credentials leaves them: in the process environment.
    vi.stubEnv('AWS_ACCESS_KEY_ID', S3RVER_CREDENTIALS.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', S3RVER_CREDENTIALS.secretAccessKey);
    const env = {
      GITHUB_WORKSPACE: await tempDir(),
      'INPUT_GITHUB-TOKEN': 'ghs_secret',
      'INPUT_OUT-DIR': 's3://registry-site/prod',
      'INPUT_S3-ENDPOINT': s3.endpoint,
      'INPUT_S3-FORCE-PATH-STYLE': 'true',
    };
    const source = memorySource([version('a', '1.0.0')]);
    const { core, calls } = recordingCore();
    const outcome = await run({ env, core, source });
    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(calls.outputs.changed).toBe('true');
    expect(calls.info.join('\n')).toContain('in s3://registry-site/prod');
    expect(calls.info.join('\n')).not.toContain(S3RVER_CREDENTIALS.secretAccessKey);

    const inspector = new S3Client({ endpoint: s3.endpoint, forcePathStyle: true, region: 'us-east-1', credentials: S3RVER_CREDENTIALS });
    closers.push(() => Promise.resolve(inspector.destroy()));
    const object = await inspector.send(new GetObjectCommand({ Bucket: 'registry-site', Key: 'prod/registry.json' }));
    expect(object.ContentType).toBe('application/json; charset=utf-8');
    expect((JSON.parse(await object.Body!.transformToString()) as RegistryDocument).templates).toHaveLength(1);

    const again = recordingCore();
    const second = await run({ env, core: again.core, source });
    expect(again.calls.outputs.changed).toBe('false');
    expect(second.result?.written).toEqual([]);
  });

  it('purges the URLs the build changed at the purge targets, under cdn-url, and says how many', async () => {
    const cache = await startFakeApi(() => ({ status: 200 }));
    const env = { GITHUB_WORKSPACE: await tempDir(), 'INPUT_GITHUB-TOKEN': 'ghs_secret', 'INPUT_OUT-DIR': 'site', INPUT_PURGE: cache.url, 'INPUT_CDN-URL': 'https://owner.example/registry' };
    const { core, calls } = recordingCore();
    await run({ env, core, source: memorySource([version('a', '1.0.0')]), sleep: () => Promise.resolve() });
    expect(calls.failed).toEqual([]);
    const paths = cache.requests.map((r) => `${r.method} ${String(r.headers.host)}${r.path}`);
    expect(paths).toEqual(expect.arrayContaining(['PURGE owner.example/registry/registry.json', 'PURGE owner.example/registry/templates/a.json', 'PURGE owner.example/registry/']));
    expect(calls.outputs.purged).toBe(String(paths.length));
    expect(calls.info).toContain(`purged ${paths.length} URL(s) at ${cache.url}`);
  });

  it('refuses a purge target it does not know, and a purge without a URL to purge under', () => {
    expect(() => parseRegistryInputs({ 'INPUT_GITHUB-TOKEN': 'x', INPUT_PURGE: 'akamai:1', 'INPUT_PUBLIC-URL': 'https://x.example' })).toThrow(/input purge: unknown purge target/);
    expect(() => parseRegistryInputs({ 'INPUT_GITHUB-TOKEN': 'x', INPUT_PURGE: 'cloudflare:z' })).toThrow(/input purge needs cdn-url \(or public-url\)/);
  });

  it('signs the registry with the sign-key input (a secret JWK, or a file in the workspace), masking an inline key', async () => {
    const jwk = await privateJwk('action-key');
    const workspace = await tempDir();
    await writeFile(path.join(workspace, 'key.json'), JSON.stringify(jwk));
    for (const signKey of ['key.json', JSON.stringify(jwk)]) {
      const { core, calls } = recordingCore();
      const env = { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'ghs_secret', 'INPUT_OUT-DIR': `site-${signKey.length}`, 'INPUT_SIGN-KEY': signKey };
      const outcome = await run({ env, core, source: memorySource([version('a', '1.0.0')]) });
      expect(calls.failed).toEqual([]);
      expect(outcome.ok).toBe(true);
      expect(calls.outputs['signed-by']).toBe('action-key');
      await expect(readFile(path.join(workspace, `site-${signKey.length}`, 'registry.json.jws'), 'utf8')).resolves.toMatch(/^ey/);
      expect(calls.secrets).toEqual(signKey.startsWith('{') ? ['ghs_secret', signKey] : ['ghs_secret']);
    }
    const { core, calls } = recordingCore();
    await run({ env: { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'x', 'INPUT_SIGN-KEY': JSON.stringify(publicJwk(jwk)) }, core, source: memorySource([version('a', '1.0.0')]) });
    expect(calls.failed.join('\n')).toMatch(/input sign-key \(kid action-key\) is a public key: signing needs the private key/);
  });

  it('builds the registry from an injected source into out-dir and sets the outputs', async () => {
    const workspace = await tempDir();
    const { core, calls } = recordingCore();
    const source = memorySource([version('a', '1.0.0'), version('a', '1.1.0'), version('b', '0.1.0', { stability: 'beta' })]);
    const env = { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'ghs_secret', 'INPUT_OUT-DIR': 'site' };
    const outcome = await run({ env, core, source, now: () => new Date('2026-05-01T00:00:00.000Z') });

    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(calls.secrets).toEqual(['ghs_secret']);
    const registry = await readFile(path.join(workspace, 'site', 'registry.json'));
    const document = JSON.parse(registry.toString()) as RegistryDocument;
    expect(document.templates).toHaveLength(3);
    expect(calls.outputs).toEqual({
      changed: 'true',
      templates: '2',
      versions: '3',
      etag: outcome.result?.etag,
      'last-updated': '2026-05-01T00:00:00.000Z',
    });
    expect(calls.outputs.etag).toMatch(/^"[\w-]{43}"$/);
    for (const file of ['index.html', 'index.html.gz', 'templates/a.json', 'templates/b.json']) {
      await expect(readFile(path.join(workspace, 'site', file))).resolves.toBeTruthy();
    }
    expect(calls.summaryWritten).toBe(true);
    expect(calls.summary.join('\n')).toContain('["a","1.1.0 (stable)","2","0"]');

    const again = recordingCore();
    await run({ env, core: again.core, source, now: () => new Date('2026-06-01T00:00:00.000Z') });
    expect(again.calls.outputs.changed).toBe('false');
    expect(again.calls.outputs['last-updated']).toBe('2026-05-01T00:00:00.000Z');
  });

  it('reads the config, queries GitHub through the injected client and reports skipped repositories as warnings', async () => {
    const github = await startFakeGitHub({ token: 'ghs_secret' });
    closers.push(() => github.close());
    github.addRepo('acme/node-service', { stars: 2 });
    github.addRepoRelease('acme/node-service', {
      tag_name: 'v1.0.0',
      assets: [
        { name: 'node-service-1.0.0.tgz', content: 'x', downloadCount: 9 },
        { name: 'template.json', content: manifest('node-service', '1.0.0') },
      ],
    });
    const workspace = await tempDir();
    await writeFile(path.join(workspace, 'registry.config.json'), JSON.stringify({ repositories: ['acme/node-service', 'acme/gone'] }));
    const { core, calls } = recordingCore();
    const tokens: string[] = [];
    const outcome = await run({
      env: { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'ghs_secret', GITHUB_API_URL: github.url },
      core,
      octokit: (token, baseUrl, log) => {
        tokens.push(token);
        return createGitHubClient({ token, ...(baseUrl ? { baseUrl } : {}), retries: 0, throttle: { enabled: false }, log });
      },
    });
    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(tokens).toEqual(['ghs_secret']);
    expect(calls.warnings).toEqual([expect.stringMatching(/^acme\/gone: skipped the repository: 404/)]);
    expect(calls.outputs).toMatchObject({ changed: 'true', templates: '1', versions: '1' });
    const document = JSON.parse(await readFile(path.join(workspace, 'public', 'registry.json'), 'utf8')) as RegistryDocument;
    expect(document.templates[0]).toMatchObject({ id: 'node-service', stats: { downloads: 9, stars: 2 } });
  });

  it('fails with a clear message when the config file is missing, and writes nothing', async () => {
    const workspace = await tempDir();
    const { core, calls } = recordingCore();
    const outcome = await run({ env: { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'x' }, core, octokit: () => createGitHubClient({ token: 'x' }) });
    expect(outcome.ok).toBe(false);
    expect(calls.failed).toEqual([`${path.join(workspace, 'registry.config.json')}: no such file`]);
    expect(calls.outputs).toEqual({});
    expect(calls.summary.join('\n')).toMatch(/not built/);
  });

  it('reads its inputs from process.env when no environment is given', async () => {
    const workspace = await tempDir();
    const saved = { ...process.env };
    Object.assign(process.env, { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'ghs_from_env', 'INPUT_OUT-DIR': 'env-site' });
    try {
      const { core, calls } = recordingCore();
      const outcome = await run({ core, source: memorySource([version('a', '1.0.0')]) });
      expect(calls.failed).toEqual([]);
      expect(outcome.ok).toBe(true);
      expect(calls.secrets).toEqual(['ghs_from_env']);
      await expect(readFile(path.join(workspace, 'env-site', 'registry.json'))).resolves.toBeTruthy();
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });

  it('leaves out a version whose entry is invalid, with a warning naming it, and publishes the others', async () => {
    const workspace = await tempDir();
    const { core, calls } = recordingCore();
    const outcome = await run({ env: { GITHUB_WORKSPACE: workspace, 'INPUT_GITHUB-TOKEN': 'x' }, core, source: memorySource([version('a', '1.0'), version('b', '1.0.0')]) });
    expect(outcome.ok).toBe(true);
    expect(outcome.outputs.versions).toBe('1');
    expect(calls.warnings).toContainEqual(expect.stringMatching(/left out a@1\.0: .*\/version must be MAJOR\.MINOR\.PATCH/));
  });
});
