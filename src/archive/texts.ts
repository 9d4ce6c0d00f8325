/**
 * A few text files read out of a template archive (a gzip tar) without unpacking it: what the
 * catalog shows of a template (its README, questions and change log). The archive comes from a
 * stranger, so every read is bounded: the unpacked bytes (the archive limits of scan.ts), the bytes
 * kept of each file, and the entries looked at; reading stops once every file asked for is found.
 */
import type { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import type { ReadEntry } from 'tar';

import { loadTar } from '../core/lazy/tar.load.js';
import { DEFAULT_ARCHIVE_LIMITS, normaliseEntryPath, UnsafeArchiveError } from './scan.js';

export interface ArchiveTextLimits {
  /** The most bytes kept of one file: the rest is left out (`cut`). */
  maxFileBytes: number;
  /** The most bytes the archive is unpacked to before reading stops with an error. */
  maxUnpackedBytes: number;
  /** The most entries looked at. */
  maxEntries: number;
}

const DEFAULT_ARCHIVE_TEXT_LIMITS: ArchiveTextLimits = {
  maxFileBytes: 256 * 1024,
  maxUnpackedBytes: DEFAULT_ARCHIVE_LIMITS.maxUnpackedBytes,
  maxEntries: DEFAULT_ARCHIVE_LIMITS.maxEntries,
};

/** One file read: its text (UTF-8) and whether it was longer than the bytes kept. */
export interface ArchiveText {
  text: string;
  cut: boolean;
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** Stops the pipeline once every file asked for is read (not a failure). */
class Done extends Error {}

/**
 * The files of `names` (paths relative to the template's root, matched without regard to case,
 * whether the archive holds them at its root or, when it has no file at its root, under one top
 * folder such as `package/`) that the archive `stream` holds, by the name asked for.
 */
export async function readArchiveTexts(stream: Readable, names: readonly string[], limits: Partial<ArchiveTextLimits> = {}): Promise<Map<string, ArchiveText>> {
  const { maxFileBytes, maxUnpackedBytes, maxEntries } = { ...DEFAULT_ARCHIVE_TEXT_LIMITS, ...limits };
  const wanted = new Map(names.map((name) => [name.toLowerCase(), name]));
  const found = new Map<string, { text: ArchiveText; depth: number }>();
  let entries = 0;
  /** Whether a file sits at the archive's root: then nothing is under a top folder to strip. */
  let fileAtRoot = false;
  let unpacked = 0;
  let pending = 0;

  const nameOf = (path: string): { name: string; depth: number } | undefined => {
    const lower = path.toLowerCase();
    const atRoot = wanted.get(lower);
    if (atRoot !== undefined) return { name: atRoot, depth: 0 };
    const slash = lower.indexOf('/');
    const underTop = slash > 0 ? wanted.get(lower.slice(slash + 1)) : undefined;
    return underTop === undefined ? undefined : { name: underTop, depth: 1 };
  };
  const complete = (): boolean => pending === 0 && [...wanted.values()].every((name) => found.get(name)?.depth === 0);

  let stop: (error: Error) => void = () => undefined;
  const { Parser, createGunzip } = loadTar();
  const parser = new Parser({
    onReadEntry: (entry: ReadEntry) => {
      if (++entries > maxEntries) return stop(new UnsafeArchiveError(`the archive has more than ${maxEntries} entries`));
      const path = normaliseEntryPath(entry.path);
      if (FILE_TYPES.has(entry.type) && !path.includes('/')) fileAtRoot = true;
      const target = FILE_TYPES.has(entry.type) ? nameOf(path) : undefined;
      const known = target ? found.get(target.name) : undefined;
      if (!target || (known && known.depth <= target.depth)) {
        entry.resume();
        return;
      }
      const chunks: Buffer[] = [];
      let kept = 0;
      let cut = false;
      pending++;
      entry.on('data', (chunk: Buffer) => {
        const room = maxFileBytes - kept;
        if (chunk.length > room) cut = true;
        if (room > 0) chunks.push(room >= chunk.length ? chunk : chunk.subarray(0, room));
        kept += Math.min(room, chunk.length);
      });
      entry.on('end', () => {
        pending--;
        found.set(target.name, { text: { text: Buffer.concat(chunks).toString('utf8'), cut }, depth: target.depth });
        if (complete()) stop(new Done());
      });
    },
  });
  const counter = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      unpacked += chunk.length;
      if (unpacked > maxUnpackedBytes) return callback(new UnsafeArchiveError(`the archive unpacks to more than ${maxUnpackedBytes} bytes`));
      parser.write(chunk);
      callback();
    },
    final(callback) {
      parser.end();
      callback();
    },
  });
  stop = (error) => counter.destroy(error);

  try {
    await pipeline(stream, createGunzip(), counter);
  } catch (error) {
    if (!(error instanceof Done)) {
      if (error instanceof UnsafeArchiveError) throw error;
      throw new UnsafeArchiveError(`not a gzip-compressed tar archive (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  // `docs/README.md` of an archive with files at its root is not its README.
  return new Map([...found].filter(([, { depth }]) => depth === 0 || !fileAtRoot).map(([name, { text }]) => [name, text]));
}
