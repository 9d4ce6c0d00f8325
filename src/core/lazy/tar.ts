// Reading and writing .tar.gz archives: tar and gzip (node:zlib is loaded with it): loaded on first use through ./tar.load.ts.
export { Pack, Parser } from 'tar';
export { createGunzip, createGzip } from 'node:zlib';
