/** Where a command writes; tests pass their own to capture output. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** Exit codes shared by every command. */
export const EXIT = { ok: 0, failure: 1, usage: 2, cancelled: 130 } as const;

/** A failure the user caused (bad argument, missing file): printed without a stack trace. */
export class UsageError extends Error {
  readonly exitCode: number = EXIT.usage;
}
