import { archiveUrl, catalogPagePath, staticArchivePath, underBase } from '../core/routes.js';
import type { TemplateManifest } from '../core/schema-types.js';
import type { RegistrySource, SourceVersion } from '../registry/source.js';
import type { RegistryStorage } from './types.js';

export interface StoreSourceOptions {
  /**
   * `server` (default): archives are served by the registry server at `publicUrl`.
   * `static`: the build publishes them beside registry.json (`archives/<id>/<version>.tgz`), with
   * URLs under `publicUrl`, or relative to registry.json without one.
   */
  layout?: 'server' | 'static';
}

/**
 * The store as a source of the registry generator; archive URLs are immutable per version. The
 * source keeps the manifests it has read (a published version's manifest never changes), so each
 * later build reads only the new ones: a server keeps one source for its whole life.
 */
export function storeSource(
  storage: Pick<RegistryStorage, 'versions' | 'events'>,
  publicUrl: string | undefined,
  options: StoreSourceOptions = {},
): RegistrySource {
  const layout = options.layout ?? 'server';
  const manifests = new Map<string, TemplateManifest>();
  return {
    async versions(): Promise<SourceVersion[]> {
      const usage = await storage.events.usage();
      const published = await storage.versions.listPublished(new Set(manifests.keys()));
      const listed = new Set<string>();
      const result: SourceVersion[] = [];
      for (const stored of published) {
        const key = `${stored.name}@${stored.version}`;
        listed.add(key);
        const manifest = stored.manifest ?? manifests.get(key);
        if (!manifest) throw new Error(`the store returned no manifest for ${key}`);
        manifests.set(key, manifest);
        const used = usage.get(key);
        const repositoryUrl = manifest.repository?.url;
        result.push({
          manifest,
          downloadUrl:
            layout === 'static'
              ? underBase(publicUrl, staticArchivePath(stored.name, stored.version))
              : archiveUrl(publicUrl ?? '', stored.name, stored.version),
          ...(layout === 'static' ? { openArchive: () => storage.versions.openArchive(stored.name, stored.version) } : {}),
          integrity: stored.integrity,
          sha256: stored.sha256,
          size: stored.size,
          createdAt: stored.createdAt,
          // A page a person can read: the repository, else the template's section of the catalog.
          documentationUrl: repositoryUrl ?? underBase(publicUrl, catalogPagePath(stored.name)),
          ...(repositoryUrl ? { repositoryUrl } : {}),
          stats: {
            downloads: used?.downloads ?? 0,
            stars: 0,
            forks: 0,
            issues: 0,
            ...(used?.lastDownload ? { lastDownload: used.lastDownload } : {}),
          },
        });
      }
      for (const key of manifests.keys()) if (!listed.has(key)) manifests.delete(key);
      return result;
    },
  };
}
