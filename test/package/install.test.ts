/**
 * The packages as a user installs them (issue 25 item 13): both tarballs packed (npm pack) and
 * installed with npm into an empty folder. The consumer package installs alone, offline (it has no
 * dependency), and its CLI and API work from there; a server command without the server package
 * fails naming it; with it, `serve` starts. Slow (npm): the server part needs the npm registry and
 * is skipped, with a notice, when it does not answer.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { installInto, measureInstall, packBoth, registryReachable } from '../../scripts/packed-install.js';
import { writeTemplate } from '../helpers/fixtures.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const VERSION = (JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

let work: string;
let tarballs: { consumer: string; server: string };
let project: string;

/** Runs the installed CLI in `project`. */
function installedCli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [path.join(project, 'node_modules/template-registry/bin/template-registry.js'), ...args], { cwd: project, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

beforeAll(async () => {
  // One folder for the whole file (the packages are installed once): removed after all.
  work = await mkdtemp(path.join(tmpdir(), 'package-install-'));
  tarballs = await packBoth(path.join(work, 'tarballs'));
  project = path.join(work, 'project');
  await installInto(project, [tarballs.consumer]);
}, 120_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('the consumer package, installed from its tarball', () => {
  it('installs one package, small, with no install script, native module or EBADENGINE warning', async () => {
    const again = await installInto(path.join(work, 'again'), [tarballs.consumer]);
    expect(again.ebadengine).toEqual([]);
    const measured = await measureInstall(path.join(work, 'again'));
    expect(measured.packages).toBeLessThanOrEqual(40);
    expect(measured.bytes).toBeLessThanOrEqual(15 * 1024 * 1024);
    expect(measured.installScripts).toEqual([]);
    expect(measured.nativeModules).toEqual([]);
  }, 120_000);

  it('ships no action bundle, server code or OpenAPI document', () => {
    const listing = spawnSync('tar', ['-tzf', tarballs.consumer], { encoding: 'utf8' }).stdout.split('\n');
    expect(listing.filter((file) => /^package\/(dist|openapi|packages)\/|action\.yml$|^package\/build\/src\/(server|store|registry|github)\//.test(file))).toEqual([]);
    expect(listing).toContain('package/build/lib/cli.js');
  });

  it('answers --version and --help, and validates a template', async () => {
    expect(installedCli('--version')).toMatchObject({ status: 0, stdout: `${VERSION}\n` });
    const help = installedCli('--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^ {2}create \[options\] <template> \[dir\]/m);
    const template = await writeTemplate({}, path.join(work, 'template'));
    const valid = installedCli('validate', template);
    expect(valid.stderr).toBe('');
    expect(valid.status).toBe(0);
    expect(valid.stdout).toContain('template is valid');
    const broken = await writeTemplate({ 'template.json': null }, path.join(work, 'broken'));
    expect(installedCli('validate', broken).status).toBe(1);
  });

  it('exports its API from the package root and sub-paths', () => {
    const run = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', "const root = await import('template-registry'); const client = await import('template-registry/client'); console.log(typeof root.validateTemplate, typeof root.createProject, typeof client.RegistryClient, 'createServer' in root)"],
      { cwd: project, encoding: 'utf8' },
    );
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toBe('function function function false');
  });

  it('refuses a server command without the server package, naming the package and how to install it', () => {
    for (const command of ['serve', 'store', 'db', 'build-registry']) {
      const run = installedCli(command, '--help');
      expect(run.status, command).toBe(1);
      expect(run.stderr).toContain(`\`${command}\` comes with the template-registry-server package`);
      expect(run.stderr).toContain('npm install --global template-registry-server');
    }
  });
});

/** A TCP port free at the moment. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const online = await registryReachable();
if (!online) console.warn('test/package/install.test.ts: the npm registry does not answer; the server package install is skipped');

describe.runIf(online)('the server package installed beside it', () => {
  it('runs serve through the consumer CLI', async () => {
    // Lifecycle scripts off: better-sqlite3 would compile from source where its prebuilt binary
    // cannot be downloaded (minutes); the binary this checkout was built with is put in its place.
    spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', tarballs.server], { cwd: project, encoding: 'utf8', timeout: 240_000 });
    const binary = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    await mkdir(path.dirname(path.join(project, binary)), { recursive: true });
    await copyFile(path.join(ROOT, binary), path.join(project, binary));

    expect(installedCli('store', '--help')).toMatchObject({ status: 0, stdout: expect.stringContaining('Usage: template-registry store') });
    const port = await freePort();
    const child = spawn(process.execPath, [path.join(project, 'node_modules/template-registry/bin/template-registry.js'), 'serve', '--store', path.join(work, 'store'), '--port', String(port)], { cwd: project });
    try {
      const started = await new Promise<string>((resolve, reject) => {
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('registry.json')) resolve(out);
        });
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.once('exit', (code) => reject(new Error(`serve ended (${code}): ${err}`)));
      });
      expect(started).toContain(`template-registry serving`);
      const answer = await fetch(`http://127.0.0.1:${port}/registry.json`);
      expect(answer.status).toBe(200);
    } finally {
      child.kill();
    }
  }, 300_000);
});
