/**
 * A bounded load on 127.0.0.1: autocannon reads the registry while uploaders publish, under the
 * default rate limits. Every answer is a success or a 429, never a server error, and every upload
 * answered 201 is listed with its integrity afterwards.
 */
import autocannon from 'autocannon';
import { describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/schema-types.js';
import { packTemplate, type PackResult } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { checkStore } from '../helpers/store-check.js';

const DURATION_SECONDS = 4;
const UPLOADS = 40;

describe('mixed load', () => {
  it('answers every read and upload with success or 429 and loses nothing it accepted', async () => {
    const server = await startRegistryServer();
    const out = await tempDir('tr-load-packs-');
    const packs: PackResult[] = [];
    for (let i = 0; i < UPLOADS; i++) {
      packs.push(await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name: `load-${i}` } }), { outDir: out }));
    }

    const reads = autocannon({
      url: server.url,
      connections: 8,
      duration: DURATION_SECONDS,
      requests: [{ path: '/registry.json' }, { path: '/templates?limit=5' }, { path: '/templates/load-0' }, { path: '/healthz' }],
    });
    const accepted = new Set<string>();
    const statuses: number[] = [];
    const queue = [...packs];
    const uploader = async (): Promise<void> => {
      for (let pack = queue.shift(); pack; pack = queue.shift()) {
        try {
          await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest, retries: 0 });
          accepted.add(pack.manifest.name);
          statuses.push(201);
        } catch (error) {
          statuses.push(error instanceof PublishError ? (error.status ?? 0) : 0);
        }
      }
    };
    await Promise.all([uploader(), uploader(), uploader(), uploader()]);
    const result = await reads;

    expect(result.errors, 'connection errors').toBe(0);
    const codes = Object.keys(result.statusCodeStats ?? {}).map(Number);
    // /templates/load-0 is a 404 until that upload lands.
    expect(codes.every((code) => [200, 404, 429].includes(code)), `read answers ${codes.join(', ')}`).toBe(true);
    expect(result['2xx']).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 201 || status === 429), `upload answers ${statuses.join(', ')}`).toBe(true);
    expect(accepted.size).toBeGreaterThan(0);

    // Read in-process: the read rate limit of 127.0.0.1 is spent by now.
    const registry: RegistryDocument = server.context.registry().document;
    const listed = new Map(registry.templates.map((entry) => [entry.id, entry.integrity]));
    for (const pack of packs) if (accepted.has(pack.manifest.name)) expect(listed.get(pack.manifest.name)).toBe(pack.integrity);
    expect((await checkStore(server.storeDir)).problems).toEqual([]);
  }, 60_000);
});
