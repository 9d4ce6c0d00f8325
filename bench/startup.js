#!/usr/bin/env node
// Start-up costs, each beside its floor measured in the same run: a bare `node -e 0`.
// Prints one JSON object: { runs, rows: [{ name, command, medianMs, minMs, ratio, target? }] }.
// Used by scripts/bench-results.js (`npm run bench`); needs `npm run build` first (bin/ runs build/).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.STARTUP_RUNS ?? 21);

/** Milliseconds of one run of `node ...args` from the project root; throws when it fails. */
function timeOnce(args) {
  const started = process.hrtime.bigint();
  const run = spawnSync(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (run.status !== 0) throw new Error(`node ${args.join(' ')} failed: ${run.stderr.toString()}`);
  return ms;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

const cases = [
  { name: 'floor: node -e 0', args: ['-e', '0'] },
  { name: 'template-registry --version', args: ['bin/template-registry.js', '--version'], target: 2 },
  { name: "import('template-registry/client')", args: ['--input-type=module', '-e', "await import('template-registry/client')"] },
  { name: "import('template-registry') (the whole API)", args: ['--input-type=module', '-e', "await import('template-registry')"] },
];

// Interleaved, so a slow moment of the machine hits every case alike.
const samples = cases.map(() => []);
for (const c of cases) timeOnce(c.args); // warm the file cache
for (let i = 0; i < RUNS; i++) cases.forEach((c, k) => samples[k].push(timeOnce(c.args)));

const floor = median(samples[0]);
const rows = cases.map((c, k) => ({
  name: c.name,
  command: `node ${c.args.join(' ')}`,
  medianMs: Math.round(median(samples[k]) * 10) / 10,
  minMs: Math.round(Math.min(...samples[k]) * 10) / 10,
  ratio: Math.round((median(samples[k]) / floor) * 100) / 100,
  ...(c.target ? { target: c.target } : {}),
}));
console.log(JSON.stringify({ runs: RUNS, rows }));
