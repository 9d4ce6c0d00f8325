/**
 * The data of the webhook events the server raises, made where the change is stored (so that the
 * delivery is written to the outbox in the same transaction).
 */
import { archiveUrl, catalogPagePath, underBase } from '../core/routes.js';
import type { TemplateEntry, TemplateManifest } from '../core/schema-types.js';
import { toEntry } from '../registry/document.js';
import { lifecycleFields, type VersionLifecycle } from '../store/index.js';

/** What a new version's entry is made of besides its manifest. */
export interface NewVersionFacts {
  integrity: string;
  sha256: string;
  size: number;
  createdAt: string;
}

/**
 * The registry entry a version just published gets (the data of `template.published`): what the
 * next build of the server's registry lists for it (store/source.ts, server layout), with no
 * download yet and no lifecycle change.
 */
export function publishedEntry(manifest: TemplateManifest, facts: NewVersionFacts, publicUrl: string): TemplateEntry {
  const repositoryUrl = manifest.repository?.url;
  return toEntry({
    manifest,
    downloadUrl: archiveUrl(publicUrl, manifest.name, manifest.version),
    integrity: facts.integrity,
    sha256: facts.sha256,
    size: facts.size,
    createdAt: facts.createdAt,
    documentationUrl: repositoryUrl ?? underBase(publicUrl, catalogPagePath(manifest.name)),
    ...(repositoryUrl ? { repositoryUrl } : {}),
    stats: { downloads: 0, stars: 0, forks: 0, issues: 0 },
  });
}

/**
 * The registry entry of a version after a lifecycle change (the data of `template.deprecated` and
 * `template.yanked`): its entry before the change with the lifecycle of `after` in place of the old
 * one, as the next build lists it (store/source.ts).
 */
export function lifecycleEntry(before: TemplateEntry, manifest: Pick<TemplateManifest, 'stability'>, after: VersionLifecycle): TemplateEntry {
  const { deprecationMessage: _message, yanked: _yanked, ...unchanged } = before;
  return { ...unchanged, stability: manifest.stability ?? 'stable', ...lifecycleFields(after) };
}
