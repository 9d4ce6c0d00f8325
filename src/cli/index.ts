export { EXIT, UsageError, type CliIo } from './io.js';

import { EXIT, processIo, quietOnClosedPipes, type CliIo } from './io.js';
import { cliVersion } from './version.js';

/** Whether `argv` asks only for the CLI's own version (then no parser or command is loaded). */
function onlyVersion(argv: readonly string[]): boolean {
  return argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V');
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code; see
 * program.ts. The command parser and the commands are loaded only when something beyond
 * `--version` is asked.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  if (onlyVersion(argv)) {
    io.stdout(`${cliVersion()}\n`);
    return EXIT.ok;
  }
  return (await import('./program.js')).runCli(argv, io);
}

/** The bin's entry: runs the CLI on this process's arguments and streams (a reader that closes early ends it quietly, status 0). */
export async function main(argv: readonly string[]): Promise<number> {
  const readerClosed = quietOnClosedPipes();
  const code = await runCli(argv);
  return readerClosed() ? EXIT.ok : code;
}
