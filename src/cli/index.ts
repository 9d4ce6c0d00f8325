export { EXIT, UsageError, type CliIo } from './io.js';

import { EXIT, processIo, quietOnClosedPipes, type CliIo } from './io.js';
import { cliVersion } from './version.js';
import { isServerCommand, serverPackageMissing } from './faces.js';
import { rootHelp } from './root-help.js';

/** Whether `argv` asks only for the CLI's own version (then no parser or command is loaded). */
function onlyVersion(argv: readonly string[]): boolean {
  return argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V');
}

/** Whether `argv` asks only for the CLI's own help (then the commands are listed from their summaries, no parser loaded). */
function onlyHelp(argv: readonly string[]): boolean {
  return argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h');
}

/** The width commander wraps help to: the terminal's, else 80. */
function helpWidth(io: CliIo): number {
  return io === processIo && process.stdout.isTTY ? process.stdout.columns : 80;
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code; see
 * program.ts. The command parser and the commands are loaded only when something beyond
 * `--version` or `--help` is asked. A server command runs where the server commands are
 * (server-groups.ts): here, or handed to the full CLI of the server package, or, without it, exit 1
 * naming the package to install.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  if (onlyVersion(argv)) {
    io.stdout(`${cliVersion()}\n`);
    return EXIT.ok;
  }
  if (onlyHelp(argv)) {
    io.stdout(rootHelp(helpWidth(io)));
    return EXIT.ok;
  }
  if (isServerCommand(argv)) {
    const server = await (await import('./server-groups.js')).loadServerCli();
    if (server === undefined) {
      io.stderr(`error: ${serverPackageMissing(argv.find((arg) => arg !== '--no-color') ?? '')}`);
      return EXIT.failure;
    }
    if (server !== 'here') return server.runCli(argv, io);
  }
  return (await import('./program.js')).runCli(argv, io);
}

/** The bin's entry: runs the CLI on this process's arguments and streams (a reader that closes early ends it quietly, status 0). */
export async function main(argv: readonly string[]): Promise<number> {
  const readerClosed = quietOnClosedPipes();
  const code = await runCli(argv);
  return readerClosed() ? EXIT.ok : code;
}
