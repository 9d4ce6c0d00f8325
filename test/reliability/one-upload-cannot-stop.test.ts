/**
 * One upload can never stop the registry: names are capped at 214 characters everywhere (manifest,
 * entry, every route, with answers in the envelope), and a rebuild that cannot write one
 * template's files keeps that template's previous output, reports it by name and builds every
 * other template; the server starts whatever one version's output does.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';

import { describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/index.js';
import { indexLines } from '../../src/core/registry-index.js';
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { FolderOutput, RegistryBuilder, type RegistrySource, type SourceVersion } from '../../src/registry/index.js';
import type { OutputFile } from '../../src/registry/output.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';

const longName = (length: number): string => `t${'x'.repeat(length - 1)}`;

async function packed(name: string, version = '1.0.0') {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name, version } });
  return packTemplate(dir, { outDir: await tempDir('tr-pack-') });
}

async function publish(server: TestServer, name: string, version = '1.0.0'): Promise<number> {
  const pack = await packed(name, version);
  try {
    return (await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).status;
  } catch (error) {
    if (error instanceof PublishError) return error.status ?? 0;
    throw error;
  }
}

const listed = async (url: string): Promise<string[]> =>
  ((await (await fetch(`${url}/registry.json`)).json()) as RegistryDocument).templates.map((t) => `${t.id}@${t.version}`).sort();

describe('names are at most 214 characters', () => {
  it('refuses a longer name at upload with a 422 naming the field, and stores nothing', async () => {
    const server = await startRegistryServer();
    const dir = await writeTemplate({ 'template.json': { ...validManifest, name: longName(251) } });
    // pack refuses it too; the raw upload below is what a hand-made client would send.
    await expect(packTemplate(dir, { outDir: await tempDir() })).rejects.toThrow(/at most 214 characters/);
    const accepted = await packed('short-name');
    const form = new FormData();
    form.set('template', new Blob([await readFile(accepted.file)]), 'template.tgz');
    form.set('manifest', new Blob([JSON.stringify({ ...accepted.manifest, name: longName(251) })], { type: 'application/json' }), 'template.json');
    const response = await fetch(`${server.url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${server.token}` }, body: form });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: { details: { field: string; message: string }[] } };
    expect(body.error.details).toContainEqual(expect.objectContaining({ field: 'name', message: expect.stringMatching(/214/) }));
    expect(await server.store.versions.listVersions()).toEqual([]);
    // The registry still takes uploads.
    expect(await publish(server, 'after-refusal')).toBe(201);
  });

  it('publishes a 214-character name, and every route of it answers (no 414)', async () => {
    const server = await startRegistryServer();
    const name = longName(214);
    expect(await publish(server, name)).toBe(201);
    const auth = { authorization: `Bearer ${server.token}` };
    for (const route of [`/templates/${name}`, `/templates/${name}/versions`, `/templates/${name}/versions/1.0.0`, `/templates/${name}/versions/1.0.0/archive`, `/templates/${name}.json`, `/templates/${name}/owners`, `/templates/${name}/analytics`]) {
      const response = await fetch(`${server.url}${route}`, { headers: auth });
      expect(response.status, route).toBe(200);
    }
    const patch = await fetch(`${server.url}/templates/${name}/versions/1.0.0`, { method: 'PATCH', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ stability: 'deprecated' }) });
    expect(patch.status).toBe(200);
    expect(await listed(server.url)).toEqual([`${name}@1.0.0`]);
  });

  it('answers a longer id on every route with a 400 in the envelope', async () => {
    const server = await startRegistryServer();
    const name = longName(300);
    for (const route of [`/templates/${name}`, `/templates/${name}/versions`, `/templates/${name}/versions/1.0.0`, `/templates/${name}/versions/1.0.0/archive`, `/templates/${name}/owners`, `/templates/${name}/analytics`]) {
      const response = await fetch(`${server.url}${route}`);
      expect(response.status, route).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code, route).toBe('VALIDATION_ERROR');
    }
  });
});

/** A source of fixed versions (store layout: no archives). */
function sourceOf(versions: () => SourceVersion[]): RegistrySource {
  return { versions: () => Promise.resolve(versions()) };
}

const version = (name: string, v: string, openArchive?: SourceVersion['openArchive']): SourceVersion => ({
  manifest: { ...validManifest, name, version: v },
  downloadUrl: `https://registry.example/${name}/${v}.tgz`,
  createdAt: '2026-01-01T00:00:00.000Z',
  stats: { downloads: 0, stars: 0, forks: 0, issues: 0 },
  ...(openArchive ? { openArchive } : {}),
});

/** A folder output whose writes of `failing` files fail (a full disk, a name the file system refuses). */
class FailingOutput extends FolderOutput {
  failing = new Set<string>();
  override async put(file: OutputFile, options?: { durable?: boolean }): Promise<void> {
    if (this.failing.has(file.name)) throw Object.assign(new Error(`ENOSPC: no space left on device, write '${file.name}'`), { code: 'ENOSPC' });
    return super.put(file, options);
  }
}

describe('a rebuild that cannot write one template', () => {
  it('keeps that template\'s previous output and lists it, builds every other one, and names it', async () => {
    const dir = await tempDir('tr-out-');
    const output = new FailingOutput(dir);
    let versions = [version('alpha', '1.0.0'), version('beta', '1.0.0')];
    const builder = new RegistryBuilder(sourceOf(() => versions), { output, catalog: true });
    expect((await builder.build()).failed).toEqual([]);
    const betaBefore = await readFile(path.join(dir, 'templates/beta.json'), 'utf8');

    versions = [...versions, version('alpha', '1.1.0'), version('beta', '1.1.0')];
    output.failing.add('templates/beta.json');
    const result = await builder.build();
    expect(result.failed).toEqual([{ id: 'beta', kept: true, message: expect.stringMatching(/templates\/beta\.json: ENOSPC/) }]);
    const document = JSON.parse(await readFile(path.join(dir, 'registry.json'), 'utf8')) as RegistryDocument;
    expect(document.templates.map((t) => `${t.id}@${t.version}`)).toEqual(['alpha@1.0.0', 'alpha@1.1.0', 'beta@1.0.0']);
    expect(await readFile(path.join(dir, 'templates/beta.json'), 'utf8')).toBe(betaBefore);
    const index = indexLines(JSON.parse(await readFile(path.join(dir, 'index.json'), 'utf8'))) as { templates: { id: string }[] };
    expect(index.templates.map((t) => t.id)).toEqual(['alpha', 'beta']);

    // The next build, with the disk fixed, catches up.
    output.failing.clear();
    const healed = await builder.build();
    expect(healed.failed).toEqual([]);
    expect(healed.document.templates.map((t) => `${t.id}@${t.version}`)).toEqual(['alpha@1.0.0', 'alpha@1.1.0', 'beta@1.0.0', 'beta@1.1.0']);
  });

  it('leaves a template out when it has no previous output, and keeps its archives\' failures to it', async () => {
    const dir = await tempDir('tr-out-');
    const broken = (): never => {
      throw new Error('the archive of gamma@1.0.0 is missing from the store');
    };
    const ok = async () => {
      const { Readable } = await import('node:stream');
      return { stream: Readable.from([Buffer.from('archive bytes')]), size: 13 };
    };
    const builder = new RegistryBuilder(sourceOf(() => [version('alpha', '1.0.0', ok), version('gamma', '1.0.0', () => Promise.resolve().then(broken))]), { outDir: dir, catalog: false });
    const result = await builder.build();
    expect(result.failed).toEqual([{ id: 'gamma', kept: false, message: expect.stringMatching(/gamma@1\.0\.0.*missing/) }]);
    expect(result.document.templates.map((t) => t.id)).toEqual(['alpha']);
    expect(await readFile(path.join(dir, 'archives/alpha/1.0.0.tgz'), 'utf8')).toBe('archive bytes');
  });
});

describe('a server whose store holds a version whose output cannot be written', () => {
  it('starts, serves every other template, logs the one by name and takes later uploads', async () => {
    const first = await startRegistryServer();
    expect(await publish(first, 'alpha')).toBe(201);
    expect(await publish(first, 'beta')).toBe(201);
    await first.app.close();

    // beta's template file can no longer be written: a folder with a file in it stands in its way.
    const blocked = path.join(first.storeDir, 'public', 'templates', 'beta.json');
    await rm(blocked, { force: true });
    await mkdir(blocked, { recursive: true });
    await writeFile(path.join(blocked, 'in-the-way'), 'x');

    const logs: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logs.push(chunk.toString('utf8'));
        callback();
      },
    });
    const server = await startRegistryServer({ storeDir: first.storeDir, logger: { level: 'error', stream } });
    expect(await listed(server.url)).toEqual(['alpha@1.0.0']);
    expect(logs.join('')).toMatch(/template beta could not be written/);
    expect(await publish(server, 'gamma')).toBe(201);
    expect(await listed(server.url)).toEqual(['alpha@1.0.0', 'gamma@1.0.0']);
    expect((await fetch(`${server.url}/templates/alpha`)).status).toBe(200);
  });
});
