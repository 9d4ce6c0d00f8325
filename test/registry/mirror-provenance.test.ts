/**
 * A mirror checks the build provenance of what it copies: each attestation an entry names is
 * verified against its archive before any document is written, and copied beside it.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { afterEach, describe, expect, it } from 'vitest';

import { loadSigstoreTrust, SLSA_PROVENANCE_V1 } from '../../src/archive/index.js';
import { staticAttestationPath } from '../../src/core/routes.js';
import { buildRegistry } from '../../src/registry/index.js';
import { MirrorError, mirrorRegistry } from '../../src/registry/mirror.js';
import { FolderOutput } from '../../src/registry/folder-output.js';
import type { SourceVersion } from '../../src/registry/source.js';
import { cli } from '../helpers/cli.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { signProvenance, startFakeSigstore } from '../helpers/fake-sigstore.js';
import { tempDir } from '../helpers/fixtures.js';
import { serveFolder, type FolderServer } from '../helpers/static-server.js';
import { version } from './memory-source.js';

const servers: FolderServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A version whose archive and (when given) attestation bundle the build publishes beside registry.json. */
function attested(name: string, v: string, bytes: Buffer, bundle?: string): SourceVersion {
  return version(
    name,
    v,
    {},
    {
      downloadUrl: `archives/${name}/${v}.tgz`,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
      sha256: sha256(bytes),
      size: bytes.length,
      openArchive: () => Promise.resolve({ stream: Readable.from([bytes]), size: bytes.length }),
      ...(bundle === undefined
        ? {}
        : {
            attestation: {
              url: staticAttestationPath(name, v),
              predicateType: SLSA_PROVENANCE_V1,
              signer: { repository: 'acme/web-app', workflow: 'publish.yml', issuer: 'https://token.actions.githubusercontent.com' },
            },
            readAttestation: () => Promise.resolve(Buffer.from(bundle)),
          }),
    },
  );
}

async function source(versions: SourceVersion[]) {
  const dir = await tempDir('tr-mirror-prov-source-');
  await buildRegistry({ versions: () => Promise.resolve([...versions]) }, { outDir: dir });
  const server = await serveFolder(dir);
  servers.push(server);
  return { dir, url: `${server.url}registry.json` };
}

async function signed() {
  const sigstore = await startFakeSigstore();
  const oidc = await startFakeOidc();
  const trust = await loadSigstoreTrust(sigstore.trustedRootFile);
  const sign = (name: string, bytes: Buffer) => signProvenance(sigstore, oidc, { name, sha256: sha256(bytes) });
  return { sigstore, trust, sign };
}

describe('mirrorRegistry and build provenance', () => {
  it('verifies each attestation against its archive and copies it beside it, byte for byte', async () => {
    const { trust, sign } = await signed();
    const one = Buffer.from('alpha one');
    const origin = await source([attested('alpha', '1.0.0', one, await sign('alpha-1.0.0.tgz', one)), attested('beta', '0.1.0', Buffer.from('beta'))]);
    const out = await tempDir('tr-mirror-prov-out-');
    const result = await mirrorRegistry({ source: origin.url, output: new FolderOutput(out), sigstoreTrust: trust });
    expect(result.provenanceVerified).toEqual(['alpha@1.0.0']);
    const bundlePath = staticAttestationPath('alpha', '1.0.0');
    expect(await readFile(path.join(out, bundlePath))).toEqual(await readFile(path.join(origin.dir, bundlePath)));
  });

  it('refuses an attestation of other bytes, and one its trusted root does not vouch for, writing no document', async () => {
    const { trust, sign } = await signed();
    const one = Buffer.from('alpha one');
    const forged = await source([attested('alpha', '1.0.0', one, await sign('alpha-1.0.0.tgz', Buffer.from('something else')))]);
    const out = await tempDir('tr-mirror-prov-out-');
    const refused = mirrorRegistry({ source: forged.url, output: new FolderOutput(out), sigstoreTrust: trust });
    await expect(refused).rejects.toThrow(MirrorError);
    await expect(refused).rejects.toThrow(/the provenance of alpha@1\.0\.0 .* does not verify/);
    await expect(readFile(path.join(out, 'registry.json'))).rejects.toMatchObject({ code: 'ENOENT' });

    // The same bundle, signed by a Sigstore the default (public-good) root does not trust.
    const genuine = await source([attested('alpha', '1.0.0', one, await sign('alpha-1.0.0.tgz', one))]);
    await expect(mirrorRegistry({ source: genuine.url, output: new FolderOutput(out) })).rejects.toThrow(/does not verify/);
    // Off: copied unchecked.
    const unchecked = await mirrorRegistry({ source: genuine.url, output: new FolderOutput(out), provenance: 'off' });
    expect(unchecked.provenanceVerified).toEqual([]);
    expect(await readFile(path.join(out, 'registry.json'), 'utf8')).toContain('alpha');
  });

  it('require: refuses an entry without provenance; the CLI takes --provenance and --sigstore-trusted-root', async () => {
    const { sigstore, sign } = await signed();
    const one = Buffer.from('alpha one');
    const mixed = await source([attested('alpha', '1.0.0', one, await sign('alpha-1.0.0.tgz', one)), attested('beta', '0.1.0', Buffer.from('beta'))]);
    const out = await tempDir('tr-mirror-prov-out-');
    const required = await cli('mirror', mixed.url, '--out', out, '--provenance', 'require', '--sigstore-trusted-root', sigstore.trustedRootFile);
    expect(required.code).toBe(1);
    expect(required.stderr).toMatch(/beta@0\.1\.0 has no build provenance/);
    const verified = await cli('mirror', mixed.url, '--out', out, '--sigstore-trusted-root', sigstore.trustedRootFile, '--json');
    expect(verified.code, verified.stderr).toBe(0);
    expect(JSON.parse(verified.stdout).provenanceVerified).toEqual(['alpha@1.0.0']);
    const badMode = await cli('mirror', mixed.url, '--out', out, '--provenance', 'warn');
    expect(badMode.code).toBe(2);
    expect(badMode.stderr).toMatch(/--provenance/);
  });
});
