// Reading and writing .tar.gz archives: tar and gzip (node:zlib is loaded with it): see core/lazy-packages.ts.
export { Pack, Parser } from 'tar';
export { createGunzip, createGzip } from 'node:zlib';
