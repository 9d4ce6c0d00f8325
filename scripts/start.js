#!/usr/bin/env node
// `npm start`: runs as much of the main job as exists, on the example template:
// validate, lint, test-generate, then generate a project into .template-registry/demo.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = path.join(root, 'bin', 'template-registry.js');
const example = path.join(root, 'examples', 'templates', 'node-service');
const demo = path.join(root, '.template-registry', 'demo');

function step(title, args) {
  console.log(`\n== ${title}: template-registry ${args.join(' ')}`);
  const result = spawnSync(process.execPath, [bin, ...args], { stdio: 'inherit', cwd: root });
  if (result.status !== 0) {
    console.error(`\n${title} failed (exit ${result.status ?? 'signal'})`);
    process.exit(result.status ?? 1);
  }
}

step('validate', ['validate', example]);
step('lint', ['lint', example]);
step('test-generate', ['test', example]);
rmSync(demo, { recursive: true, force: true });
step('generate', ['generate', example, '--defaults', '--out', demo]);
console.log(`\nDone. The generated project is in ${path.relative(root, demo)}/ (with .template-lock.json).`);
console.log('Publishing, the registry server and the registry JSON arrive with the next issues.');
