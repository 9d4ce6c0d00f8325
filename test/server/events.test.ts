import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

async function published() {
  const server = await startRegistryServer();
  const pack = await packTemplate(example, { outDir: await tempDir() });
  await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  return server;
}

const post = (url: string, body: unknown) =>
  fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('POST /events', () => {
  it('records a generation event of a published version', async () => {
    const server = await published();
    const response = await post(server.url, {
      type: 'generation',
      templateId: 'node-service',
      version: '1.1.0',
      success: true,
      duration: 120,
      timestamp: new Date().toISOString(),
    });
    expect(response.status).toBe(202);
    expect(((await response.json()) as { data: unknown }).data).toEqual({ accepted: true, type: 'generation' });
    expect(await server.store.events.countEvents('generation')).toBe(1);
  });

  it('refuses an event that breaks the schema, listing the fields', async () => {
    const server = await published();
    const response = await post(server.url, { type: 'generation', templateId: 'node-service', version: '1.1.0', timestamp: 'yesterday' });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: { code: string; details: { field: string }[] } };
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(await server.store.events.countEvents()).toBe(0);
  });

  it('refuses an event of a version that is not published', async () => {
    const server = await published();
    const response = await post(server.url, {
      type: 'generation',
      templateId: 'node-service',
      version: '9.9.9',
      success: false,
      duration: 1,
      timestamp: new Date().toISOString(),
    });
    expect(response.status).toBe(404);
  });
});
