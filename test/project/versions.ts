/**
 * Versions of a small template published to a real registry server, for the update journeys:
 * each version is a template folder written from the tests' defaults plus its own files.
 */
import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { tempDir, validManifest, writeTemplate, type FileTree } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/registry-server.js';

export const TEMPLATE = validManifest.name;

/** The project file both sides edit: seven lines, far enough apart to merge cleanly. */
export const APP_V1 = '# {{ projectName }}\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\n';

export interface VersionSpec {
  version: string;
  /** Files of the template folder (`template/...` for content, `migrations/...` for steps). */
  files: FileTree;
}

/** A template folder of `spec.version`, its change log holding a section for every version up to it. */
export async function templateVersion(spec: VersionSpec, earlier: readonly string[] = []): Promise<string> {
  const sections = [spec.version, ...[...earlier].reverse()].map((v) => `## [${v}] - 2026-01-01\n\n- Changes of ${v}\n`).join('\n');
  return writeTemplate({
    'template.json': { ...validManifest, version: spec.version },
    'CHANGELOG.md': `# Changelog\n\n${sections}`,
    ...spec.files,
  });
}

/** Packs and publishes every version to `server`, oldest first. */
export async function publishVersions(server: TestServer, specs: readonly VersionSpec[]): Promise<void> {
  const published: string[] = [];
  for (const spec of specs) {
    const dir = await templateVersion(spec, published);
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version: spec.version });
    await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    published.push(spec.version);
  }
}

/** A declarative migration step file. */
export function stepFile(id: string, fromVersion: string, toVersion: string, changes: unknown[], breaking = false): object {
  return { id, description: `step ${id}`, fromVersion, toVersion, breaking, automatic: !breaking, changes };
}
