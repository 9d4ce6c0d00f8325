/**
 * template-registry: the public library API. The CLI (`template-registry`) and the two actions
 * are thin shells over it.
 */
export * from './core/index.js';
export * from './template/index.js';
export * from './pack/index.js';
export * from './publish/index.js';
export * from './registry/index.js';
export * from './server/index.js';
export * from './action/api.js';
export { runCli } from './cli/index.js';
export * from './migrate/index.js';
export * from './compat/index.js';
export * from './client/index.js';
