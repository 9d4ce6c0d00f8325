import { archiveUrl, catalogPagePath, staticArchivePath, underBase } from '../core/routes.js';
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

/** The store as a source of the registry generator; archive URLs are immutable per version. */
export function storeSource(
  storage: Pick<RegistryStorage, 'versions' | 'events'>,
  publicUrl: string | undefined,
  options: StoreSourceOptions = {},
): RegistrySource {
  const layout = options.layout ?? 'server';
  return {
    async versions(): Promise<SourceVersion[]> {
      const usage = await storage.events.usage();
      const result: SourceVersion[] = [];
      for (const stored of await storage.versions.listVersions()) {
        const manifest = await storage.versions.readManifest(stored.name, stored.version);
        const used = usage.get(`${stored.name}@${stored.version}`);
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
      return result;
    },
  };
}
