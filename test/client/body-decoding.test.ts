/**
 * The registry document arrives in chunks cut anywhere (a character split between two chunks,
 * ASCII chunks before the first other byte): the client reads the text that decoding the whole
 * body at once gives, and searches it with the spec's lower-casing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { templateEntry } from '../helpers/builders.js';

const URL_ = 'https://registry.example.test/registry.json';

const documentWith = (description: string) => ({
  templates: [
    templateEntry('accents', { description, downloadUrl: 'https://registry.example.test/accents.tgz' }),
  ],
  categories: [],
  tags: [],
  lastUpdated: '2026-01-01T00:00:00.000Z',
});

/** A fetch answering `bytes` in chunks cut at `cuts` (byte offsets). */
function chunked(bytes: Uint8Array, cuts: readonly number[]): typeof globalThis.fetch {
  const bounds = [...new Set([0, ...cuts.map((cut) => cut % (bytes.length + 1)), bytes.length])].sort((a, b) => a - b);
  return () => {
    let next = 1;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (next >= bounds.length) return controller.close();
        controller.enqueue(bytes.slice(bounds[next - 1], bounds[next]));
        next++;
      },
    });
    return Promise.resolve(new Response(body, { headers: { 'content-type': 'application/json' } }));
  };
}

const description = 'Ünïcödé: café, ✓, 😀, ΟΔΟΣ, 日本語, and plain ASCII before and after';

describe('decoding the registry document', () => {
  it('reads multi-byte characters whole wherever the chunks are cut', async () => {
    const bytes = Buffer.from(JSON.stringify(documentWith(description)));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(), { maxLength: 12 }), async (cuts) => {
        const client = new RegistryClient({ registryUrl: URL_, fetch: chunked(bytes, cuts) });
        expect((await client.getTemplate('accents'))?.description).toBe(description);
        expect((await client.search('CAFÉ 😀 οδος')).map((entry) => entry.id)).toEqual(['accents']);
      }),
      { numRuns: 100 },
    );
  });

  it('cuts every character at every byte', async () => {
    const bytes = Buffer.from(JSON.stringify(documentWith(description)));
    const start = bytes.indexOf(Buffer.from('Ü'));
    for (let cut = start; cut < start + Buffer.byteLength(description); cut++) {
      const client = new RegistryClient({ registryUrl: URL_, fetch: chunked(bytes, [cut, cut + 1]) });
      expect((await client.getTemplate('accents'))?.description, `cut at byte ${cut}`).toBe(description);
    }
  });

  it('replaces invalid UTF-8 as decoding the whole body does', async () => {
    const [before, after] = JSON.stringify(documentWith('#')).split('#') as [string, string];
    const bytes = Buffer.concat([Buffer.from(before), Buffer.from([0x61, 0xff, 0xe2, 0x9c, 0x62, 0xf0, 0x9f]), Buffer.from(after)]);
    const expected = (JSON.parse(bytes.toString('utf8')) as ReturnType<typeof documentWith>).templates[0]!.description;
    expect(expected).toContain('\uFFFD');
    for (const cuts of [[], [before.length + 1], [before.length + 2, before.length + 3], [before.length + 6]]) {
      const client = new RegistryClient({ registryUrl: URL_, fetch: chunked(bytes, cuts) });
      expect((await client.getTemplate('accents'))?.description).toBe(expected);
    }
  });

  it('still refuses a document that starts with a byte order mark, as invalid JSON', async () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(documentWith('x')))]);
    const client = new RegistryClient({ registryUrl: URL_, fetch: chunked(bytes, [1, 2]) });
    await expect(client.listTemplates()).rejects.toThrow(/invalid JSON/);
  });
});
