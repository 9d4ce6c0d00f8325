#!/usr/bin/env node
// Start-up costs, each beside its floor measured in the same run: a bare `node -e 0`.
// Prints one JSON object: { runs, rows: [{ name, command, medianMs, minMs, ratio, target?, met? }] }.
// Used by scripts/bench-results.js (`npm run bench`); needs `npm run build` first (bin/ runs build/).
// Targets (issue 25.16): --version and --help at most 1.3x the floor, import('template-registry')
// at most 2x, validate of a 170-file template at most 0.5 s.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.STARTUP_RUNS ?? 21);
const TEMPLATE_FILES = 170;

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

function countFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((entry) => entry.isFile()).length;
}

/**
 * A valid template of exactly `files` files: the ported cookiecutter-pypackage (37 files: GitHub
 * workflows, Liquid, computed defaults), its content files (but .github/) copied into numbered sub-folders
 * until the count is reached (the last copy cut short).
 */
function largeTemplate(files) {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'startup-bench-')), 'template');
  cpSync(path.join(root, 'test/fixtures/real/cookiecutter-pypackage/1.0.0'), dir, { recursive: true });
  const content = path.join(dir, 'template');
  const sources = readdirSync(content, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(content, path.join(entry.parentPath, entry.name)))
    // The manifest keeps .github/ verbatim by path; copies elsewhere would be read as Liquid.
    .filter((file) => !file.startsWith('.github'));
  let count = countFiles(dir);
  for (let copy = 1; count < files; copy++) {
    for (const file of sources) {
      if (count >= files) break;
      cpSync(path.join(content, file), path.join(content, `copy-${copy}`, file));
      count++;
    }
  }
  return dir;
}

const template = largeTemplate(TEMPLATE_FILES);
const cases = [
  { name: 'floor: node -e 0', args: ['-e', '0'] },
  { name: 'template-registry --version', args: ['bin/template-registry.js', '--version'], target: { ratio: 1.3 } },
  { name: 'template-registry --help', args: ['bin/template-registry.js', '--help'], target: { ratio: 1.3 } },
  { name: "import('template-registry/client')", args: ['--input-type=module', '-e', "await import('template-registry/client')"] },
  { name: "import('template-registry') (the whole API)", args: ['--input-type=module', '-e', "await import('template-registry')"], target: { ratio: 2 } },
  {
    name: `template-registry validate, a ${countFiles(template)}-file template`,
    args: ['bin/template-registry.js', 'validate', template],
    target: { ms: 500 },
  },
];

try {
  // Interleaved, so a slow moment of the machine hits every case alike.
  const samples = cases.map(() => []);
  for (const c of cases) timeOnce(c.args); // warm the file cache
  for (let i = 0; i < RUNS; i++) cases.forEach((c, k) => samples[k].push(timeOnce(c.args)));

  const floor = median(samples[0]);
  const rows = cases.map((c, k) => {
    const medianMs = median(samples[k]);
    const ratio = Math.round((medianMs / floor) * 100) / 100;
    const target = c.target?.ratio ? `<= ${c.target.ratio}x floor` : c.target?.ms ? `<= ${c.target.ms} ms` : undefined;
    const met = c.target?.ratio ? ratio <= c.target.ratio : c.target?.ms ? medianMs <= c.target.ms : undefined;
    return {
      name: c.name,
      command: `node ${c.args.join(' ').replace(template, '<template>')}`,
      medianMs: Math.round(medianMs * 10) / 10,
      minMs: Math.round(Math.min(...samples[k]) * 10) / 10,
      ratio,
      ...(target ? { target, met } : {}),
    };
  });
  console.log(JSON.stringify({ runs: RUNS, rows }));
} finally {
  rmSync(path.dirname(template), { recursive: true, force: true });
}
