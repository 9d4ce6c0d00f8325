/**
 * A signed static registry: keys.json with the public keys and their windows, a detached JWS beside
 * registry.json, index.json and each template file, that any JOSE implementation verifies (here:
 * jose directly, not the project's verifier); signatures kept while the bytes stay, made again
 * when they change; a build without a key over a signed registry refused; key rotation.
 */
import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { compactVerify, generalVerify, importJWK, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';

import { buildRegistry, RegistryBuildError } from '../../src/registry/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/fixtures.js';
import { keyFile, privateJwk, publicJwk, signingKeys } from '../helpers/signing-keys.js';
import { memorySource, version } from './memory-source.js';

const T1 = new Date('2026-05-01T10:00:00.000Z');
const T2 = new Date('2026-05-02T10:00:00.000Z');

interface KeysFile {
  keys: (JWK & { kid: string; notBefore: string | null; notAfter: string | null })[];
}

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Verifies `<file>.jws` of the registry in `dir` with plain jose and the keys of its keys.json; returns the payload and kid. */
async function verifyWithJose(dir: string, file: string): Promise<{ kid: string; payload: { path: string; sha256: string; iat: number } }> {
  const keys = JSON.parse(await readFile(path.join(dir, 'keys.json'), 'utf8')) as KeysFile;
  const jws = (await readFile(path.join(dir, `${file}.jws`), 'utf8')).trim();
  const header = JSON.parse(Buffer.from(jws.split('.')[0] as string, 'base64url').toString('utf8')) as { kid: string; alg: string; typ: string };
  expect(header.typ).toBe('template-registry-signature+json');
  const key = keys.keys.find((k) => k.kid === header.kid);
  if (!key) throw new Error(`no key ${header.kid}`);
  const verified = await compactVerify(jws, await importJWK(key, header.alg));
  const payload = JSON.parse(new TextDecoder().decode(verified.payload)) as { path: string; sha256: string; iat: number };
  expect(payload.path).toBe(file);
  expect(payload.sha256).toBe(sha256(await readFile(path.join(dir, file))));
  return { kid: header.kid, payload };
}

const source = () =>
  memorySource([version('alpha', '1.0.0', {}, { downloadUrl: 'archives/alpha/1.0.0.tgz' }), version('beta', '2.0.0', {}, { downloadUrl: 'archives/beta/2.0.0.tgz' })]);

describe('a signed build', () => {
  it('writes keys.json (public keys with kid and window, never a private member) and a JWS beside every document that jose verifies', async () => {
    const dir = await tempDir();
    const jwk = await privateJwk('release-2026', { notAfter: '2027-06-01T00:00:00Z' });
    const result = await buildRegistry(source(), { outDir: dir, now: () => T1, signing: await signingKeys(jwk) });
    expect(result.signing).toMatchObject({ kid: 'release-2026', keys: ['release-2026'] });

    const keysText = await readFile(path.join(dir, 'keys.json'), 'utf8');
    expect(keysText).not.toContain('"d"');
    const keys = JSON.parse(keysText) as KeysFile;
    expect(keys.keys).toEqual([{ ...publicJwk(jwk), alg: 'EdDSA', use: 'sig', notBefore: '2026-05-01T10:00:00.000Z', notAfter: '2027-06-01T00:00:00.000Z' }]);

    for (const file of ['registry.json', 'index.json', 'templates/alpha.json', 'templates/beta.json']) {
      const { kid, payload } = await verifyWithJose(dir, file);
      expect(kid).toBe('release-2026');
      expect(payload.iat).toBe(T1.getTime() / 1000);
    }
    // keys.json is signed too (JSON serialization: one signature per active key).
    const general = JSON.parse(await readFile(path.join(dir, 'keys.json.jws'), 'utf8')) as { payload: string; signatures: { protected: string; signature: string }[] };
    const verified = await generalVerify(general, await importJWK(keys.keys[0] as JWK, 'EdDSA'));
    expect(JSON.parse(new TextDecoder().decode(verified.payload))).toMatchObject({ path: 'keys.json', sha256: sha256(Buffer.from(keysText)) });
    expect(result.files).toEqual(expect.arrayContaining(['keys.json', 'keys.json.jws', 'registry.json.jws', 'index.json.jws', 'templates/alpha.json.jws']));
  });

  it('signs with a P-256 key (ES256) as well', async () => {
    const dir = await tempDir();
    await buildRegistry(source(), { outDir: dir, now: () => T1, signing: await signingKeys(await privateJwk('p256', { alg: 'ES256' })) });
    const keys = JSON.parse(await readFile(path.join(dir, 'keys.json'), 'utf8')) as KeysFile;
    expect(keys.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', kid: 'p256' });
    expect((await verifyWithJose(dir, 'registry.json')).kid).toBe('p256');
  });

  it('keeps the signatures of unchanged files and signs again only what changed', async () => {
    const dir = await tempDir();
    const signing = await signingKeys(await privateJwk('k1'));
    const versions = source();
    await buildRegistry(versions, { outDir: dir, now: () => T1, signing });
    const before = await readFile(path.join(dir, 'templates/alpha.json.jws'), 'utf8');

    const again = await buildRegistry(versions, { outDir: dir, now: () => T2, signing });
    expect(again.written).toEqual([]);

    versions.list.push(version('beta', '2.1.0', {}, { downloadUrl: 'archives/beta/2.1.0.tgz' }));
    const changed = await buildRegistry(versions, { outDir: dir, now: () => T2, signing });
    expect(changed.written).toEqual(expect.arrayContaining(['templates/beta.json.jws', 'index.json.jws', 'registry.json.jws']));
    expect(changed.written).not.toContain('templates/alpha.json.jws');
    expect(await readFile(path.join(dir, 'templates/alpha.json.jws'), 'utf8')).toBe(before);
    expect((await verifyWithJose(dir, 'templates/beta.json')).payload.iat).toBe(T2.getTime() / 1000);
    expect((await verifyWithJose(dir, 'registry.json')).payload.iat).toBe(T2.getTime() / 1000);
  });

  it('signs again a signature that no longer matches its file, and removes the signature of a template that is gone', async () => {
    const dir = await tempDir();
    const signing = await signingKeys(await privateJwk('k1'));
    const versions = source();
    await buildRegistry(versions, { outDir: dir, now: () => T1, signing });
    await writeFile(path.join(dir, 'templates/alpha.json.jws'), 'garbage\n');
    versions.list = versions.list.filter((v) => v.manifest.name !== 'beta');
    const result = await buildRegistry(versions, { outDir: dir, now: () => T2, signing });
    await verifyWithJose(dir, 'templates/alpha.json');
    expect(result.removed).toEqual(expect.arrayContaining(['templates/beta.json', 'templates/beta.json.jws']));
  });

  it('refuses to build without a key over a signed registry, writing nothing', async () => {
    const dir = await tempDir();
    const versions = source();
    await buildRegistry(versions, { outDir: dir, now: () => T1, signing: await signingKeys(await privateJwk('k1')) });
    const registry = await readFile(path.join(dir, 'registry.json'));
    versions.list.push(version('gamma', '1.0.0'));
    const error = await buildRegistry(versions, { outDir: dir, now: () => T2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryBuildError);
    expect((error as Error).message).toMatch(/keys\.json says this registry is signed.*pass --sign-key/);
    expect(await readFile(path.join(dir, 'registry.json'))).toEqual(registry);
    await expect(readFile(path.join(dir, 'templates/gamma.json'))).rejects.toThrow();
  });

  it('rotates keys: the next key is listed before it signs, then signs, and both vouch for keys.json while both are valid', async () => {
    const dir = await tempDir();
    const old = await privateJwk('k-2026', { notBefore: '2026-01-01T00:00:00Z', notAfter: '2026-12-31T00:00:00Z' });
    const next = await privateJwk('k-2027', { notBefore: '2026-06-01T00:00:00Z', notAfter: '2027-12-31T00:00:00Z' });
    const signing = await signingKeys(old, next);

    const announced = await buildRegistry(source(), { outDir: dir, now: () => T1, signing });
    expect(announced.signing).toMatchObject({ kid: 'k-2026', keys: ['k-2026', 'k-2027'] });
    expect((await verifyWithJose(dir, 'registry.json')).kid).toBe('k-2026');
    const announcedKeys = JSON.parse(await readFile(path.join(dir, 'keys.json.jws'), 'utf8')) as { signatures: unknown[] };
    expect(announcedKeys.signatures).toHaveLength(1); // k-2027 is not valid yet: it signs nothing

    const rotated = await buildRegistry(source(), { outDir: dir, now: () => new Date('2026-07-01T00:00:00Z'), signing });
    expect(rotated.signing?.kid).toBe('k-2027');
    for (const file of ['registry.json', 'index.json', 'templates/alpha.json']) expect((await verifyWithJose(dir, file)).kid).toBe('k-2027');
    const both = JSON.parse(await readFile(path.join(dir, 'keys.json.jws'), 'utf8')) as { signatures: { protected: string }[] };
    expect(both.signatures.map((s) => (JSON.parse(Buffer.from(s.protected, 'base64url').toString('utf8')) as { kid: string }).kid).sort()).toEqual(['k-2026', 'k-2027']);

    // After the old key expired it is left out of keys.json, with a warning.
    const later = await buildRegistry(source(), { outDir: dir, now: () => new Date('2027-02-01T00:00:00Z'), signing });
    expect(later.signing?.keys).toEqual(['k-2027']);
    expect(later.signing?.warnings.join('\n')).toMatch(/k-2026 expired/);
  });

  it('refuses a key file whose keys are all outside their window', async () => {
    const dir = await tempDir();
    const expired = await privateJwk('gone', { notAfter: '2026-01-01T00:00:00Z' });
    const error = await buildRegistry(source(), { outDir: dir, now: () => T1, signing: await signingKeys(expired) }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/no signing key is valid at 2026-05-01T10:00:00.000Z \(gone: .* to 2026-01-01T00:00:00.000Z\)/);
  });
});

describe('build-registry --sign-key', () => {
  it('signs the registry with the key file it names (or its JSON inline)', async () => {
    const jwk = await privateJwk('cli-key');
    const { storeDir } = await storeWithOneVersion();
    for (const value of [await keyFile(jwk), JSON.stringify(jwk)]) {
      const dir = await tempDir();
      const built = await cli('build-registry', '--store', storeDir, '--out', dir, '--sign-key', value, '--json');
      expect(built.code, built.stderr).toBe(0);
      expect(JSON.parse(built.stdout)).toMatchObject({ signedBy: 'cli-key', keys: ['cli-key'] });
      expect((await verifyWithJose(dir, 'registry.json')).kid).toBe('cli-key');
    }
  });

  it('names --sign-key and the rule when the key cannot sign', async () => {
    const jwk = await privateJwk('k');
    const out = await tempDir();
    const cases: [string, RegExp][] = [
      [await keyFile(publicJwk(jwk)), /--sign-key .*kid k\) is a public key: signing needs the private key \("d"\)/],
      [await keyFile({ ...jwk, kid: undefined }), /--sign-key .*\.kid is required/],
      [path.join(out, 'missing.json'), /--sign-key .*missing\.json cannot be read: ENOENT/],
      ['{"kty":"oct","k":"c2VjcmV0","kid":"hmac"}', /--sign-key \(kid hmac\) must be an Ed25519 key .* or a P-256 key/],
      ['{not json', /--sign-key is not valid JSON/],
    ];
    for (const [value, message] of cases) {
      const run = await cli('build-registry', '--store', out, '--out', out, '--sign-key', value);
      expect(run.code, value).toBe(2);
      expect(run.stderr).toMatch(message);
    }
    // The secret of an inline key is never echoed.
    const inline = await cli('build-registry', '--store', out, '--out', out, '--sign-key', JSON.stringify({ ...jwk, crv: 'X25519' }));
    expect(inline.stderr).not.toContain(jwk.d as string);
  });

  it('serve --sign-key needs a bucket storage (the static copy it signs)', async () => {
    const run = await cli('serve', '--store', await tempDir(), '--sign-key', await keyFile(await privateJwk('k')));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--sign-key signs the static copy of the registry in a bucket: it needs --storage s3:\/\/bucket\/prefix/);
  });

  it('reads the key from REGISTRY_SIGN_KEY when the flag is not given', async () => {
    const { storeDir } = await storeWithOneVersion();
    const dir = await tempDir();
    process.env.REGISTRY_SIGN_KEY = await keyFile(await privateJwk('from-env'));
    try {
      const built = await cli('build-registry', '--store', storeDir, '--out', dir);
      expect(built.code, built.stderr).toBe(0);
      expect(built.stdout).toMatch(/signed by key from-env/);
    } finally {
      delete process.env.REGISTRY_SIGN_KEY;
    }
    await rm(dir, { recursive: true });
  });
});

/** A server store holding one published version of the example template. */
async function storeWithOneVersion(): Promise<{ storeDir: string }> {
  const { startRegistryServer } = await import('../helpers/registry-server.js');
  const { packTemplate } = await import('../../src/pack/index.js');
  const { publishTemplate } = await import('../../src/publish/index.js');
  const { example } = await import('../helpers/example-versions.js');
  const server = await startRegistryServer();
  const pack = await packTemplate(example, { outDir: await tempDir(), version: '1.1.0' });
  await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  await server.app.close();
  return { storeDir: server.storeDir };
}
