/**
 * Temp files at a start (`recover()`): those of an instance killed with SIGKILL are removed at once,
 * whatever their age; those of an instance that still runs and shares the folders (its uploads in
 * tmp/, its atomic writes in the public folder or a shared folder blob store) are never touched,
 * and neither are the starting instance's own. On every backend: the embedded store, PostgreSQL
 * with a shared blob folder, PostgreSQL with a bucket (s3rver). The other instances are real
 * processes running the compiled build/ (`npm run build` first).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { tempPathBeside } from '../../src/core/files.js';
import { FolderBlobStore, openPostgresStorage, openSqliteStorage, S3BlobStore, type RegistryStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { postgresSkipReason, usePostgres } from '../helpers/postgres.js';
import { startFakeS3, S3RVER_CREDENTIALS, type FakeS3 } from '../helpers/s3-server.js';

const filesModule = path.resolve('build/src/core/files.js');

/** Where an instance leaves temp files: its upload folder and the folders it writes atomically into. */
interface Folders {
  tmp: string;
  /** Folders written through `tempPathBeside` (the public folder, a folder blob store's key folders). */
  beside: string[];
}

/**
 * Another instance: a process that makes one temp file in each folder, as its uploads and atomic
 * writes do, and keeps running until killed. Resolves with the files once they exist.
 */
async function otherInstance(folders: Folders): Promise<{ child: ChildProcess; files: string[] }> {
  const script = `
    const { ownedTempName, tempPathBeside } = await import(${JSON.stringify(filesModule)});
    const { mkdir, writeFile } = await import('node:fs/promises');
    const path = await import('node:path');
    const folders = JSON.parse(process.argv[1]);
    const files = [path.join(folders.tmp, ownedTempName('.tgz')), ...folders.beside.map((dir) => tempPathBeside(path.join(dir, 'file.json')))];
    for (const file of files) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, 'in progress');
    }
    process.stdout.write(JSON.stringify(files) + '\\n');
    setInterval(() => undefined, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(folders)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const files = await new Promise<string[]>((resolve, reject) => {
    child.stdout?.once('data', (data: Buffer) => resolve(JSON.parse(data.toString('utf8')) as string[]));
    child.once('exit', (code) => reject(new Error(`the other instance exited (${code})`)));
  });
  return { child, files };
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function exists(file: string): Promise<boolean> {
  return (await readdir(path.dirname(file)).catch(() => [] as string[])).includes(path.basename(file));
}

interface Backend {
  /** Opens an instance; `shared` folders are the same for every instance of one test. */
  open(): Promise<{ storage: RegistryStorage; folders: Folders }>;
}

function leftoverTempSuite(name: string, backend: () => Backend): void {
  describe(`${name}: temp files at a start`, () => {
    const running: ChildProcess[] = [];
    const opened: RegistryStorage[] = [];
    afterEach(async () => {
      for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) await killed(child);
      await Promise.all(opened.splice(0).map((storage) => storage.close()));
    });

    it("removes a killed instance's at once, never a running instance's nor its own", async () => {
      const { storage, folders } = await backend().open();
      opened.push(storage);
      const dead = await otherInstance(folders);
      running.push(dead.child);
      const live = await otherInstance(folders);
      running.push(live.child);
      await killed(dead.child);
      // This instance's own upload in progress, and an atomic write of its own.
      const own = [storage.versions.uploadTempPath('.tgz'), ...folders.beside.map((dir) => tempPathBeside(path.join(dir, 'mine.json')))];
      for (const file of own) {
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, 'mine');
      }
      for (const file of [...dead.files, ...live.files]) expect(await exists(file), file).toBe(true);

      await storage.recover();

      for (const file of dead.files) expect(await exists(file), `killed: ${file}`).toBe(false);
      for (const file of [...live.files, ...own]) expect(await exists(file), `running: ${file}`).toBe(true);
    });
  });
}

leftoverTempSuite('embedded store', () => ({
  async open() {
    const dir = await tempDir('tr-temps-store-');
    const storage = await openSqliteStorage(dir);
    return { storage, folders: { tmp: path.join(dir, 'tmp'), beside: [path.join(dir, 'public'), path.join(dir, 'public', 'templates'), path.join(dir, 'archives', 'web-app')] } };
  },
}));

describe.skipIf(postgresSkipReason !== undefined)('PostgreSQL', () => {
  const postgres = usePostgres();
  let s3: FakeS3;
  beforeAll(async () => {
    s3 = await startFakeS3(['registry']);
  });
  afterAll(async () => {
    await s3.close();
  });

  leftoverTempSuite('PostgreSQL + a shared blob folder', () => ({
    async open() {
      const local = await tempDir('tr-temps-instance-');
      const blobDir = await tempDir('tr-temps-blobs-');
      const storage = await openPostgresStorage({ url: await postgres.createDatabase(), blobs: new FolderBlobStore(blobDir), publicDir: path.join(local, 'public'), tmpDir: path.join(local, 'tmp') });
      return { storage, folders: { tmp: path.join(local, 'tmp'), beside: [path.join(local, 'public'), path.join(blobDir, 'archives', 'web-app'), path.join(blobDir, 'files')] } };
    },
  }));

  let prefixes = 0;
  leftoverTempSuite('PostgreSQL + S3', () => ({
    async open() {
      const local = await tempDir('tr-temps-instance-');
      const blobs = new S3BlobStore({ bucket: 'registry', prefix: `temps-${++prefixes}`, endpoint: s3.endpoint, forcePathStyle: true, credentials: S3RVER_CREDENTIALS, timeoutMs: 10_000 });
      const storage = await openPostgresStorage({ url: await postgres.createDatabase(), blobs, publicDir: path.join(local, 'public'), tmpDir: path.join(local, 'tmp') });
      return { storage, folders: { tmp: path.join(local, 'tmp'), beside: [path.join(local, 'public'), path.join(local, 'public', 'templates')] } };
    },
  }));
});
