/**
 * Who made a temp file, and whether that process still runs. Every temp name the project makes
 * (`tempPathBeside`, `ownedTempName`) carries its process's id and an owner key: a digest of the
 * machine and pid namespace it runs in (boot id, pid namespace, host name) and a digest of the
 * process itself (its pid and start time). A start can then remove at once the temp files of a
 * process that was killed, while never touching those of a process that still runs, even one that
 * shares the folder (two servers on one public folder or one folder blob store):
 *
 * - `mine`: this process's;
 * - `live`: a process of the same machine and pid namespace with that pid and start time runs;
 * - `dead`: same machine and pid namespace, and no such process (gone, or its pid now another's);
 * - `foreign`: another machine or namespace (its processes cannot be seen from here): only its age
 *   can tell (the caller's grace period);
 * - `legacy`: a name without an owner key (made by a release before them, or not a temp name of
 *   this project): as the caller treated such names before.
 *
 * Where processes cannot be inspected (no /proc), a pid that exists counts as live.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

const NAMESPACE_HEX = 8;
const PROCESS_HEX = 8;
const RANDOM_HEX = 12;
/** The hex of a temp name: owner key (namespace, process), then a random part. */
const OWNED_TEMP_HEX = NAMESPACE_HEX + PROCESS_HEX + RANDOM_HEX;

export type TempOwnerState = 'mine' | 'live' | 'dead' | 'foreign' | 'legacy';

const digest = (text: string, hex: number): string => createHash('sha256').update(text).digest('hex').slice(0, hex);

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22); undefined without /proc or such a process. */
function startTimeOf(pid: number): string | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19];
}

interface Self {
  namespace: string;
  process: string;
  /** Processes of this machine can be inspected through /proc. */
  inspectable: boolean;
}

let self: Self | undefined;

function processKey(namespace: string, pid: number, start: string): string {
  return digest(`${namespace}\n${pid}\n${start}`, PROCESS_HEX);
}

function selfOwner(): Self {
  if (self) return self;
  const start = startTimeOf(process.pid);
  let pidNamespace = '';
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid');
  } catch {
    // no /proc: the host name stands for the machine
  }
  const bootId = readText('/proc/sys/kernel/random/boot_id') ?? '';
  const namespace = digest(`${bootId}\n${pidNamespace}\n${hostname()}\n${start === undefined ? 'no-proc' : 'proc'}`, NAMESPACE_HEX);
  // Without /proc the start time is this process's own idea of it; only the pid is checked then.
  const processStart = start ?? String(Math.round(Date.now() - process.uptime() * 1000));
  self = { namespace, process: processKey(namespace, process.pid, processStart), inspectable: start !== undefined };
  return self;
}

/** `<pid>.<owner key><random>`: the part of a temp name that says who made it, unique per call. */
export function ownedTempTag(): string {
  const owner = selfOwner();
  return `${process.pid}.${owner.namespace}${owner.process}${randomBytes(RANDOM_HEX / 2).toString('hex')}`;
}

/** Whether a process with this pid exists (EPERM: it does, another user's). */
function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The state of the process that made a temp name holding `pid` and `hex` (the hex after the pid). */
function tempOwnerState(pid: number, hex: string): TempOwnerState {
  if (hex.length !== OWNED_TEMP_HEX || !Number.isSafeInteger(pid) || pid <= 0) return 'legacy';
  const owner = selfOwner();
  const namespace = hex.slice(0, NAMESPACE_HEX);
  const key = hex.slice(NAMESPACE_HEX, NAMESPACE_HEX + PROCESS_HEX);
  if (namespace !== owner.namespace) return 'foreign';
  if (pid === process.pid && key === owner.process) return 'mine';
  if (!owner.inspectable) return pidExists(pid) ? 'live' : 'dead';
  const start = startTimeOf(pid);
  return start !== undefined && processKey(namespace, pid, start) === key ? 'live' : 'dead';
}

/** `<pid>.<hex>` anywhere in a temp name: the pid and the hex of the last such pair. */
const TAG = /\.(\d+)\.([0-9a-f]+)(?:\.tmp)?$|^(\d+)\.([0-9a-f]+)(?:[.-]|$)/;

/** The owner state of a temp name made by `tempPathBeside` or `ownedTempName`; `legacy` for any other name. */
export function tempNameOwner(name: string): TempOwnerState {
  const match = TAG.exec(name);
  if (!match) return 'legacy';
  const pid = Number(match[1] ?? match[3]);
  const hex = match[2] ?? match[4] ?? '';
  return tempOwnerState(pid, hex);
}
