/**
 * A static registry built from the server's store (the copy in the bucket) owns
 * its archives/ folder (`pruneArchives`): the archive and provenance bundle of a version the store
 * no longer has (a purged version) are removed by the next build, even one that a build in flight
 * during the purge put back. A build without it leaves archives/ alone.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { buildRegistry } from '../../src/registry/build.js';
import { storeSource } from '../../src/store/source.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const exists = (file: string): Promise<boolean> =>
  access(file).then(
    () => true,
    () => false,
  );

describe('a static build from the store with pruneArchives', () => {
  it('removes the archives of versions the store no longer has; without it, archives/ is left alone', async () => {
    const server = await startRegistryServer();
    for (const version of ['1.0.0', '1.1.0']) {
      const dir = await writeTemplate({ 'template.json': { ...validManifest, name: 'pruned-app', version }, 'template/README.md': `# ${version}\n` });
      const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-') });
      expect((await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 })).status).toBe(201);
    }
    const out = await tempDir('tr-static-prune-');
    const source = storeSource(server.store, undefined, { layout: 'static' });
    await buildRegistry(source, { outDir: out, pruneArchives: true });
    const purged = path.join(out, 'archives/pruned-app/1.1.0.tgz');
    const kept = path.join(out, 'archives/pruned-app/1.0.0.tgz');
    expect(await exists(purged)).toBe(true);

    expect(await server.store.versions.purgeVersion('pruned-app', '1.1.0')).toBeDefined();
    // A build without the option keeps what archives/ holds.
    const plain = await buildRegistry(source, { outDir: out });
    expect(plain.document.templates.map((t) => t.version)).toEqual(['1.0.0']);
    expect(await exists(purged)).toBe(true);

    const pruned = await buildRegistry(source, { outDir: out, pruneArchives: true });
    expect(pruned.removed).toEqual(['archives/pruned-app/1.1.0.tgz']);
    expect(await exists(purged)).toBe(false);
    expect(await exists(kept)).toBe(true);
  }, 30_000);
});
