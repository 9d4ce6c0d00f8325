/**
 * Temp names of a process that is gone, made in-process: a test that simulates a crash by closing
 * and reopening a store in one process needs the temp files of the "crashed" instance to name a
 * dead owner (core/temp-owner.ts), as those of a killed process do.
 */
import path from 'node:path';

import { tempNameOwner } from '../../src/core/temp-owner.js';

/**
 * `file` (a name made by this process: `ownedTempName` or `tempPathBeside`) renamed as if made by a
 * process with this pid that started at another time: one that is gone, as after a restart that
 * reused the pid.
 */
export function asKilledProcess(file: string): string {
  const name = path.basename(file);
  for (const key of ['00000000', '11111111']) {
    const other = name.replace(new RegExp(`(^|\\.)(${process.pid})\\.([0-9a-f]{8})[0-9a-f]{8}([0-9a-f]{12})`), `$1$2.$3${key}$4`);
    if (other !== name && tempNameOwner(other) === 'dead') return path.join(path.dirname(file), other);
  }
  throw new Error(`${file} is not a temp name of this process`);
}
