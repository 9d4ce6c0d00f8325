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

/** An in-memory registry source; change `versions` between builds. */
export function memorySource(versions: SourceVersion[]): RegistrySource & { list: SourceVersion[] } {
  const source = {
    list: versions,
    versions: () => Promise.resolve(source.list.map((v) => structuredClone(v))),
  };
  return source;
}
