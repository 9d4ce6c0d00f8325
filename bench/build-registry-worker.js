// One measurement of bench/build-registry.js, in a process of its own so that its peak RSS is its own.
// argv: <mode> <storeDir> <outDir> [<extra>]
//   floor            JSON.parse registry.json (not timed), then time JSON.stringify + write of the same bytes
//   full             build from the store into an empty outDir (static layout: archives published)
//   full-server      build from the store with the server's layout (archives served by the server)
//   rebuild-server   build once, add one version to the store, time the second build of the same builder
//   rebuild-cli      (outDir already built) add one version, time a build by a fresh builder, as the CLI does
//   rebuild-fresh    the same with the server's layout (no archives to publish)
// Prints one JSON line: { ms, maxRssMb, written, registryBytes }.
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';

import { RegistryBuilder } from '../build/src/registry/build.js';
import { openSqliteStorage, storeSource } from '../build/src/store/index.js';
import { addVersion } from './fixtures/synthetic-store.js';

const [mode, storeDir, outDir] = process.argv.slice(2);
const maxRssMb = () => process.resourceUsage().maxRSS / 1024;

async function timed(fn) {
  const start = performance.now();
  const cpu = process.cpuUsage();
  const value = await fn();
  const used = process.cpuUsage(cpu);
  // CPU time of the process (every thread): what other work on a shared machine disturbs least.
  return { ms: performance.now() - start, cpuMs: (used.user + used.system) / 1000, value };
}

if (mode === 'floor') {
  const bytes = await readFile(path.join(outDir, 'registry.json'));
  const document = JSON.parse(bytes.toString('utf8'));
  const baseline = maxRssMb();
  const { ms, cpuMs } = await timed(async () => {
    const text = `${JSON.stringify(document)}\n`;
    await writeFile(path.join(outDir, 'floor.json'), text);
    if (text.length !== bytes.length) throw new Error('the floor did not write the same registry.json');
  });
  console.log(JSON.stringify({ ms, cpuMs, maxRssMb: maxRssMb(), baselineRssMb: baseline, registryBytes: bytes.length }));
} else {
  const storage = await openSqliteStorage(storeDir, { create: false });
  const layout = mode === 'full' || mode === 'rebuild-cli' ? 'static' : 'server';
  // As build-registry does: a build state in the output (the server's builder keeps its entries instead).
  const state = mode !== 'rebuild-server';
  const builder = () => new RegistryBuilder(storeSource(storage, undefined, { layout, ...(state ? { identity: storeDir } : {}) }), { outDir, allowEmpty: true, state });
  let result;
  // A name of its own per measurement: several rebuilds run against one store.
  const added = `added-${mode}-${process.pid}`;
  if (mode === 'full' || mode === 'full-server') {
    result = await timed(() => builder().build());
  } else if (mode === 'rebuild-server') {
    const kept = builder();
    await kept.build();
    addVersion(storeDir, added, '1.0.0');
    result = await timed(() => kept.build());
  } else if (mode === 'rebuild-cli' || mode === 'rebuild-fresh') {
    addVersion(storeDir, added, '1.0.0');
    result = await timed(() => builder().build());
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  // The build's peak, before this process reads anything back (registry.json alone is 100 MB).
  const buildRssMb = maxRssMb();
  const registryBytes = (await stat(path.join(outDir, 'registry.json'))).size;
  const indexGzipBytes = gzipSync(await readFile(path.join(outDir, 'index.json')), { level: 9 }).length;
  console.log(JSON.stringify({ ms: result.ms, cpuMs: result.cpuMs, maxRssMb: buildRssMb, notices: result.value.notices, written: result.value.written, registryBytes, indexGzipBytes, added }));
  await storage.close();
}
