import { archiveUrl, versionUrl } from '../core/routes.js';
import type { RegistrySource, SourceVersion } from '../registry/source.js';
import type { RegistryStorage } from './types.js';

/** The store as a source of the registry generator; archive URLs are immutable per version. */
export function storeSource(storage: Pick<RegistryStorage, 'versions' | 'events'>, publicUrl: string): RegistrySource {
  return {
    async versions(): Promise<SourceVersion[]> {
      const usage = await storage.events.usage();
      const result: SourceVersion[] = [];
      for (const stored of await storage.versions.listVersions()) {
        const manifest = await storage.versions.readManifest(stored.name, stored.version);
        const used = usage.get(`${stored.name}@${stored.version}`);
        result.push({
          manifest,
          downloadUrl: archiveUrl(publicUrl, stored.name, stored.version),
          integrity: stored.integrity,
          sha256: stored.sha256,
          size: stored.size,
          createdAt: stored.createdAt,
          documentationUrl: versionUrl(publicUrl, stored.name, stored.version),
          ...(manifest.repository?.url ? { repositoryUrl: manifest.repository.url } : {}),
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
