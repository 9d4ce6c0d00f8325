export * from './pack.js';
export * from './publish.js';
