/**
 * The events the server raises and their bodies (`{ event, timestamp, data }`), made where the change
 * is stored (so that the delivery is written to the outbox in the same transaction).
 */
import { archiveUrl, catalogPagePath, underBase } from '../../core/routes.js';
import type { TemplateEntry, TemplateManifest } from '../../core/schema-types.js';
import { toEntry } from '../../registry/document.js';
import { lifecycleFields, type VersionLifecycle } from '../../store/index.js';
import type { WebhookEventRecord } from '../../store/types.js';

/** The events this registry sends. */
export const WEBHOOK_EVENTS = ['template.published', 'template.deprecated', 'template.yanked', 'registry.updated'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The body of a delivery. */
export interface WebhookPayload<T = unknown> {
  event: string;
  timestamp: string;
  data: T;
}

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

/** The data of `registry.updated`: where registry.json is, its ETag, when it was updated and how many entries it lists. */
export function registryUpdatedData(publicUrl: string, document: { lastUpdated: string; templates: readonly unknown[] }, etag: string): Record<string, unknown> {
  return { url: `${publicUrl}/registry.json`, etag, lastUpdated: document.lastUpdated, templates: document.templates.length };
}

/** A webhook event record for a store transaction (`commitVersion`'s `webhookEvents`), timestamped now. */
export function webhookEvent(event: WebhookEvent, data: unknown, now: Date = new Date()): WebhookEventRecord {
  return { event, data, timestamp: now.toISOString() };
}
