import { EXIT, UsageError } from './io.js';
import { COMMAND_SUMMARIES } from './commands/summaries.js';
import { SERVER_PACKAGE, serverPackageMissing, type Register, type ServerCli, type ServerFace } from './faces.js';

/**
 * server-groups.ts as the consumer package is bundled (scripts/package-bundles.js puts this module
 * in its place): the server commands are not in this package. A server command is handed to the
 * full CLI: this repository's own build when the bundle runs from a checkout, else the
 * `template-registry-server` package installed beside this one, else the command fails naming the
 * package to install.
 */

/** Where the full CLI is looked for, in order (the first is relative to the bundle, build/lib/). */
const FULL_CLI_LOCATIONS = [new URL('../src/cli/program.js', import.meta.url).href, `${SERVER_PACKAGE}/cli`];

/** A server command without the server package: listed by `help`, failing with what to install. */
function absent(commands: readonly (keyof typeof COMMAND_SUMMARIES)[]): () => Promise<Register> {
  return () =>
    Promise.resolve((program) => {
      for (const name of commands) {
        program
          .command(name)
          .description(COMMAND_SUMMARIES[name].description)
          .allowUnknownOption()
          .allowExcessArguments()
          .helpOption(false)
          .action(() => {
            throw Object.assign(new UsageError(serverPackageMissing(name).trimEnd()), { exitCode: EXIT.failure });
          });
      }
    });
}

export const SERVER_GROUPS: ServerFace['SERVER_GROUPS'] = {
  serve: absent(['serve', 'token']),
  user: absent(['user']),
  'build-registry': absent(['build-registry']),
  mirror: absent(['mirror']),
  store: absent(['store']),
  db: absent(['db']),
};

/** Whether `error` says `location` itself is missing (not a module it imports). */
function isMissing(error: unknown, location: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') return false;
  const message = String((error as { message?: unknown }).message);
  return location.startsWith('file:') ? message.includes(new URL(location).pathname) : message.includes(`'${SERVER_PACKAGE}'`);
}

/** The full CLI (see above); undefined when neither is installed. */
export async function loadServerCli(): Promise<ServerCli | 'here' | undefined> {
  for (const location of FULL_CLI_LOCATIONS) {
    try {
      return (await import(location)) as ServerCli;
    } catch (error) {
      if (!isMissing(error, location)) throw error;
    }
  }
  return undefined;
}
