/** The file writer thread's worker (file-writer-thread.ts): small files with blocking calls, a batch per message. */
import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

import type { FileWrite, FileWriteAnswer, FileWriteJob, FileWritten } from './file-writer-thread.js';

function write(file: FileWrite): number {
  const fd = openSync(file.path, 'wx');
  try {
    let mtimeMs: number;
    try {
      for (let offset = 0; offset < file.data.length; ) offset += writeSync(fd, file.data, offset, file.data.length - offset);
      mtimeMs = fstatSync(fd).mtimeMs;
    } finally {
      closeSync(fd);
    }
    if (file.renameTo !== undefined) renameSync(file.path, file.renameTo);
    return mtimeMs;
  } catch (error) {
    rmSync(file.path, { force: true });
    throw error;
  }
}

function outcome(file: FileWrite): FileWritten {
  try {
    return { mtimeMs: write(file) };
  } catch (error) {
    const { message, code } = error as NodeJS.ErrnoException;
    return { error: message ?? String(error), ...(code === undefined ? {} : { code }) };
  }
}

const port = parentPort;
port?.on('message', (job: FileWriteJob) => {
  port.postMessage({ id: job.id, written: job.files.map(outcome) } satisfies FileWriteAnswer);
});
