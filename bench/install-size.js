#!/usr/bin/env node
// What a user's `npm install` of each package costs (issue 25 item 13): both packages packed with
// npm pack, then each install made with npm into an empty folder: the consumer package alone
// (`npm install template-registry-<v>.tgz`), and the server beside it (both tarballs). Reports the
// on-disk size of node_modules, the number of packages, the packages that run a script or compile
// at install, and npm's EBADENGINE warnings on this Node. Targets: the consumer install at most
// 15 MB and 40 packages, with no compile step; on Node 20, no EBADENGINE warning.
// Prints one JSON document (scripts/bench-results.js writes it into bench/RESULTS.md). Needs the
// npm registry for the server's dependencies (INSTALL_SIZE_SERVER=0: the consumer only).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { installInto, measureInstall, packBoth } from '../scripts/packed-install.js';

const MB = 1000 * 1000;
const work = await mkdtemp(path.join(tmpdir(), 'install-size-'));
const rows = [];
const notes = [];

/** The packages an EBADENGINE warning names (npm prints `package: 'name@version'`). */
const enginePackages = (lines) => [...new Set(lines.map((line) => /package: '([^']+)'/.exec(line)?.[1]).filter(Boolean))];

try {
  const tarballs = await packBoth(path.join(work, 'tarballs'));
  const faces = [{ name: 'consumer', tarballs: [tarballs.consumer], targets: true }];
  if (process.env.INSTALL_SIZE_SERVER !== '0') faces.push({ name: 'server (both packages)', tarballs: [tarballs.consumer, tarballs.server], targets: false });
  for (const face of faces) {
    const dir = path.join(work, face.name.split(' ')[0]);
    const install = await installInto(dir, face.tarballs);
    const measured = await measureInstall(dir);
    const engines = enginePackages(install.ebadengine);
    const node20 = process.versions.node.startsWith('20.');
    rows.push(
      { name: `${face.name}: node_modules on disk`, value: Number((measured.bytes / MB).toFixed(1)), unit: 'MB', ...(face.targets ? { target: '<= 15 MB', met: measured.bytes <= 15 * MB } : {}) },
      { name: `${face.name}: packages`, value: measured.packages, unit: '', ...(face.targets ? { target: '<= 40', met: measured.packages <= 40 } : {}) },
      {
        name: `${face.name}: install scripts or compile steps`,
        value: measured.installScripts.length,
        unit: measured.installScripts.length ? `(${measured.installScripts.join('; ')})` : '',
        ...(face.targets ? { target: 'none', met: measured.installScripts.length === 0 && measured.nativeModules.length === 0 } : {}),
      },
      { name: `${face.name}: EBADENGINE warnings on Node ${process.versions.node}`, value: engines.length, unit: engines.length ? `(${engines.join(', ')})` : '', ...(face.targets && node20 ? { target: 'none on Node 20', met: engines.length === 0 } : {}) },
      { name: `${face.name}: npm install time`, value: Number((install.ms / 1000).toFixed(1)), unit: 's' },
    );
    if (measured.nativeModules.length) notes.push(`${face.name}: native modules ${measured.nativeModules.join(', ')}${/node-gyp|gyp info/.test(install.stdout + install.stderr) ? ' (compiled from source with node-gyp: no prebuilt binary could be downloaded)' : ' (a prebuilt binary, downloaded by its install script)'}.`);
  }
  for (const r of rows) if (r.met === false) notes.push(`${r.name}: target ${r.target} missed (${r.value} ${r.unit}).`);
  notes.push(
    'Sizes are allocated blocks on disk (du), MB = 10^6 bytes; packages = package folders under node_modules, nested ones included. npm install runs with --prefer-offline (a warm cache), so the time says little about a first install.',
    'The consumer package is one esbuild bundle (build/lib) with its dependencies inside: it installs nothing else. The server package keeps the web server, the database drivers, the AWS SDK and Octokit as dependencies (packages/server/package.json).',
  );
  console.log(
    JSON.stringify({
      title: 'Install size (`bench/install-size.js`)',
      setup: 'npm pack of both packages, npm install of the tarballs into an empty folder',
      rows,
      notes,
    }),
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
