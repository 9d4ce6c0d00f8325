// Subresource Integrity strings and hashing (ssri): loaded on first use through ./ssri.load.ts.
export { create, parse } from 'ssri';
