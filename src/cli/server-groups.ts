import type { Register, ServerCli, ServerFace } from './faces.js';

/**
 * The server commands of the full CLI (this repository, the server package), each group loaded only
 * when one of its commands runs. The consumer package is bundled with server-groups-elsewhere.ts in
 * this module's place, so none of these modules (fastify, SQLite, PostgreSQL, the AWS SDK, Octokit)
 * is in it.
 */
export const SERVER_GROUPS: ServerFace['SERVER_GROUPS'] = {
  serve: async (): Promise<Register> => {
    const { registerServe, registerToken } = await import('./commands/serve.js');
    return (program, io, setExit) => {
      registerServe(program, io, setExit);
      registerToken(program, io, setExit);
    };
  },
  user: async () => (await import('./commands/user.js')).registerUser,
  'build-registry': async () => (await import('./commands/build-registry.js')).registerBuildRegistry,
  mirror: async () => (await import('./commands/mirror.js')).registerMirror,
  store: async () => (await import('./commands/store.js')).registerStore,
  db: async () => (await import('./commands/db.js')).registerDb,
};

/** This process runs the server commands itself. */
export function loadServerCli(): Promise<ServerCli | 'here' | undefined> {
  return Promise.resolve('here');
}
