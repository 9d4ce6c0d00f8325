import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Command, CommanderError } from 'commander';

import { EXIT, UsageError, processIo, type CliIo } from './io.js';
import { errorMessage } from '../core/errors.js';

/** This package's version, from the nearest package.json named template-registry above this file. */
function packageVersion(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'template-registry' && pkg.version) return pkg.version;
    } catch {
      // no package.json here; keep climbing
    }
    if (path.dirname(dir) === dir) return '0.0.0';
  }
}

const VERSION = packageVersion();

type SetExit = (code: number) => void;
/** Adds a group of commands to the program. */
type Register = (program: Command, io: CliIo, setExit: SetExit) => void;

/**
 * The command groups, in the order `--help` lists them, each loaded only when one of its commands
 * runs (so `--version`, or `validate`, does not load the server, SQLite or the prompts).
 */
const GROUPS: readonly { commands: readonly string[]; load: () => Promise<Register> }[] = [
  { commands: ['init'], load: async () => (await import('./commands/init.js')).registerInit },
  { commands: ['validate'], load: async () => (await import('./commands/validate.js')).registerValidate },
  { commands: ['generate'], load: async () => (await import('./commands/generate.js')).registerGenerate },
  { commands: ['test'], load: async () => (await import('./commands/test.js')).registerTest },
  { commands: ['lint'], load: async () => (await import('./commands/lint.js')).registerLint },
  { commands: ['pack'], load: async () => (await import('./commands/pack.js')).registerPack },
  { commands: ['publish'], load: async () => (await import('./commands/publish.js')).registerPublish },
  {
    commands: ['serve', 'token'],
    load: async () => {
      const { registerServe, registerToken } = await import('./commands/serve.js');
      return (program, io, setExit) => {
        registerServe(program, io, setExit);
        registerToken(program, io, setExit);
      };
    },
  },
  {
    commands: ['list', 'search', 'info', 'create', 'migrate', 'check-compat'],
    load: async () => (await import('./commands/consumer.js')).registerConsumer,
  },
  { commands: ['build-registry'], load: async () => (await import('./commands/build-registry.js')).registerBuildRegistry },
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

async function buildProgram(argv: readonly string[], io: CliIo, setExit: SetExit): Promise<Command> {
  const program = new Command('template-registry')
    .description('Publish, find, generate from and upgrade versioned project templates.')
    .version(VERSION)
    .exitOverride()
    // Root options only before the command, so `pack --version 1.2.3` is pack's, not the CLI's own --version.
    .enablePositionalOptions()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(run with --help for usage)');
  for (const group of groupsFor(argv)) (await group.load())(program, io, setExit);
  for (const command of program.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  return program;
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code:
 * 0 success, 1 the command's check failed, 2 a usage error.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
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
