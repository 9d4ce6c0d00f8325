/**
 * A change log without a section for the version is not a reason to refuse an upload (the spec
 * does not ask for one): the server publishes it, unless its operator requires an entry
 * (`requireChangelogEntry`, `serve --require-changelog-entry`, REGISTRY_REQUIRE_CHANGELOG_ENTRY).
 */
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate, PublishError } from '../../src/publish/index.js';
import { booleanEnv } from '../../src/cli/commands/serve.js';
import { tempDir, writeTemplate } from '../helpers/fixtures.js';
import { freePort, startRegistryServer } from '../helpers/registry-server.js';
import { killHard, serveProcess } from '../helpers/serve-process.js';

/** An archive of demo-template 1.1.0 whose change log only has a section for 1.0.0. */
async function withoutEntry(): Promise<Awaited<ReturnType<typeof packTemplate>>> {
  const dir = await writeTemplate({ 'CHANGELOG.md': '# Changelog\n\n## [1.0.0] - 2026-01-01\n\n- First release\n' });
  return packTemplate(dir, { outDir: await tempDir('tr-pack-'), version: '1.1.0' });
}

describe('an upload whose change log has no entry for its version', () => {
  it('is published by default', async () => {
    const server = await startRegistryServer();
    const pack = await withoutEntry();
    const result = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    expect(result.uploaded).toBe(true);
    expect((await server.store.versions.listVersions()).map((v) => v.version)).toEqual(['1.1.0']);
  });

  it('is refused with 422 naming the change log when the server requires an entry', async () => {
    const server = await startRegistryServer({ requireChangelogEntry: true });
    const pack = await withoutEntry();
    const refused = await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PublishError);
    expect(refused).toMatchObject({ status: 422 });
    expect((refused as PublishError).details).toContainEqual(
      expect.objectContaining({ field: 'template/CHANGELOG.md', code: 'CHANGELOG_MISSING_VERSION', message: expect.stringMatching(/has no section for version 1\.1\.0/) as unknown }),
    );
    expect(await server.store.versions.listVersions()).toEqual([]);
  });

  it('with an entry is published by a server that requires one', async () => {
    const server = await startRegistryServer({ requireChangelogEntry: true });
    const dir = await writeTemplate({ 'CHANGELOG.md': '# Changelog\n\n## [1.1.0] - 2026-02-01\n\n- More\n' });
    const pack = await packTemplate(dir, { outDir: await tempDir('tr-pack-'), version: '1.1.0' });
    expect((await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest })).uploaded).toBe(true);
  });
});

describe('template-registry serve (the built CLI)', () => {
  const ADMIN = 'admin-token-for-the-changelog-test-0123456789';

  /** The status of publishing the archive without an entry to `serve` started with `args` and `env`. */
  async function uploadTo(args: string[], env: NodeJS.ProcessEnv): Promise<number | undefined> {
    const port = await freePort();
    const child = await serveProcess(await tempDir('tr-store-'), port, args, { REGISTRY_ADMIN_TOKEN: ADMIN, ...env });
    try {
      const pack = await withoutEntry();
      const outcome = await publishTemplate({ registryUrl: `http://127.0.0.1:${port}`, token: ADMIN, archive: pack.file, manifest: pack.manifest }).catch((error: unknown) => error);
      return outcome instanceof PublishError ? outcome.status : 201;
    } finally {
      await killHard(child);
    }
  }

  it('publishes it by default, and refuses it with --require-changelog-entry or REGISTRY_REQUIRE_CHANGELOG_ENTRY=1', async () => {
    expect(await uploadTo([], {})).toBe(201);
    expect(await uploadTo(['--require-changelog-entry'], {})).toBe(422);
    expect(await uploadTo([], { REGISTRY_REQUIRE_CHANGELOG_ENTRY: '1' })).toBe(422);
  }, 60_000);
});

describe('REGISTRY_REQUIRE_CHANGELOG_ENTRY', () => {
  it('reads 1/true/yes/on and 0/false/no/off/empty, and refuses anything else naming the variable', () => {
    for (const on of ['1', 'true', 'YES', ' on ']) expect(booleanEnv('REGISTRY_REQUIRE_CHANGELOG_ENTRY', on)).toBe(true);
    for (const off of [undefined, '', '0', 'false', 'no', 'off']) expect(booleanEnv('REGISTRY_REQUIRE_CHANGELOG_ENTRY', off)).toBe(false);
    expect(() => booleanEnv('REGISTRY_REQUIRE_CHANGELOG_ENTRY', 'maybe')).toThrow(/REGISTRY_REQUIRE_CHANGELOG_ENTRY must be 1, true, yes or on .*"maybe"/);
  });
});
