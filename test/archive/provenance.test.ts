/**
 * The provenance of an archive end to end on a Sigstore of our own (`@sigstore/mock`'s Fulcio,
 * Rekor and timestamp authority on 127.0.0.1, trusted through a root made of their keys): signed as
 * the publish action signs it, verified as the server and the client verify it, and every way a
 * bundle can fail to be about this archive from this workflow.
 */
import { createHash } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { loadSigstoreTrust, publicGoodTrust, SLSA_PROVENANCE_V1, verifyProvenance, ProvenanceError, type ProvenanceProblem } from '../../src/archive/provenance.js';
import { startFakeOidc } from '../helpers/fake-oidc.js';
import { signProvenance, startFakeSigstore } from '../helpers/fake-sigstore.js';

const archive = Buffer.from('pretend these are the bytes of a gzip tar archive\n'.repeat(50));
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

async function problemOf(run: () => Promise<unknown>): Promise<ProvenanceProblem | undefined> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ProvenanceError) return error.problem;
    throw error;
  }
  return undefined;
}

async function setup() {
  const [sigstore, oidc] = await Promise.all([startFakeSigstore(), startFakeOidc()]);
  const trust = await loadSigstoreTrust(sigstore.trustedRootFile);
  const signer = { repository: 'acme/web-app', workflow: 'publish.yml', issuer: oidc.issuer };
  return { sigstore, oidc, trust, signer };
}

describe('build provenance of an archive', () => {
  it('verifies a bundle signed for the archive by its workflow, naming the signer and the run', async () => {
    const { sigstore, oidc, trust, signer } = await setup();
    const bundle = await signProvenance(sigstore, oidc, { name: 'web-app-1.0.0.tgz', sha256: sha256(archive) });
    expect(JSON.parse(bundle).mediaType).toMatch(/^application\/vnd\.dev\.sigstore\.bundle/);
    const verified = await verifyProvenance(bundle, { sha256: sha256(archive), signer }, trust);
    expect(verified).toEqual({ signer, predicateType: SLSA_PROVENANCE_V1, runUrl: 'https://github.com/acme/web-app/actions/runs/8123456789/attempts/1' });
    // Fulcio was asked for a certificate, Rekor logged it, the timestamp authority stamped it.
    expect(sigstore.requests).toEqual(['/api/v2/signingCert', '/api/v1/log/entries', '/api/v1/timestamp']);
  });

  it('verifies a bundle with only a log entry, and one with only a timestamp (GitHub private repositories)', async () => {
    const { sigstore, oidc, trust, signer } = await setup();
    for (const endpoints of [{ rekor: true }, { tsa: true }]) {
      const bundle = await signProvenance(sigstore, oidc, { name: 'a.tgz', sha256: sha256(archive) }, {}, endpoints);
      expect((await verifyProvenance(bundle, { sha256: sha256(archive), signer }, trust)).signer).toEqual(signer);
    }
  });

  it('refuses the bundle when one byte of the archive is flipped', async () => {
    const { sigstore, oidc, trust, signer } = await setup();
    const bundle = await signProvenance(sigstore, oidc, { name: 'a.tgz', sha256: sha256(archive) });
    const flipped = Buffer.from(archive);
    flipped[100] = (flipped[100] as number) ^ 0x01;
    expect(await problemOf(() => verifyProvenance(bundle, { sha256: sha256(flipped), signer }, trust))).toBe('DIGEST');
  });

  it('refuses a bundle about another file', async () => {
    const { sigstore, oidc, trust, signer } = await setup();
    const other = await signProvenance(sigstore, oidc, { name: 'a.tgz', sha256: sha256(Buffer.from('another archive')) });
    await expect(verifyProvenance(other, { sha256: sha256(archive), signer }, trust)).rejects.toThrow(/about other bytes/);
  });

  it("refuses the right digest signed under another repository's identity, or by another workflow", async () => {
    const { sigstore, oidc, trust, signer } = await setup();
    const otherRepository = await signProvenance(sigstore, oidc, { name: 'a.tgz', sha256: sha256(archive) }, { repository: 'mallory/web-app' });
    expect(await problemOf(() => verifyProvenance(otherRepository, { sha256: sha256(archive), signer }, trust))).toBe('IDENTITY');
    await expect(verifyProvenance(otherRepository, { sha256: sha256(archive), signer, signerRole: 'the trusted publisher' }, trust)).rejects.toThrow(
      /signed by mallory\/web-app @ publish\.yml .*not by the trusted publisher acme\/web-app @ publish\.yml/,
    );
    const otherWorkflow = await signProvenance(sigstore, oidc, { name: 'a.tgz', sha256: sha256(archive) }, { workflow: 'release.yml' });
    expect(await problemOf(() => verifyProvenance(otherWorkflow, { sha256: sha256(archive), signer }, trust))).toBe('IDENTITY');
    // Without an expected identity, the signer is whoever the certificate names.
    expect((await verifyProvenance(otherWorkflow, { sha256: sha256(archive) }, trust)).signer).toEqual({ ...signer, workflow: 'release.yml' });
  });

  it('refuses a bundle whose signature or statement was altered, and one of a CA the trusted root does not hold', async () => {
    const { sigstore, oidc, trust, signer } = await setup();
    const bundle = await signProvenance(sigstore, oidc, { name: 'a.tgz', sha256: sha256(archive) });
    const parsed = JSON.parse(bundle);
    const statement = JSON.parse(Buffer.from(parsed.dsseEnvelope.payload, 'base64').toString('utf8'));
    statement.subject[0].name = 'renamed.tgz';
    const altered = JSON.stringify({ ...parsed, dsseEnvelope: { ...parsed.dsseEnvelope, payload: Buffer.from(JSON.stringify(statement)).toString('base64') } });
    expect(await problemOf(() => verifyProvenance(altered, { sha256: sha256(archive), signer }, trust))).toBe('SIGNATURE');
    // The public-good root (as @sigstore/tuf ships it, read offline) does not vouch for this Fulcio.
    const publicGood = await publicGoodTrust();
    expect(await problemOf(() => verifyProvenance(bundle, { sha256: sha256(archive), signer }, publicGood))).toBe('SIGNATURE');
    // Another instance's root neither.
    const stranger = await startFakeSigstore();
    const strangerTrust = await loadSigstoreTrust(stranger.trustedRootFile);
    expect(await problemOf(() => verifyProvenance(bundle, { sha256: sha256(archive), signer }, strangerTrust))).toBe('SIGNATURE');
  });

  it('refuses what is not a bundle, naming the problem', async () => {
    const { trust } = await setup();
    for (const text of ['not json', '{}', JSON.stringify({ mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json' }), 'x'.repeat(200 * 1024)]) {
      expect(await problemOf(() => verifyProvenance(text, { sha256: sha256(archive) }, trust))).toBe('INVALID');
    }
  });

  it('loads the public-good trusted root offline, and names a file that is not a trusted root', async () => {
    const root = await publicGoodTrust();
    expect(root.material.certificateAuthorities.length).toBeGreaterThan(0);
    expect(root.material.tlogs.length).toBeGreaterThan(0);
    await expect(loadSigstoreTrust('/nonexistent/trusted_root.json')).rejects.toThrow(/cannot read the Sigstore trusted root \/nonexistent\/trusted_root\.json/);
  });
});
