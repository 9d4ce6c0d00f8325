/**
 * template-registry: the public library API. The CLI (`template-registry`) is a thin shell over it.
 */
export * from './manifest/index.js';
export * from './template/index.js';
export { runCli } from './cli/index.js';
