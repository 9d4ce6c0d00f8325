export { runCli } from './program.js';
export { EXIT, UsageError, type CliIo } from './io.js';

import { runCli } from './program.js';

/** The bin's entry: runs the CLI on this process's arguments and streams. */
export async function main(argv: readonly string[]): Promise<number> {
  return runCli(argv);
}
