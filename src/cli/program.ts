import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Command, CommanderError } from 'commander';

import { registerGenerate } from './commands/generate.js';
import { registerLint } from './commands/lint.js';
import { registerPack } from './commands/pack.js';
import { registerPublish } from './commands/publish.js';
import { registerServe, registerToken } from './commands/serve.js';
import { registerBuildRegistry } from './commands/build-registry.js';
import { registerConsumer } from './commands/consumer.js';
import { RegistryStore, storeSource } from '../server/store.js';
import { registerTest } from './commands/test.js';
import { registerValidate } from './commands/validate.js';
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

function buildProgram(io: CliIo, setExit: (code: number) => void): Command {
  const program = new Command('template-registry')
    .description('Publish, find, generate from and upgrade versioned project templates.')
    .version(VERSION)
    .exitOverride()
    // Root options only before the command, so `pack --version 1.2.3` is pack's, not the CLI's own --version.
    .enablePositionalOptions()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(run with --help for usage)');
  registerValidate(program, io, setExit);
  registerGenerate(program, io, setExit);
  registerTest(program, io, setExit);
  registerLint(program, io, setExit);
  registerPack(program, io, setExit);
  registerPublish(program, io, setExit);
  registerServe(program, io, setExit);
  registerToken(program, io, setExit);
  registerConsumer(program, io, setExit);
  registerBuildRegistry(program, io, setExit, {
    storeSource: async (storeDir, publicUrl) => storeSource(await RegistryStore.open(storeDir), publicUrl ?? process.env.REGISTRY_PUBLIC_URL ?? 'http://127.0.0.1:4873'),
  });
  for (const command of program.commands) command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  return program;
}

/**
 * Runs the CLI with `argv` (without `node` and the script) and resolves to the exit code:
 * 0 success, 1 the command's check failed, 2 a usage error.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  let exitCode: number = EXIT.ok;
  const program = buildProgram(io, (code) => {
    exitCode = code;
  });
  try {
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
