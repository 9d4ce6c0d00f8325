/**
 * Crash safety across instances: two `template-registry serve` processes on one PostgreSQL database
 * and one bucket (s3rver); instance A is killed with SIGKILL in the middle of several uploads, one of
 * them killed between its reservation and its commit. Nothing answered 201 is lost, no version is
 * listed without its archive, B keeps serving throughout, and every interrupted upload succeeds when
 * retried through B, at once. Runs the compiled build/ (`npm run build` first).
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';

import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import type { RegistryDocument, TemplateManifest } from '../../src/core/schema-types.js';
import { packTemplate } from '../../src/pack/index.js';
import { FolderBlobStore, openPostgresStorage } from '../../src/store/index.js';
import { tempDir, validManifest, writeTemplate } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { freePort } from '../helpers/registry-server.js';
import { startFakeS3, S3RVER_CREDENTIALS, type FakeS3 } from '../helpers/s3-server.js';
import { killHard, serveProcess } from '../helpers/serve-process.js';

const BUCKET = 'registry';

interface Packed {
  manifest: TemplateManifest;
  bytes: Buffer;
}

async function pack(name: string, extra: Record<string, string | Buffer> = {}): Promise<Packed> {
  const packed = await packTemplate(await writeTemplate({ 'template.json': { ...validManifest, name }, ...extra }), { outDir: await tempDir() });
  return { manifest: packed.manifest, bytes: await readFile(packed.file) };
}

async function upload(url: string, token: string, packed: Packed): Promise<number> {
  const form = new FormData();
  form.append('manifest', new Blob([JSON.stringify(packed.manifest)], { type: 'application/json' }), 'template.json');
  form.append('template', new Blob([packed.bytes], { type: 'application/gzip' }), 'template.tgz');
  try {
    const response = await fetch(`${url}/templates`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    await response.arrayBuffer();
    return response.status;
  } catch {
    // The connection died with the server: no answer.
    return 0;
  }
}

const integrityOf = (bytes: Buffer): string => `sha512-${createHash('sha512').update(bytes).digest('base64')}`;

describe.skipIf(postgresSkipReason !== undefined)('two serve processes on one database and bucket: SIGKILL of one', () => {
  const postgres = usePostgres();
  let s3: FakeS3;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    s3 = await startFakeS3([BUCKET]);
  });
  afterAll(async () => {
    await s3?.close();
  });
  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => killHard(child)));
  });

  it('loses nothing answered 201, never lists a version without its archive, keeps B serving, and takes every interrupted upload on retry through B', async () => {
    const databaseUrl = await postgres.createDatabase();
    const prefix = 'crash';
    // The admin token, made through the storage as `token create --database` would.
    const setupDir = await tempDir('tr-crash-setup-');
    const setup = await openPostgresStorage({ url: databaseUrl, blobs: new FolderBlobStore(setupDir), publicDir: path.join(setupDir, 'public'), tmpDir: path.join(setupDir, 'tmp') });
    const { token } = await setup.tokens.createToken({ role: 'admin' });
    await setup.close();

    const env = { AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey, AWS_REGION: 'us-east-1', REGISTRY_UPLOAD_LIMIT: '1000', REGISTRY_READ_LIMIT: '100000' };
    const start = async (): Promise<{ child: ChildProcess; url: string }> => {
      const port = await freePort();
      const args = ['--database', databaseUrl, '--storage', `s3://${BUCKET}/${prefix}`, '--s3-endpoint', s3.endpoint, '--s3-force-path-style'];
      const child = await serveProcess(await tempDir('tr-crash-instance-'), port, args, env);
      children.push(child);
      return { child, url: `http://127.0.0.1:${port}` };
    };
    const a = await start();
    const b = await start();

    // B is watched throughout: every answer of registry.json is 200, and every version it lists has its archive.
    let watching = true;
    const problems: string[] = [];
    let looks = 0;
    const watcher = (async () => {
      while (watching) {
        try {
          const response = await fetch(`${b.url}/registry.json`);
          if (response.status !== 200) problems.push(`registry.json answered ${response.status}`);
          const document = (await response.json()) as RegistryDocument;
          for (const entry of document.templates) {
            const archive = await fetch(entry.downloadUrl);
            const bytes = Buffer.from(await archive.arrayBuffer());
            if (archive.status !== 200 || integrityOf(bytes) !== entry.integrity) problems.push(`${entry.id}@${entry.version} listed without its archive (${archive.status})`);
          }
          looks++;
        } catch (error) {
          problems.push(`B did not answer: ${String(error)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    // A large one (its blob upload takes a while: A is killed while it holds the reservation), and small ones.
    const large = await pack('crash-large', { 'template/payload.bin': randomBytes(12 * 1024 * 1024) });
    const small = await Promise.all(Array.from({ length: 16 }, (_, i) => pack(`crash-small-${i}`)));
    const all = [large, ...small];
    const answers = new Map<string, number>();
    // The small ones in three lanes, one after another, around the kill: some answered before it, some cut by it.
    const queue = [...small];
    const lane = async (): Promise<void> => {
      for (let next = queue.shift(); next; next = queue.shift()) answers.set(next.manifest.name, await upload(a.url, token, next));
    };
    const uploads = [upload(a.url, token, large).then((status) => void answers.set(large.manifest.name, status)), lane(), lane(), lane()];

    // Killed the moment the large upload is reserved and not yet committed.
    const db = new pg.Client({ connectionString: databaseUrl });
    db.on('error', () => undefined);
    await db.connect();
    try {
      await vi.waitFor(
        async () => {
          const { rows } = await db.query("SELECT 1 FROM versions WHERE name = 'crash-large' AND state = 'pending'");
          expect(rows).toHaveLength(1);
        },
        { timeout: 30_000, interval: 5 },
      );
      await killHard(a.child);
      await Promise.all(uploads);
      expect(answers.get('crash-large')).toBe(0);
      // The pending row A left is there: only a retry (or a restart's recovery) deals with it.
      expect((await db.query("SELECT state FROM versions WHERE name = 'crash-large'")).rows).toEqual([{ state: 'pending' }]);

      const answered = all.filter((packed) => answers.get(packed.manifest.name) === 201);
      // Everything answered 201 is listed by B with the right bytes.
      await vi.waitFor(
        async () => {
          const ids = ((await (await fetch(`${b.url}/registry.json`)).json()) as RegistryDocument).templates.map((entry) => entry.id);
          for (const packed of answered) expect(ids).toContain(packed.manifest.name);
        },
        { timeout: 10_000, interval: 50 },
      );
      // Every upload without a 201 is retried through B and succeeds at once (201, or 409 when A stored it and died before answering).
      // At once: answered, not told to wait (503) for the dead instance's reservation to lapse.
      for (const packed of all.filter((p) => answers.get(p.manifest.name) !== 201)) {
        const status = await upload(b.url, token, packed);
        expect([201, 409], `${packed.manifest.name}: ${status}`).toContain(status);
      }

      const document = (await (await fetch(`${b.url}/registry.json`)).json()) as RegistryDocument;
      expect(document.templates.map((entry) => entry.id).sort()).toEqual(all.map((p) => p.manifest.name).sort());
      for (const packed of all) {
        const entry = document.templates.find((e) => e.id === packed.manifest.name)!;
        const bytes = Buffer.from(await (await fetch(entry.downloadUrl)).arrayBuffer());
        expect(bytes.equals(packed.bytes), packed.manifest.name).toBe(true);
      }
      expect((await db.query("SELECT count(*)::int AS n FROM versions WHERE state = 'pending'")).rows).toEqual([{ n: 0 }]);
    } finally {
      watching = false;
      await watcher;
      await db.end();
    }
    expect(problems).toEqual([]);
    expect(looks).toBeGreaterThan(5);
  }, 120_000);
});
