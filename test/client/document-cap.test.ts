/** The client never reads a registry document past its size cap (maxDocumentBytes / TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES). */
import { describe, expect, it } from 'vitest';

import { maxDocumentBytesFrom } from '../../src/cli/consumer-env.js';
import { DEFAULT_MAX_DOCUMENT_BYTES, RegistryClient } from '../../src/client/index.js';
import { UsageError } from '../../src/cli/io.js';

const URL_ = 'https://registry.example/registry.json';
const small = JSON.stringify({ version: '1.0.0', lastUpdated: '2026-01-01T00:00:00.000Z', templates: [], categories: [], tags: [] });

/** A body that never ends: only a client that counts as it reads can refuse it. */
function endless(): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      sent += chunk.length;
      if (sent > 64 * 1024 * 1024) controller.error(new Error('the client read far past its limit'));
      else controller.enqueue(chunk);
    },
  });
}

const clientWith = (response: () => Response, maxDocumentBytes?: number) =>
  new RegistryClient({ registryUrl: URL_, fetch: () => Promise.resolve(response()), ...(maxDocumentBytes ? { maxDocumentBytes } : {}) });

describe('the registry document size cap', () => {
  it('is 256 MiB by default', () => {
    expect(DEFAULT_MAX_DOCUMENT_BYTES).toBe(256 * 1024 * 1024);
  });

  it('refuses a document whose Content-Length is over the cap, naming the URL and the limit', async () => {
    const client = clientWith(() => new Response(small, { headers: { 'content-length': '5000000' } }), 1000);
    await expect(client.listTemplates()).rejects.toThrow();
    expect(client.status().lastError).toMatch(/registry\.example\/registry\.json is 5000000 bytes, more than the limit of 1000 bytes/);
  });

  it('stops reading a body without Content-Length as soon as it passes the cap', async () => {
    const client = clientWith(() => new Response(endless()), 1024 * 1024);
    await expect(client.listTemplates()).rejects.toThrow();
    expect(client.status().lastError).toMatch(/more than the limit of 1048576 bytes/);
  });

  it('reads a document under the cap', async () => {
    const client = clientWith(() => new Response(small), small.length);
    expect(await client.listTemplates()).toEqual([]);
  });

  it('takes the cap from TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES in the CLI, refusing nonsense', () => {
    expect(maxDocumentBytesFrom({ TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES: '1048576' })).toBe(1048576);
    expect(maxDocumentBytesFrom({})).toBeUndefined();
    expect(() => maxDocumentBytesFrom({ TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES: '1MB' })).toThrow(UsageError);
  });
});
