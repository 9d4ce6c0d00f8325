/**
 * Issue 26, item 2: `build-registry` keeps a build state in its output, so that a build in a fresh
 * process reads only the versions that changed since; its output is byte for byte what a full build
 * writes, after a new template, a new version, a yank, a deprecation and a purge. A state that is
 * corrupt or was recorded for another source or other options is ignored, with a notice, and the
 * build is full.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { buildRegistry, type BuildOptions } from '../../src/registry/build.js';
import { GENERATOR_STATE_FILE } from '../../src/registry/folder-output.js';
import { storeSource } from '../../src/store/source.js';
import type { RegistryStorage } from '../../src/store/types.js';
import { cli } from '../helpers/cli.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { filesOf } from '../helpers/registry-files.js';

const NOW = new Date('2026-03-01T12:00:00.000Z');

async function publish(server: TestServer, name: string, version: string): Promise<void> {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, name, version, keywords: [name, `v${version}`] }, 'template/README.md': `# ${name} ${version}\n` });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
  expect((await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).status).toBe(201);
}

/** The store as `build-registry` opens it in a fresh process, recording which manifests it reads. */
function freshSource(store: RegistryStorage, read: string[], identity = 'the-store') {
  const versions = new Proxy(store.versions, {
    get(target, property, receiver) {
      // A full build reads the store a few templates at a time (listPublishedOf).
      if (property === 'listPublishedOf') {
        return async (names: readonly string[]) => {
          const listed = await target.listPublishedOf?.(names);
          for (const item of listed ?? []) read.push(`${item.name}@${item.version}`);
          return listed;
        };
      }
      if (property !== 'listPublished') return Reflect.get(target, property, receiver) as unknown;
      return async (known?: ReadonlySet<string>) => {
        const listed = await target.listPublished(known);
        for (const item of listed) if (!('known' in item)) read.push(`${item.name}@${item.version}`);
        return listed;
      };
    },
  });
  return storeSource({ versions, events: store.events }, undefined, { layout: 'static', identity });
}

describe('a build with a build state (build-registry in a fresh process)', () => {
  it('reads only the versions that changed, and writes what a full build writes', async () => {
    const server = await startRegistryServer();
    const out = await tempDir('tr-state-out-');
    const options: BuildOptions = { outDir: out, now: () => NOW, state: true, pruneArchives: true, allowEmpty: true };
    await publish(server, 'alpha', '1.0.0');
    await publish(server, 'alpha', '1.1.0');
    await publish(server, 'beta', '1.0.0');

    /** A build in a fresh process (a new source and builder), then a full build into an empty folder to compare with. */
    const rebuild = async (): Promise<{ read: string[]; notices: string[] }> => {
      const read: string[] = [];
      const result = await buildRegistry(freshSource(server.store, read), options);
      const full = await tempDir('tr-state-full-');
      await buildRegistry(freshSource(server.store, []), { ...options, outDir: full });
      expect(await filesOf(out)).toEqual(await filesOf(full));
      expect(result.counts.entries).toBe((JSON.parse(await readFile(path.join(full, 'registry.json'), 'utf8')) as { templates: unknown[] }).templates.length);
      return { read: read.sort(), notices: result.notices ?? [] };
    };

    // The first build has no state: it reads everything, says nothing about a state, and records one.
    expect(await rebuild()).toEqual({ read: ['alpha@1.0.0', 'alpha@1.1.0', 'beta@1.0.0'], notices: [] });
    expect(JSON.parse(await readFile(path.join(out, GENERATOR_STATE_FILE), 'utf8'))).toMatchObject({ format: 'template-registry-build-state', formatVersion: 1 });

    // Nothing changed: nothing is read.
    expect((await rebuild()).read).toEqual([]);
    // A new template: only its version is read.
    await publish(server, 'gamma', '1.0.0');
    expect((await rebuild()).read).toEqual(['gamma@1.0.0']);
    // A new version of a template: that template's versions are read, no other.
    await publish(server, 'alpha', '1.2.0');
    expect((await rebuild()).read).toEqual(['alpha@1.0.0', 'alpha@1.1.0', 'alpha@1.2.0']);
    // A yank and a deprecation change the entries of those templates only.
    expect(await server.store.versions.updateLifecycle('alpha', '1.2.0', { yanked: true })).toBeDefined();
    expect((await rebuild()).read).toEqual(['alpha@1.0.0', 'alpha@1.1.0', 'alpha@1.2.0']);
    expect(await server.store.versions.updateLifecycle('beta', '1.0.0', { stability: 'deprecated', deprecationMessage: 'use gamma' })).toBeDefined();
    expect((await rebuild()).read).toEqual(['beta@1.0.0']);
    // A purge: the purged version's template is made again; a purged template's files go.
    expect(await server.store.versions.purgeVersion('alpha', '1.1.0')).toBeDefined();
    expect((await rebuild()).read).toEqual(['alpha@1.0.0', 'alpha@1.2.0']);
    expect(await server.store.versions.purgeVersion('gamma', '1.0.0')).toBeDefined();
    expect((await rebuild()).read).toEqual([]);
    expect((await filesOf(out)).has('templates/gamma.json')).toBe(false);
  }, 60_000);

  it('ignores a corrupt state or one recorded for another source or other options, says so, and builds in full', async () => {
    const server = await startRegistryServer();
    const out = await tempDir('tr-state-foreign-');
    const options: BuildOptions = { outDir: out, now: () => NOW, state: true, pruneArchives: true };
    await publish(server, 'alpha', '1.0.0');
    await publish(server, 'beta', '1.0.0');
    await buildRegistry(freshSource(server.store, []), options);
    const full = await tempDir('tr-state-expected-');
    await buildRegistry(freshSource(server.store, []), { ...options, outDir: full });

    const attempt = async (source: ReturnType<typeof freshSource>, read: string[], more: Partial<BuildOptions> = {}) => {
      const result = await buildRegistry(source, { ...options, ...more });
      return { read: read.sort(), notices: (result.notices ?? []).filter((notice) => notice.startsWith('the build state was not used')) };
    };

    let read: string[] = [];
    await writeFile(path.join(out, GENERATOR_STATE_FILE), '{"format":"template-registry-build-state","formatVersion":1,"templ');
    expect(await attempt(freshSource(server.store, read), read)).toEqual({ read: ['alpha@1.0.0', 'beta@1.0.0'], notices: [expect.stringContaining('not valid JSON') as string] });
    expect(await filesOf(out)).toEqual(await filesOf(full));

    read = [];
    expect(await attempt(freshSource(server.store, read, 'another-store'), read)).toEqual({ read: ['alpha@1.0.0', 'beta@1.0.0'], notices: [expect.stringContaining('another source or other options') as string] });

    // Other options that change the output (here the public URL) do not use a state recorded without them.
    read = [];
    expect(await attempt(freshSource(server.store, read, 'another-store'), read, { publicUrl: 'https://registry.example.com' })).toEqual({
      read: ['alpha@1.0.0', 'beta@1.0.0'],
      notices: [expect.stringContaining('another source or other options') as string],
    });

    // A state of another format version, and one whose records do not fit registry.json.
    const state = JSON.parse(await readFile(path.join(out, GENERATOR_STATE_FILE), 'utf8')) as { formatVersion: number; templates: { span: number[] }[] };
    read = [];
    await writeFile(path.join(out, GENERATOR_STATE_FILE), JSON.stringify({ ...state, formatVersion: 99 }));
    expect(await attempt(freshSource(server.store, read, 'another-store'), read, { publicUrl: 'https://registry.example.com' })).toEqual({
      read: ['alpha@1.0.0', 'beta@1.0.0'],
      notices: [expect.stringContaining('another format or version') as string],
    });
    read = [];
    await writeFile(path.join(out, GENERATOR_STATE_FILE), JSON.stringify({ ...state, templates: state.templates.map((t) => ({ ...t, span: [1e9, 5] })) }));
    expect(await attempt(freshSource(server.store, read, 'another-store'), read, { publicUrl: 'https://registry.example.com' })).toEqual({
      read: ['alpha@1.0.0', 'beta@1.0.0'],
      notices: [expect.stringContaining('corrupt') as string],
    });
    // registry.json changed behind the generator: the state does not describe it.
    read = [];
    await buildRegistry(freshSource(server.store, []), options);
    await writeFile(path.join(out, 'registry.json'), '{"templates":[]}\n');
    expect(await attempt(freshSource(server.store, read), read)).toEqual({ read: ['alpha@1.0.0', 'beta@1.0.0'], notices: [expect.stringContaining('registry.json is not the one') as string] });
    expect(await filesOf(out)).toEqual(await filesOf(full));
  }, 60_000);

  it('is kept by build-registry --store, and one recorded with another --public-url is not used (a warning says so)', async () => {
    const server = await startRegistryServer();
    await publish(server, 'alpha', '1.0.0');
    const out = await tempDir('tr-state-cli-');
    const first = await cli('build-registry', '--store', server.storeDir, '--out', out, '--json');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ entries: 1, templates: 1, warnings: [] });
    expect(JSON.parse(await readFile(path.join(out, GENERATOR_STATE_FILE), 'utf8'))).toMatchObject({ templates: [{ id: 'alpha', versions: ['1.0.0'] }] });

    await publish(server, 'beta', '1.0.0');
    const second = await cli('build-registry', '--store', server.storeDir, '--out', out, '--json');
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ entries: 2, templates: 2, warnings: [] });

    const other = await cli('build-registry', '--store', server.storeDir, '--out', out, '--public-url', 'https://registry.example.com');
    expect(other.code).toBe(0);
    expect(other.stderr).toContain('warning: the build state was not used (the build state was recorded for another source or other options');
  }, 60_000);
});
