import type { Readable } from 'node:stream';

import type { Stability } from '../core/listing.js';
import type { TemplateManifest } from '../core/schema-types.js';

/** Usage and repository numbers of one published version. */
export interface SourceStats {
  downloads: number;
  stars: number;
  forks: number;
  issues: number;
  lastDownload?: string;
}

/** One published version of a template, as a registry source knows it. */
export interface SourceVersion {
  /** The manifest as published (its `version` is the published version). */
  manifest: TemplateManifest;
  /** Where the archive of exactly this version is served (immutable). */
  downloadUrl: string;
  integrity?: string;
  sha256?: string;
  size?: number;
  /** When this version was published (ISO 8601). */
  createdAt: string;
  updatedAt?: string;
  documentationUrl?: string;
  repositoryUrl?: string;
  stats: SourceStats;
  /**
   * What, besides the (never changing) manifest of `name@version`, the version's entry is made of,
   * as a short text the source can tell without reading the manifest (the store: usage and
   * lifecycle): a build state records it, and an unchanged revision means an unchanged entry.
   */
  revision?: string;
  /** Lifecycle: the stability set after publication (overrides the manifest's). */
  stability?: Stability;
  /** Lifecycle: why the version is deprecated. */
  deprecationMessage?: string;
  /** Lifecycle: the version was yanked (its entry is kept, flagged). */
  yanked?: boolean;
  /**
   * The version's build provenance, as verified when it was published: where its Sigstore bundle is
   * served (immutable), its predicate type, who signed it and the run that built it.
   */
  attestation?: SourceAttestation;
  /** Reads the provenance bundle, when the build must publish it beside the archive (at `staticAttestationPath`, where `attestation.url` points). */
  readAttestation?: () => Promise<Buffer | undefined>;
  /** Reads the archive, whatever serves it: the catalog shows the README, questions and change log in it. */
  readArchive?: () => Promise<Readable | undefined>;
  /**
   * Opens the archive, when the build must publish it beside registry.json (at
   * `staticArchivePath(id, version)`, where `downloadUrl` points); absent when it is served elsewhere.
   * `file` names the local file holding the bytes, when there is one: a folder output links it.
   */
  openArchive?: () => Promise<{ stream: Readable; size: number; file?: string } | undefined>;
}

/** A version's verified build provenance, as its entry shows it. */
export interface SourceAttestation {
  url: string;
  predicateType: string;
  signer: { repository: string; workflow: string; issuer: string };
  runUrl?: string;
}

/** What a build state recorded of a template: its versions and the revision of each (one value when all are the same). */
export interface KnownTemplate {
  versions: readonly string[];
  revisions: string | readonly string[];
}

/** The revision of the `index`th version of `template`. */
export const knownRevision = (template: KnownTemplate, index: number): string => (typeof template.revisions === 'string' ? template.revisions : (template.revisions[index] as string));

/** What changed since a build state: the templates exactly as it recorded them, and every version of the others. */
export interface ChangesSince {
  /** The ids whose versions are exactly the recorded ones (none more, none fewer), each at its recorded revision. */
  unchanged: Set<string>;
  /** Every complete version of every other template (a new one, or one where anything changed). */
  versions: SourceVersion[];
}

/** What the registry generator reads: the server's store, or GitHub releases. */
export interface RegistrySource {
  /** Every complete published version; the order does not matter. */
  versions(): Promise<SourceVersion[]>;
  /**
   * What names this source and everything that shapes its entries (the store, its layout, the
   * public URL), for a build state: a state recorded from another identity is not used.
   */
  readonly identity?: string;
  /**
   * The templates listed exactly as in `known` (by id), and every version of the others as
   * `versions()` lists them (their manifests read): what a build in a fresh process asks, with what
   * its state recorded. A template no longer listed is in neither.
   */
  templatesSince?(known: ReadonlyMap<string, KnownTemplate>): Promise<ChangesSince>;
  /**
   * The versions a few templates at a time, as `versions()` lists them: what a full build by a
   * builder that keeps nothing between builds (`build-registry`) reads, so that it never holds
   * every manifest at once. Optional: without it such a build reads `versions()`.
   */
  byTemplate?(): Promise<TemplateListing>;
}

/** One reading of a source template by template: usage and lifecycle as they were when it began. */
export interface TemplateListing {
  /** The ids of the templates with at least one complete version (no order). */
  names: string[];
  /** Every complete version of the templates `names` (no order). */
  versionsOf(names: readonly string[]): Promise<SourceVersion[]>;
}
