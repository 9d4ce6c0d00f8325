/**
 * A registry held in memory for the project workflows: a document and archives of a small
 * template (1.0.0, and 1.1.0 with a migration step), served by a `fetch` that records every
 * request and takes events like a registry server (or refuses them like a static one).
 */
import { readFile } from 'node:fs/promises';

import { RegistryClient } from '../../src/client/index.js';
import type { MigrationStep as MigrationStepFile } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { buildDocument, type SourceVersion } from '../../src/registry/index.js';
import { tempDir, validManifest, writeTemplate, type FileTree } from '../helpers/fixtures.js';

export const REGISTRY_URL = 'https://registry.test/registry.json';

export interface MemoryRegistry {
  client: RegistryClient;
  fetch: typeof globalThis.fetch;
  /** Every request, as `METHOD url`. */
  requests: string[];
  /** The bodies posted to the events route, parsed. */
  events: Record<string, unknown>[];
  /** Whether the events route exists (a static registry has none: 404). */
  acceptsEvents: boolean;
}

/** The 1.1.0 migration step: a new file, and the README updated with the project's name. */
export function migrationStep(breaking: boolean): MigrationStepFile {
  return {
    id: 'add-notes',
    description: 'Add NOTES.md and a line in the README',
    fromVersion: '1.0.0',
    toVersion: '1.1.0',
    breaking,
    automatic: !breaking,
    changes: [
      { type: 'create', path: 'NOTES.md', content: 'notes for {{ projectName }}\n' },
      { type: 'update', path: 'README.md', content: '# {{ projectName }}\n\nSee NOTES.md.\n' },
    ],
  };
}

async function version(version: string, breaking: boolean, files: FileTree = {}): Promise<{ source: SourceVersion; bytes: Buffer }> {
  const dir = await writeTemplate({
    ...files,
    'CHANGELOG.md': '# Changelog\n\n## [1.1.0] - 2026-02-01\n\n- NOTES.md\n\n## [1.0.0] - 2026-01-01\n\n- First release\n',
    ...(version === '1.1.0' ? { 'template/NOTES.md': 'notes for {{ projectName }}\n', 'migrations/1.0.0-to-1.1.0.json': migrationStep(breaking) } : {}),
  });
  const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version });
  return {
    bytes: await readFile(pack.file),
    source: {
      manifest: pack.manifest,
      downloadUrl: `https://registry.test/archives/${pack.manifest.name}-${version}.tgz`,
      integrity: pack.integrity,
      size: pack.size,
      createdAt: '2026-01-01T00:00:00.000Z',
      stats: { downloads: 0, stars: 0, forks: 0, issues: 0 },
    },
  };
}

/** The registry of `demo-template` 1.0.0 and 1.1.0 (whose step is `breaking` or not; `files` replace the fixture's in both). */
export async function memoryRegistry(options: { breaking?: boolean; acceptsEvents?: boolean; files?: FileTree } = {}): Promise<MemoryRegistry> {
  const versions = [await version('1.0.0', false, options.files), await version('1.1.0', options.breaking ?? false, options.files)];
  const document = JSON.stringify(buildDocument(versions.map((v) => v.source), { lastUpdated: '2026-02-01T00:00:00.000Z' }));
  const archives = new Map(versions.map((v) => [v.source.downloadUrl, v.bytes]));
  const registry: MemoryRegistry = {
    client: undefined as unknown as RegistryClient,
    requests: [],
    events: [],
    acceptsEvents: options.acceptsEvents ?? true,
    fetch: (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      const method = init?.method ?? 'GET';
      registry.requests.push(`${method} ${url}`);
      if (url === REGISTRY_URL) return Promise.resolve(new Response(document, { headers: { 'content-type': 'application/json' } }));
      const archive = archives.get(url);
      if (archive) {
        return Promise.resolve(new Response(archive, { headers: { 'content-type': 'application/gzip', 'content-length': String(archive.length) } }));
      }
      if (url === 'https://registry.test/events' && method === 'POST' && registry.acceptsEvents && typeof init?.body === 'string') {
        registry.events.push(JSON.parse(init.body) as Record<string, unknown>);
        return Promise.resolve(new Response('{"success":true}', { status: 201 }));
      }
      return Promise.resolve(new Response('not found', { status: 404 }));
    },
  };
  registry.client = new RegistryClient({ registryUrl: REGISTRY_URL, fetch: registry.fetch });
  return registry;
}

export const TEMPLATE_ID = validManifest.name;
