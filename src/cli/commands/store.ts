/**
 * `template-registry store copy`: moves a whole store (embedded SQLite + files, or PostgreSQL with
 * its bytes in a folder or a bucket) into an empty one, verifying every archive on the way
 * (`copyStore`, store/copy.ts). Progress goes to stderr; the summary to stdout (`--json`: one
 * document). Nothing secret is printed: no hash, no webhook secret, no database password.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { Command } from 'commander';

import { errorMessage } from '../../core/errors.js';
import {
  copyStore,
  describeStorage,
  openStorage,
  StorageLocationError,
  StoreCopyError,
  StoreNotFoundError,
  type CopyProgress,
  type CopySummary,
  type OpenedStorage,
  type StorageLocation,
  type StoreDumper,
} from '../../store/index.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { isHttpUrl, S3_ENDPOINT_OPTION, S3_PATH_STYLE_OPTION, withoutPassword } from './backends.js';

interface CopyFlags {
  from: string;
  to: string;
  storageFrom?: string;
  storageTo?: string;
  s3Endpoint?: string;
  s3ForcePathStyle?: boolean;
  json?: boolean;
}

const isDatabaseUrl = (value: string): boolean => /^postgres(ql)?:\/\//i.test(value);
const isBucket = (value: string | undefined): boolean => value !== undefined && /^s3:\/\//i.test(value);

/** One side of the copy: where it is, as `openStorage` takes it, and the flags that named it. */
interface Side {
  role: 'source' | 'target';
  flag: '--from' | '--to';
  storageFlag: '--storage-from' | '--storage-to';
  location: StorageLocation;
  database?: string;
  /** A scratch store folder (a database's local folders, unused by a copy), removed at the end. */
  scratch?: string;
}

async function sideOf(role: Side['role'], value: string, storage: string | undefined, s3: StorageLocation['s3']): Promise<Side> {
  const flag = role === 'source' ? '--from' : '--to';
  const storageFlag = role === 'source' ? '--storage-from' : '--storage-to';
  if (value.trim() === '') throw new UsageError(`${flag} must name a store folder or a postgres:// URL`);
  const names = { database: flag, storage: storageFlag, s3Endpoint: '--s3-endpoint' };
  if (!isDatabaseUrl(value)) {
    return { role, flag, storageFlag, location: { store: value, ...(storage !== undefined ? { storage } : {}), s3, names } };
  }
  // PostgreSQL keeps its bytes elsewhere: there is no default a copy could guess safely.
  if (storage === undefined) throw new UsageError(`${storageFlag} is needed with ${flag} ${'postgres://...'}: the folder or s3://bucket/prefix its archives are kept in`);
  const scratch = await mkdtemp(path.join(tmpdir(), 'tr-store-copy-local-'));
  return { role, flag, storageFlag, location: { store: scratch, database: value, storage, s3, names }, database: value, scratch };
}

/**
 * Opens one side (the source must exist; the target is created, its schema migrated). A database's
 * local folders are never made: a copy uses none (`localFolders: 'recover'`, and it never recovers).
 */
async function open(side: Side): Promise<OpenedStorage> {
  try {
    return await openStorage(side.location, { create: side.role === 'target', localFolders: 'recover' });
  } catch (error) {
    if (error instanceof StorageLocationError) throw new UsageError(error.message);
    if (error instanceof StoreNotFoundError) throw new UsageError(`${side.flag}: ${error.message}`);
    if (side.database === undefined) throw error;
    throw new Error(`cannot open the ${side.role} database (${side.flag}): ${withoutPassword(errorMessage(error), side.database)}`, { cause: error });
  }
}

/** The dumper of an opened side (every backend has one). */
function dumperFor(side: Side, storage: OpenedStorage): StoreDumper {
  if (!storage.dump) throw new Error(`the ${side.role} (${side.flag}) is a storage that cannot be copied`);
  return storage.dump;
}

function bytes(size: number): string {
  if (size < 1024) return `${size} B`;
  if (size < 1024 * 1024) return `${(size / 1024).toFixed(1)} kB`;
  return `${(size / 1024 / 1024).toFixed(1)} MB`;
}

function progressLine(progress: CopyProgress): string | undefined {
  switch (progress.step) {
    case 'read':
      return `read the source: ${progress.counts.versions} versions, ${progress.counts.tokens} tokens, ${progress.counts.events} events`;
    case 'archive':
      return `[${progress.index}/${progress.total}] ${progress.name}@${progress.version}: ${bytes(progress.size)}, integrity verified`;
    case 'pending-skipped':
      return `${progress.name}@${progress.version} is pending (an upload not finished): its row is copied, not its bytes (${progress.reason})`;
    case 'rows':
      return 'writing the rows in one transaction';
    case 'done':
      return undefined;
  }
}

function summaryText(summary: CopySummary): string {
  return [
    `copied ${summary.from.location} -> ${summary.to.location} in ${(summary.durationMs / 1000).toFixed(1)} s`,
    `  versions:    ${summary.versions} (${summary.completeVersions} complete, ${summary.pendingVersions} pending)`,
    `  archives:    ${summary.archives} verified and copied (${bytes(summary.archiveBytes)}), ${summary.manifests} manifests`,
    `  tokens:      ${summary.tokens} (as their hashes: they keep working)`,
    `  owners:      ${summary.owners} names, ${summary.coOwners} co-owners`,
    `  accounts:    ${summary.users}, ${summary.sessions} sessions, ${summary.settings} settings (the access-token signing key)`,
    `  webhooks:    ${summary.webhooks}, ${summary.outboxDeliveries} outbox deliveries, ${summary.deliveryAttempts} delivery attempts`,
    `  events:      ${summary.events}`,
    ...(summary.stagedFilesSkipped > 0 ? [`  not copied:  ${summary.stagedFilesSkipped} staged upload files (short-lived: an upload in progress is retried)`] : []),
    '',
  ].join('\n');
}

export function registerStore(program: Command, io: CliIo, setExit: (code: number) => void): void {
  const store = program.command('store').description(COMMAND_SUMMARIES.store.description);
  store
    .command('copy')
    .description('copy everything of a store (tokens as their hashes, versions, archives verified, events, webhooks, accounts) into an empty one')
    .requiredOption('--from <dir|postgres-url>', 'the store to copy: an embedded store folder, or a postgres:// URL')
    .requiredOption('--to <dir|postgres-url>', 'the empty store to copy into: a folder (created), or a postgres:// URL (schema created)')
    .option('--storage-from <dir|s3-url>', "where the source's archives are: a folder or s3://bucket/prefix (default for a folder: the store folder; needed with a database)")
    .option('--storage-to <dir|s3-url>', "where the target's archives go: a folder or s3://bucket/prefix (default for a folder: the store folder; needed with a database)")
    .option('--s3-endpoint <url>', S3_ENDPOINT_OPTION)
    .option('--s3-force-path-style', S3_PATH_STYLE_OPTION)
    .option('--json', 'print the summary as one JSON document')
    .action(async (flags: CopyFlags) => {
      if (!isBucket(flags.storageFrom) && !isBucket(flags.storageTo)) {
        if (flags.s3Endpoint !== undefined) throw new UsageError('--s3-endpoint needs --storage-from or --storage-to s3://bucket/prefix');
        if (flags.s3ForcePathStyle) throw new UsageError('--s3-force-path-style needs --storage-from or --storage-to s3://bucket/prefix');
      }
      if (flags.s3Endpoint !== undefined && !isHttpUrl(flags.s3Endpoint)) throw new UsageError(`--s3-endpoint must be an http(s) URL (got "${flags.s3Endpoint}")`);
      const s3 = { ...(flags.s3Endpoint !== undefined ? { endpoint: flags.s3Endpoint } : {}), ...(flags.s3ForcePathStyle ? { forcePathStyle: true } : {}) };
      const sides: Side[] = [];
      const closers: (() => Promise<void>)[] = [];
      const hide = (text: string): string => sides.reduce((result, side) => withoutPassword(result, side.database), text);
      try {
        const from = await sideOf('source', flags.from, flags.storageFrom, s3);
        sides.push(from);
        const to = await sideOf('target', flags.to, flags.storageTo, s3);
        sides.push(to);
        const source = await open(from);
        closers.push(() => source.close());
        const target = await open(to);
        closers.push(() => target.close());
        io.stderr(`copying ${describeStorage(source.description)} -> ${describeStorage(target.description)}\n`);
        const summary = await copyStore(dumperFor(from, source), dumperFor(to, target), {
          // The target's bytes are in --storage-to when given, else in its store folder (--to).
          targetNames: { rows: to.flag, bytes: flags.storageTo !== undefined ? to.storageFlag : to.flag },
          onProgress: (progress) => {
            const line = progressLine(progress);
            if (line !== undefined) io.stderr(`${line}\n`);
          },
        });
        if (flags.json) io.stdout(`${JSON.stringify(summary, null, 2)}\n`);
        else io.stdout(summaryText(summary));
        setExit(EXIT.ok);
      } catch (error) {
        if (error instanceof UsageError) throw error;
        const message = error instanceof StoreCopyError ? `${error.code}: ${hide(error.message)}` : hide(errorMessage(error));
        io.stderr(`error: ${message}\n`);
        // The error document here (not the CLI's, made of every stderr line): the progress lines stay out of it.
        if (flags.json) io.stdout(`${JSON.stringify({ error: { exitCode: EXIT.failure, message } }, null, 2)}\n`);
        setExit(EXIT.failure);
      } finally {
        for (const close of closers.reverse()) await close().catch(() => undefined);
        for (const side of sides) if (side.scratch) await rm(side.scratch, { recursive: true, force: true });
      }
    });
  for (const command of store.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
}
