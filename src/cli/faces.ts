/**
 * The two packages the CLI ships in (see ARCHITECTURE.md, "Package faces"): the consumer package
 * `template-registry` holds the commands that read, write and publish templates; the commands that
 * run or build a registry (a web server, a database driver, the AWS SDK, Octokit) come with
 * `template-registry-server`. Only type imports here: the CLI's entry reads this before loading anything else.
 */

import type { Command } from 'commander';

import type { CliIo } from './io.js';

/** Adds a group of commands to the program. */
export type Register = (program: Command, io: CliIo, setExit: (code: number) => void) => void;

/** A CLI that runs every command, the server's included (the server package's, or this repository's build). */
export interface ServerCli {
  runCli(argv: readonly string[], io?: CliIo): Promise<number>;
}

/**
 * What server-groups.ts gives the CLI: the server command groups, loaded in this process (the full
 * CLI), or, in the consumer package, none, and where the full CLI is found (server-groups-elsewhere.ts,
 * put in its place when the consumer package is bundled: scripts/package-bundles.js).
 */
export interface ServerFace {
  readonly SERVER_GROUPS: Readonly<Record<'serve' | 'user' | 'build-registry' | 'mirror' | 'store' | 'db', () => Promise<Register>>>;
  /** The full CLI to hand a server command to: 'here' when this process runs them itself, undefined when it is not installed. */
  loadServerCli(): Promise<ServerCli | 'here' | undefined>;
}

/** The npm package that holds the server commands. */
export const SERVER_PACKAGE = 'template-registry-server';

/** The commands that need the server package: they open a store, run the server or write a registry. */
export const SERVER_COMMANDS: readonly string[] = ['serve', 'token', 'user', 'build-registry', 'mirror', 'store', 'db'];

/** Whether `argv` (without `node` and the script) runs a server command. */
export function isServerCommand(argv: readonly string[]): boolean {
  const first = argv.find((arg) => arg !== '--no-color');
  return first !== undefined && SERVER_COMMANDS.includes(first);
}

/** What the CLI prints when a server command runs where the server package is not installed. */
export function serverPackageMissing(command: string): string {
  return (
    `\`${command}\` comes with the ${SERVER_PACKAGE} package, which is not installed beside template-registry.\n` +
    `Install it next to the CLI, in the same version:\n` +
    `  npm install --global ${SERVER_PACKAGE}    (when template-registry was installed with --global)\n` +
    `  npm install ${SERVER_PACKAGE}             (in the project that has template-registry)\n`
  );
}
