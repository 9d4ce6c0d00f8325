/**
 * The server builds its registry on a thread of its own when its store can be opened there
 * (server/build-thread.ts): the same document as a build on the serving thread, a version stored
 * after a build listed by the next, a failed build reaching the caller, the serving thread taking
 * over when the worker is gone, and a server that answers what its thread built. The worker's script
 * is the built one (`npm test` builds first); the sources have none, and build on their own thread.
 */
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { computeIntegrity } from '../../src/archive/integrity.js';
import { ServerBuilder as SourceServerBuilder } from '../../src/server/build-thread.js';
import type { RegistryStorage, SqliteStorage } from '../../src/store/index.js';
import { templateManifest } from '../helpers/builders.js';
import { tempDir } from '../helpers/fixtures.js';

const built = path.resolve('build/src');
const { ServerBuilder } = (await import(path.join(built, 'server/build-thread.js'))) as typeof import('../../src/server/build-thread.js');
const { createServer } = (await import(path.join(built, 'server/index.js'))) as typeof import('../../src/server/index.js');
// The built store: the builder knows the stores its own module opened.
const { openSqliteStorage } = (await import(path.join(built, 'store/index.js'))) as typeof import('../../src/store/index.js');

const PUBLIC_URL = 'https://registry.example.test';
const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of closing.splice(0).reverse()) await thing.close();
});

async function store(): Promise<SqliteStorage> {
  const storage = await openSqliteStorage(await tempDir('tr-build-thread-'));
  closing.push(storage);
  return storage;
}

function builder(storage: RegistryStorage, script?: URL): InstanceType<typeof ServerBuilder> {
  const made = script ? new ServerBuilder(storage, PUBLIC_URL, script) : new ServerBuilder(storage, PUBLIC_URL);
  closing.push(made);
  return made;
}

/** Stores name@version as an upload does (reserve, then commit with its archive). */
async function publish(storage: RegistryStorage, name: string, version: string): Promise<void> {
  const { record } = await storage.tokens.createToken({ role: 'admin', owner: 'root' });
  const file = path.join(await tempDir(), 'upload.tgz');
  await writeFile(file, `archive of ${name}@${version}\n`);
  const digest = await computeIntegrity(file);
  expect(await storage.versions.reserveVersion({ name, version, ...digest, owner: record.owner }, record)).toEqual({ reserved: true });
  await storage.versions.commitVersion(name, version, file, templateManifest(name, version), []);
}

const listed = (document: { templates: { id: string; version: string }[] }): string[] => document.templates.map((entry) => `${entry.id}@${entry.version}`).sort();

describe("the server's build thread", () => {
  it('builds an embedded store opened from its folder on its thread, with the document a build on the serving thread makes', async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    await publish(storage, 'api-kit', '0.1.0');
    const threaded = builder(storage);
    expect(threaded.onThread()).toBe(true);
    const result = await threaded.build();
    expect(listed(result.document)).toEqual(['api-kit@0.1.0', 'web-app@1.0.0']);
    expect(result.written).toContain('registry.json');
    expect(result.written).toContain('templates/web-app.json');
    // The serving thread's builder (a wrapped store cannot be opened on a thread) finds the same registry written.
    const here = builder({ ...storage });
    expect(here.onThread()).toBe(false);
    const again = await here.build();
    expect(again.etag).toBe(result.etag);
    expect(again.changed).toBe(false);
    expect(again.document).toEqual(result.document);
  });

  it('lists a version stored after a build in the next one, which rewrites only what changed', async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    await publish(storage, 'api-kit', '0.1.0');
    const threaded = builder(storage);
    const first = await threaded.build();
    await publish(storage, 'web-app', '1.1.0');
    const next = await threaded.build();
    expect(listed(next.document)).toEqual(['api-kit@0.1.0', 'web-app@1.0.0', 'web-app@1.1.0']);
    expect(next.etag).not.toBe(first.etag);
    expect(next.written).toContain('registry.json');
    expect(next.written).toContain('templates/web-app.json');
    expect(next.written).not.toContain('templates/api-kit.json');
  });

  it("rejects with the worker's message when the build fails there, and builds again once the cause is gone", async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    const threaded = builder(storage);
    // The worker opens the store from its folder: a folder without its database is refused.
    const database = path.join(storage.dir, 'registry.sqlite');
    await rename(database, `${database}.aside`);
    await expect(threaded.build()).rejects.toThrow(/holds no registry store/);
    await rename(`${database}.aside`, database);
    expect(threaded.onThread()).toBe(true);
    expect(listed((await threaded.build()).document)).toEqual(['web-app@1.0.0']);
  });

  it('rejects the build in progress when the worker goes away, and builds on the serving thread from then on', async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    const dir = await tempDir('tr-build-thread-script-');
    const script = path.join(dir, 'exits.mjs');
    await writeFile(script, "import { parentPort } from 'node:worker_threads';\nparentPort.on('message', () => process.exit(7));\n");
    const threaded = builder(storage, new URL(`file://${script}`));
    expect(threaded.onThread()).toBe(true);
    await expect(threaded.build()).rejects.toThrow(/registry build worker exited \(code 7\)/);
    expect(threaded.onThread()).toBe(false);
    expect(listed((await threaded.build()).document)).toEqual(['web-app@1.0.0']);
  });

  it('waits for the build in progress when it closes', async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    const threaded = new ServerBuilder(storage, PUBLIC_URL);
    const building = threaded.build();
    await threaded.close();
    expect(listed((await building).document)).toEqual(['web-app@1.0.0']);
  });

  it('builds on the serving thread where its script is not beside it (the sources)', async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    const fromSources = new SourceServerBuilder(storage, PUBLIC_URL);
    closing.push(fromSources);
    expect(fromSources.onThread()).toBe(false);
    expect(listed((await fromSources.build()).document)).toEqual(['web-app@1.0.0']);
  });

  it('gives a server started on the store what its thread built, and a stored change after its rebuild', async () => {
    const storage = await store();
    await publish(storage, 'web-app', '1.0.0');
    const server = await createServer({ store: storage, publicUrl: PUBLIC_URL });
    closing.push({ close: () => server.app.close() });
    const read = async (): Promise<string[]> => {
      const answer = await server.app.inject({ method: 'GET', url: '/registry.json' });
      expect(answer.statusCode).toBe(200);
      return listed(answer.json());
    };
    expect(await read()).toEqual(['web-app@1.0.0']);
    await publish(storage, 'web-app', '1.1.0');
    await server.context.rebuild();
    expect(await read()).toEqual(['web-app@1.0.0', 'web-app@1.1.0']);
  });
});
