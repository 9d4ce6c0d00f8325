/**
 * Builders of the documents tests make by the dozen: a registry entry and a template manifest, each
 * with every required field, valid against its schema; a test overrides only the fields it is about.
 */
import type { TemplateEntry, TemplateManifest } from '../../src/core/schema-types.js';

/** A registry entry of `id` (version 1.0.0 unless `fields` says otherwise) with every required field; `fields` overrides. */
export function templateEntry(id: string, fields: Partial<TemplateEntry> = {}): TemplateEntry {
  const version = fields.version ?? '1.0.0';
  return {
    id,
    name: id,
    version,
    description: `The ${id} template`,
    category: 'backend',
    stability: 'stable',
    downloadUrl: `https://registry.example.test/templates/${id}/versions/${version}/archive`,
    author: { name: 'Ada' },
    tags: [],
    features: [],
    stats: { downloads: 0 },
    ...fields,
  };
}

/** A manifest of `name`@`version` with the required fields; `fields` overrides. */
export function templateManifest(name: string, version = '1.0.0', fields: Partial<TemplateManifest> = {}): TemplateManifest {
  return { name, version, description: `The ${name} template for tests`, category: 'backend', ...fields };
}
