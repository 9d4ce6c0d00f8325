export { runCli } from './program.js';
export { EXIT, UsageError, type CliIo } from './io.js';

import { EXIT, quietOnClosedPipes } from './io.js';
import { runCli } from './program.js';

/** The bin's entry: runs the CLI on this process's arguments and streams (a reader that closes early ends it quietly, status 0). */
export async function main(argv: readonly string[]): Promise<number> {
  const readerClosed = quietOnClosedPipes();
  const code = await runCli(argv);
  return readerClosed() ? EXIT.ok : code;
}
