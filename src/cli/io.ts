/** Where a command writes; tests pass their own to capture output. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Whether each stream is a terminal (unset: not; tests pass a fake terminal here). */
  isTTY?: { stdout?: boolean; stderr?: boolean };
  /** The environment read for colour (`NO_COLOR`, `FORCE_COLOR`, `TERM`); default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Whether each stream may be coloured: set by `runCli` (see style.ts), read through `stdoutStyle`/`stderrStyle`. */
  colour?: { stdout: boolean; stderr: boolean };
  /** All of standard input as text (for `--password-stdin`); unset: none. */
  readStdin?: () => Promise<string>;
}

/** Standard input is read whole only when a flag asks for it; bounded, as anything a command reads. */
const MAX_STDIN_BYTES = 64 * 1024;

async function readProcessStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += bytes.length;
    if (size > MAX_STDIN_BYTES) throw new UsageError(`standard input is larger than ${MAX_STDIN_BYTES} bytes`);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The standard streams whose reader went away (EPIPE): what is written to them after that is dropped. */
const closedStreams = new Set<'stdout' | 'stderr'>();

/** Writes `text` to a standard stream, unless its reader closed it. */
function writeStandard(name: 'stdout' | 'stderr', text: string): void {
  if (!closedStreams.has(name)) process[name].write(text);
}

/**
 * Makes a reader that closes early (`template-registry lint | head -1`) end the command quietly, as
 * it ends `cat` or `git log`: the broken pipe (EPIPE) is not an error with a stack trace, what the
 * command still writes there is dropped, and the exit status is 0. The command itself runs to its
 * end (an update is not cut off half-way through its writes). Returns whether a reader went away.
 */
export function quietOnClosedPipes(): () => boolean {
  for (const name of ['stdout', 'stderr'] as const) {
    process[name].on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
      closedStreams.add(name);
      process.exitCode = EXIT.ok;
    });
  }
  return () => closedStreams.size > 0;
}

export const processIo: CliIo = {
  stdout: (text) => writeStandard('stdout', text),
  stderr: (text) => writeStandard('stderr', text),
  get isTTY() {
    return { stdout: process.stdout.isTTY === true, stderr: process.stderr.isTTY === true };
  },
  readStdin: readProcessStdin,
};

/** Exit codes shared by every command. */
export const EXIT = { ok: 0, failure: 1, usage: 2, cancelled: 130 } as const;

/** A failure the user caused (bad argument, missing file): printed without a stack trace. */
export class UsageError extends Error {
  readonly exitCode: number = EXIT.usage;
}

/**
 * `value` when it is one of `allowed`; else a usage error naming the flag and every allowed value
 * (for values known only at run time: commander's `.choices()` covers those known up front).
 */
export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
}
