import { archiveUrl, attestationUrl, catalogPagePath, staticArchivePath, staticAttestationPath, underBase } from '../core/routes.js';
import type { TemplateManifest } from '../core/schema-types.js';
import type { RegistrySource, SourceVersion, TemplateListing, UnchangedVersion } from '../registry/source.js';
import type { RegistryStorage, StoredVersion, VersionLifecycle, VersionUsage } from './types.js';

/**
 * What a version's lifecycle sets on its registry entry. The lifecycle lives in the store's rows,
 * not in the (unchanging) manifest and archive; without a stability of its own the manifest's holds.
 */
export function lifecycleFields(lifecycle: VersionLifecycle | undefined): Pick<SourceVersion, 'stability' | 'deprecationMessage' | 'yanked'> {
  return {
    ...(lifecycle?.stability ? { stability: lifecycle.stability } : {}),
    ...(lifecycle?.deprecationMessage !== undefined ? { deprecationMessage: lifecycle.deprecationMessage } : {}),
    ...(lifecycle?.yankedAt ? { yanked: true } : {}),
  };
}

export interface StoreSourceOptions {
  /**
   * `server` (default): archives are served by the registry server at `publicUrl`.
   * `static`: the build publishes them beside registry.json (`archives/<id>/<version>.tgz`), with
   * URLs under `publicUrl`, or relative to registry.json without one.
   */
  layout?: 'server' | 'static';
  /**
   * What names the store (its folder, or its database without credentials), for build states: a
   * `build-registry` state recorded from another store is not used. Without it the source offers no
   * `versionsSince` (every build reads every version).
   */
  identity?: string;
}

/**
 * The store as a source of the registry generator; archive URLs are immutable per version. The
 * source keeps what it has read (a published version never changes, only its usage numbers and lifecycle do) and
 * gives the very same object for a version whose numbers did not move, so a generator that keeps
 * its entries (the server's) knows at a glance what changed: a server keeps one source for its life.
 */
export function storeSource(
  storage: Pick<RegistryStorage, 'versions' | 'events'>,
  publicUrl: string | undefined,
  options: StoreSourceOptions = {},
): RegistrySource {
  const layout = options.layout ?? 'server';
  const kept = new Map<string, { stored: StoredVersion & { manifest: TemplateManifest }; usage: string; version: SourceVersion }>();

  const toSource = (stored: StoredVersion & { manifest: TemplateManifest }, used: VersionUsage | undefined, lifecycle: VersionLifecycle | undefined): SourceVersion => {
    const { manifest } = stored;
    const repositoryUrl = manifest.repository?.url;
    return {
      manifest,
      downloadUrl:
        layout === 'static' ? underBase(publicUrl, staticArchivePath(stored.name, stored.version)) : archiveUrl(publicUrl ?? '', stored.name, stored.version),
      ...(layout === 'static' ? { openArchive: () => storage.versions.openArchive(stored.name, stored.version) } : {}),
      readArchive: async () => (await storage.versions.openArchive(stored.name, stored.version))?.stream,
      integrity: stored.integrity,
      sha256: stored.sha256,
      size: stored.size,
      createdAt: stored.createdAt,
      // A page a person can read: the repository, else the template's page in the catalog.
      documentationUrl: repositoryUrl ?? underBase(publicUrl, catalogPagePath(stored.name)),
      ...(repositoryUrl ? { repositoryUrl } : {}),
      stats: {
        downloads: used?.downloads ?? 0,
        stars: 0,
        forks: 0,
        issues: 0,
        ...(used?.lastDownload ? { lastDownload: used.lastDownload } : {}),
      },
      ...lifecycleFields(lifecycle),
      ...(stored.attestation
        ? {
            attestation: {
              url:
                layout === 'static'
                  ? underBase(publicUrl, staticAttestationPath(stored.name, stored.version))
                  : attestationUrl(publicUrl ?? '', stored.name, stored.version),
              predicateType: stored.attestation.predicateType,
              signer: stored.attestation.signer,
              ...(stored.attestation.runUrl ? { runUrl: stored.attestation.runUrl } : {}),
            },
            ...(layout === 'static' ? { readAttestation: () => storage.versions.readAttestation(stored.name, stored.version) } : {}),
          }
        : {}),
    };
  };

  /** What makes a version's entry besides its manifest: its usage numbers and lifecycle. */
  const revisionOf = (used: VersionUsage | undefined, lifecycle: VersionLifecycle | undefined): string =>
    `${used ? `${used.downloads} ${used.lastDownload ?? ''}` : ''} ${lifecycle ? JSON.stringify(lifecycle) : ''}`;

  const list = async (known: ReadonlyMap<string, string> | undefined): Promise<(SourceVersion | UnchangedVersion)[]> => {
    // The rule of analytics records (registry/analytics.ts), from the store's aggregates (one row
    // per version, whatever the number of events): `stats.downloads` is their `total`.
    const usage = await storage.events.usage();
    const lifecycles = await storage.versions.listLifecycles();
    // A version the caller knew at its current revision is listed by key only (its manifest not read).
    const unchanged = new Set<string>();
    for (const [key, revision] of known ?? []) if (!kept.has(key) && revision === revisionOf(usage.get(key), lifecycles.get(key))) unchanged.add(key);
    const published = await storage.versions.listPublished(kept.size === 0 ? unchanged : new Set([...kept.keys(), ...unchanged]));
    const listed = new Set<string>();
    const result: (SourceVersion | UnchangedVersion)[] = [];
    for (const item of published) {
      const key = `${item.name}@${item.version}`;
      if ('known' in item && unchanged.has(key)) {
        result.push({ unchanged: true, name: item.name, version: item.version, revision: known?.get(key) as string });
        continue;
      }
      listed.add(key);
      const used = usage.get(key);
      const lifecycle = lifecycles.get(key);
      const revision = revisionOf(used, lifecycle);
      const stored = 'known' in item ? kept.get(key)?.stored : item;
      if (!stored) throw new Error(`the store returned no manifest for ${key}`);
      const previous = kept.get(key);
      if (previous && previous.usage === revision) {
        result.push(previous.version);
        continue;
      }
      const version = { ...toSource(stored, used, lifecycle), revision };
      kept.set(key, { stored, usage: revision, version });
      result.push(version);
    }
    for (const key of kept.keys()) if (!listed.has(key)) kept.delete(key);
    return result;
  };

  const versionsStore = storage.versions;
  /** Template by template, for a builder that keeps nothing: nothing is kept here either. */
  const byTemplate = async (): Promise<TemplateListing> => {
    const usage = await storage.events.usage();
    const lifecycles = await storage.versions.listLifecycles();
    const names = await (versionsStore.publishedNames as () => Promise<string[]>).call(versionsStore);
    return {
      names,
      versionsOf: async (some) =>
        (await (versionsStore.listPublishedOf as (names: readonly string[]) => Promise<(StoredVersion & { manifest: TemplateManifest })[]>).call(versionsStore, some)).map((stored) => {
          const key = `${stored.name}@${stored.version}`;
          const used = usage.get(key);
          const lifecycle = lifecycles.get(key);
          return { ...toSource(stored, used, lifecycle), revision: revisionOf(used, lifecycle) };
        }),
    };
  };

  return {
    versions: async () => (await list(undefined)) as SourceVersion[],
    ...(versionsStore.publishedNames && versionsStore.listPublishedOf ? { byTemplate } : {}),
    ...(options.identity !== undefined
      ? { identity: JSON.stringify({ store: options.identity, layout, publicUrl: publicUrl ?? null }), versionsSince: (known: ReadonlyMap<string, string>) => list(known) }
      : {}),
  };
}
