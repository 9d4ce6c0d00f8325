import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { create } from 'tar';

import type { TemplateManifest } from '../../src/core/schema-types.js';
import type { RegistrySource, SourceVersion } from '../../src/registry/source.js';
import { templateManifest } from '../helpers/builders.js';

/** A manifest of `name`@`version` with the required fields; `extra` overrides. */
export function manifest(name: string, version: string, extra: Partial<TemplateManifest> = {}): TemplateManifest {
  return templateManifest(name, version, { description: `The ${name} template, version ${version}`, ...extra });
}

/** A published version of `name`@`version`; `extra` overrides fields of the version. */
export function version(name: string, v: string, manifestExtra: Partial<TemplateManifest> = {}, extra: Partial<SourceVersion> = {}): SourceVersion {
  return {
    manifest: manifest(name, v, manifestExtra),
    downloadUrl: `https://registry.example.com/templates/${name}/versions/${v}/archive`,
    createdAt: '2026-01-02T03:04:05.000Z',
    stats: { downloads: 0, stars: 0, forks: 0, issues: 0 },
    ...extra,
  };
}

/** An in-memory registry source; change `versions` between builds. Versions are copied, their archive readers kept. */
export function memorySource(versions: SourceVersion[]): RegistrySource & { list: SourceVersion[] } {
  const source = {
    list: versions,
    versions: () =>
      Promise.resolve(
        source.list.map(({ readArchive, openArchive, readAttestation, ...data }) => ({
          ...structuredClone(data),
          ...(readArchive ? { readArchive } : {}),
          ...(openArchive ? { openArchive } : {}),
          ...(readAttestation ? { readAttestation } : {}),
        })),
      ),
  };
  return source;
}

/** A gzip tar holding `files` (path -> text) under `top` (e.g. `package/`, default the root). */
export async function tgzOf(files: Record<string, string>, top = ''): Promise<Buffer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tr-tgz-'));
  try {
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, top, name)), { recursive: true });
      await writeFile(path.join(dir, top, name), text);
    }
    const chunks: Buffer[] = [];
    for await (const chunk of create({ gzip: true, cwd: dir, portable: true }, [top === '' ? '.' : top.replace(/\/$/, '')]) as AsyncIterable<Buffer>) chunks.push(chunk);
    return Buffer.concat(chunks);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `readArchive` of a version whose archive is `bytes`. */
export const archiveReader = (bytes: Buffer) => (): Promise<Readable> => Promise.resolve(Readable.from([bytes]));
