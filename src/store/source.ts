import { archiveUrl, attestationUrl, catalogPagePath, staticArchivePath, staticAttestationPath, underBase } from '../core/routes.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { knownRevision, type ChangesSince, type KnownTemplate, type RegistrySource, type SourceVersion, type TemplateListing } from '../registry/source.js';
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
   * `build-registry` state recorded from another store is not used. Without it no build state is kept
   * (the source's identity is part of one).
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

  const toSource = (stored: StoredVersion & { manifest: TemplateManifest }, used: VersionUsage | undefined, lifecycle: VersionLifecycle | undefined, revision: string): SourceVersion => {
    const { manifest, name, version: number } = stored;
    const repositoryUrl = manifest.repository?.url;
    const stats: SourceVersion['stats'] = { downloads: used?.downloads ?? 0, stars: 0, forks: 0, issues: 0 };
    if (used?.lastDownload) stats.lastDownload = used.lastDownload;
    // Optional fields set one by one rather than spread from objects made for each: a full build makes 100,000.
    const version: SourceVersion = {
      manifest,
      downloadUrl: layout === 'static' ? underBase(publicUrl, staticArchivePath(name, number)) : archiveUrl(publicUrl ?? '', name, number),
      readArchive: async () => (await storage.versions.openArchive(name, number))?.stream,
      integrity: stored.integrity,
      sha256: stored.sha256,
      size: stored.size,
      createdAt: stored.createdAt,
      // A page a person can read: the repository, else the template's page in the catalog.
      documentationUrl: repositoryUrl ?? underBase(publicUrl, catalogPagePath(name)),
      stats,
      revision,
    };
    if (layout === 'static') version.openArchive = () => storage.versions.openArchive(name, number);
    if (repositoryUrl) version.repositoryUrl = repositoryUrl;
    if (lifecycle) Object.assign(version, lifecycleFields(lifecycle));
    if (stored.attestation) {
      const { predicateType, signer, runUrl } = stored.attestation;
      const url = layout === 'static' ? underBase(publicUrl, staticAttestationPath(name, number)) : attestationUrl(publicUrl ?? '', name, number);
      version.attestation = { url, predicateType, signer, ...(runUrl ? { runUrl } : {}) };
      if (layout === 'static') version.readAttestation = () => storage.versions.readAttestation(name, number);
    }
    return version;
  };

  /** What makes a version's entry besides its manifest: its usage numbers and lifecycle. */
  const revisionOf = (used: VersionUsage | undefined, lifecycle: VersionLifecycle | undefined): string =>
    `${used ? `${used.downloads} ${used.lastDownload ?? ''}` : ''} ${lifecycle ? JSON.stringify(lifecycle) : ''}`;

  const list = async (): Promise<SourceVersion[]> => {
    // The rule of analytics records (registry/analytics.ts), from the store's aggregates (one row
    // per version, whatever the number of events): `stats.downloads` is their `total`.
    const usage = await storage.events.usage();
    const lifecycles = await storage.versions.listLifecycles();
    const published = await storage.versions.listPublished(new Set(kept.keys()));
    const listed = new Set<string>();
    const result: SourceVersion[] = [];
    for (const item of published) {
      const key = `${item.name}@${item.version}`;
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
      const version = toSource(stored, used, lifecycle, revision);
      kept.set(key, { stored, usage: revision, version });
      result.push(version);
    }
    for (const key of kept.keys()) if (!listed.has(key)) kept.delete(key);
    return result;
  };

  const versionsStore = storage.versions;
  type ListOf = (names: readonly string[]) => Promise<(StoredVersion & { manifest: TemplateManifest })[]>;
  type VersionsOf = () => Promise<Map<string, string[]>>;
  /** The versions of `names` as sources, with their usage and lifecycle (read once by the caller). */
  const sourcesOf = async (names: readonly string[], usage: Map<string, VersionUsage>, lifecycles: Map<string, VersionLifecycle>): Promise<SourceVersion[]> =>
    (await (versionsStore.listPublishedOf as ListOf).call(versionsStore, names)).map((stored) => {
      const key = `${stored.name}@${stored.version}`;
      const used = usage.get(key);
      const lifecycle = lifecycles.get(key);
      return toSource(stored, used, lifecycle, revisionOf(used, lifecycle));
    });

  /** Template by template, for a builder that keeps nothing: nothing is kept here either. */
  const byTemplate = async (): Promise<TemplateListing> => {
    const usage = await storage.events.usage();
    const lifecycles = await storage.versions.listLifecycles();
    const names = versionsStore.publishedNames ? await versionsStore.publishedNames() : [...(await (versionsStore.publishedVersions as VersionsOf).call(versionsStore)).keys()];
    return { names, versionsOf: (some) => sourcesOf(some, usage, lifecycles) };
  };

  /**
   * What changed since a build state, template by template: the store lists each template's
   * versions (no rows read), and usage and lifecycle are kept for few versions; a template is
   * unchanged when it has exactly the recorded versions, each at its recorded revision. Only the
   * other templates' manifests are read.
   */
  const templatesSince = async (known: ReadonlyMap<string, KnownTemplate>): Promise<ChangesSince> => {
    const usage = await storage.events.usage();
    const lifecycles = await storage.versions.listLifecycles();
    const published = await (versionsStore.publishedVersions as VersionsOf).call(versionsStore);
    // The templates of which some version has usage or a lifecycle: every other version's revision is the plain one.
    const marked = new Set<string>();
    for (const key of [...usage.keys(), ...lifecycles.keys()]) marked.add(key.slice(0, key.lastIndexOf('@')));
    const plain = revisionOf(undefined, undefined);
    const unchanged = new Set<string>();
    const changed: string[] = [];
    for (const [name, versions] of published) {
      const recorded = known.get(name);
      const same =
        recorded !== undefined &&
        recorded.versions.length === versions.length &&
        (() => {
          const listed = new Set(versions);
          // Sets of the same size holding each other's members (a state listing a version twice is not the same).
          if (listed.size !== versions.length || new Set(recorded.versions).size !== recorded.versions.length) return false;
          return recorded.versions.every((version, index) => {
            if (!listed.has(version)) return false;
            const revision = knownRevision(recorded, index);
            if (!marked.has(name)) return revision === plain;
            const key = `${name}@${version}`;
            return revision === revisionOf(usage.get(key), lifecycles.get(key));
          });
        })();
      if (same) unchanged.add(name);
      else changed.push(name);
    }
    return { unchanged, versions: changed.length > 0 ? await sourcesOf(changed, usage, lifecycles) : [] };
  };

  const readsByTemplate = versionsStore.publishedVersions !== undefined && versionsStore.listPublishedOf !== undefined;
  return {
    versions: list,
    ...(readsByTemplate ? { byTemplate } : {}),
    ...(options.identity !== undefined ? { identity: JSON.stringify({ store: options.identity, layout, publicUrl: publicUrl ?? null }) } : {}),
    ...(readsByTemplate ? { templatesSince } : {}),
  };
}
