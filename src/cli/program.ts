import { stripVTControlCharacters } from 'node:util';

import { Command, CommanderError, Help } from 'commander';

import { EXIT, UsageError, processIo, type CliIo } from './io.js';
import { colourEnabled } from './style.js';
import { cliVersion } from './version.js';
import { COMMAND_SUMMARIES, type CommandName } from './commands/summaries.js';
import { errorMessage } from '../core/errors.js';

import { ROOT_DESCRIPTION, NO_COLOR_HELP } from './root-help.js';
import { SERVER_GROUPS } from './server-groups.js';
import type { Register } from './faces.js';

/**
 * The command groups, in the order `--help` lists them, each loaded only when one of its commands
 * runs (so `--version`, or `validate`, does not load the server, SQLite or the prompts). The server
 * commands' groups come from server-groups.ts (the consumer package has none: see faces.ts).
 */
const GROUPS: readonly { commands: readonly string[]; load: () => Promise<Register> }[] = [
  { commands: ['init'], load: async () => (await import('./commands/init.js')).registerInit },
  { commands: ['validate'], load: async () => (await import('./commands/validate.js')).registerValidate },
  { commands: ['generate'], load: async () => (await import('./commands/generate.js')).registerGenerate },
  { commands: ['test'], load: async () => (await import('./commands/test.js')).registerTest },
  { commands: ['lint'], load: async () => (await import('./commands/lint.js')).registerLint },
  { commands: ['pack'], load: async () => (await import('./commands/pack.js')).registerPack },
  { commands: ['publish'], load: async () => (await import('./commands/publish.js')).registerPublish },
  { commands: ['deprecate', 'yank', 'owner'], load: async () => (await import('./commands/lifecycle.js')).registerLifecycle },
  { commands: ['trust'], load: async () => (await import('./commands/trust.js')).registerTrust },
  { commands: ['serve', 'token'], load: SERVER_GROUPS.serve },
  { commands: ['list', 'search', 'info', 'create'], load: async () => (await import('./commands/consumer.js')).registerConsumer },
  { commands: ['migrate'], load: async () => (await import('./commands/migrate.js')).registerMigrate },
  { commands: ['check-compat'], load: async () => (await import('./commands/consumer.js')).registerCheckCompat },
  { commands: ['user'], load: SERVER_GROUPS.user },
  { commands: ['update', 'check-update'], load: async () => (await import('./commands/update.js')).registerUpdate },
  { commands: ['build-registry'], load: SERVER_GROUPS['build-registry'] },
  { commands: ['mirror'], load: SERVER_GROUPS.mirror },
  { commands: ['store'], load: SERVER_GROUPS.store },
  { commands: ['db'], load: SERVER_GROUPS.db },
];

/**
 * The groups `argv` needs: none for the CLI's own `--version`, the one holding the command named
 * first, and all of them for help or anything else (commander then lists or suggests commands).
 */
export function groupsFor(argv: readonly string[]): typeof GROUPS {
  const first = argv[0];
  if (first === '-V' || first === '--version') return [];
  const group = GROUPS.find((candidate) => first !== undefined && candidate.commands.includes(first));
  return group ? [group] : GROUPS;
}

/** Whether `argv` asks only for the CLI's own help: then the commands are listed from their summaries, none loaded. */
function onlyRootHelp(argv: readonly string[]): boolean {
  return argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h');
}

/** Adds every command as its summary (name and description, listed with its usage): enough for the root --help. */
function addSummaries(program: Command): void {
  for (const [name, summary] of Object.entries(COMMAND_SUMMARIES)) program.command(name).description(summary.description);
}

/** Lists each command with the usage its summary gives (the same as its own: root-help.test.ts; also for a server command the consumer package does not hold). */
function summaryTerms(program: Command): void {
  program.configureHelp({
    subcommandTerm(this: Help, command: Command): string {
      const summary = COMMAND_SUMMARIES[command.name() as CommandName] as { term: string } | undefined;
      return summary ? summary.term : Help.prototype.subcommandTerm.call(this, command);
    },
  });
}

async function buildProgram(argv: readonly string[], io: CliIo, setExit: (code: number) => void): Promise<Command> {
  const program = new Command('template-registry')
    .description(ROOT_DESCRIPTION)
    .version(cliVersion())
    // Taken out of argv by runCli wherever it stands; declared here for --help.
    .option('--no-color', NO_COLOR_HELP)
    .exitOverride()
    // Root options only before the command, so `pack --version 1.2.3` is pack's, not the CLI's own --version.
    .enablePositionalOptions()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(run with --help for usage)');
  summaryTerms(program);
  if (onlyRootHelp(argv)) addSummaries(program);
  else for (const group of groupsFor(argv)) (await group.load())(program, io, setExit);
  for (const command of program.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  return program;
}

/** The arguments before `--` (after it everything is an operand). */
function optionPart(argv: readonly string[]): readonly string[] {
  const end = argv.indexOf('--');
  return end === -1 ? argv : argv.slice(0, end);
}

/**
 * `--no-color` is global: accepted before or after the command's name (commander would see it
 * only before, as root options are positional), and taken out before commander parses.
 */
function withoutNoColor(argv: readonly string[]): { argv: string[]; noColor: boolean } {
  const options = optionPart(argv);
  const kept = options.filter((arg) => arg !== '--no-color');
  return { argv: [...kept, ...argv.slice(options.length)], noColor: kept.length !== options.length };
}

/**
 * What a failed `--json` run prints on stdout when the command printed nothing there: the error
 * lines it wrote on stderr (warnings, progress and the usage hint left out), as one JSON document.
 */
function jsonError(exitCode: number, stderrText: string): string {
  const lines = stripVTControlCharacters(stderrText)
    .split('\n')
    .map((line) => (line.split('\r').pop() ?? '').trim())
    .filter((line) => line !== '' && !line.startsWith('warning:') && !line.startsWith('(run with --help'))
    .map((line) => line.replace(/^error: /, ''));
  return `${JSON.stringify({ error: { exitCode, message: lines.join('\n') || `exit code ${exitCode}` } }, null, 2)}\n`;
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code:
 * 0 success, 1 the command's check failed, 2 a usage error.
 *
 * With `--json`, stdout holds exactly one JSON document: the command's result, or, when the
 * command fails before it has one, `{ "error": { "exitCode", "message" } }` (the message is
 * also on stderr, as without --json).
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const { argv: args, noColor } = withoutNoColor(argv);
  const json = optionPart(args).includes('--json');
  const env = io.env ?? process.env;
  const tty = io.isTTY ?? {};
  let wroteStdout = false;
  let stderrText = '';
  const runIo: CliIo = {
    stdout: (text) => {
      if (text !== '') wroteStdout = true;
      io.stdout(text);
    },
    stderr: (text) => {
      if (json) stderrText += text;
      io.stderr(text);
    },
    isTTY: tty,
    env,
    colour: { stdout: colourEnabled(tty.stdout, env, noColor), stderr: colourEnabled(tty.stderr, env, noColor) },
    ...(io.readStdin ? { readStdin: io.readStdin } : {}),
  };
  const exitCode = await run(args, runIo);
  if (json && exitCode !== EXIT.ok && !wroteStdout) io.stdout(jsonError(exitCode, stderrText));
  return exitCode;
}

async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode: number = EXIT.ok;
  try {
    const program = await buildProgram(argv, io, (code) => {
      exitCode = code;
    });
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end through here with code 0.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (error instanceof UsageError) {
      io.stderr(`error: ${error.message}\n`);
      return error.exitCode;
    }
    io.stderr(`error: ${errorMessage(error)}\n`);
    return EXIT.failure;
  }
}
