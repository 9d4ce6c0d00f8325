import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer as createNetServer, type Server } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { freePort } from '../helpers/registry-server.js';

const root = path.resolve('.');
const cliBin = path.join(root, 'bin', 'template-registry.js');

/** The last line `npm start` prints before it serves: the consumer's update command. */
const LAST_LINE = /^ {2}npx template-registry update --project my-app .*$/m;

describe('npm start', () => {
  it('serves a registry on the embedded store with the example template published through the publish pipeline, until Ctrl-C', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['scripts/start.js'], {
      env: { ...process.env, REGISTRY_STORE: await tempDir('tr-start-'), PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (LAST_LINE.test(output)) resolve();
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      void exited.then((code) => reject(new Error(`npm start exited with ${String(code)}:\n${output}`)));
    });
    // Every pipeline step ran, in order, before the upload.
    const steps = ['Validate: valid', 'Test generation:', 'Lint:', 'Release notes:', 'Pack:', 'Upload: uploaded'];
    const positions = steps.map((step) => output.indexOf(step));
    expect(positions.every((p) => p >= 0), output).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    // Its output is a pipe here: no progress line drawn with \r.
    expect(output).not.toContain('\r');

    // The banner says which variables choose where it listens.
    expect(output).toContain(`PORT=${port} and HOST=127.0.0.1 say where it listens`);

    const registry = (await (await fetch(`http://127.0.0.1:${port}/registry.json`)).json()) as RegistryDocument;
    expect(registry.templates.map((e) => e.id)).toEqual(['node-service']);
    const archive = await fetch(registry.templates[0]!.downloadUrl);
    expect(archive.status).toBe(200);

    // It ends with the consumer side, and the lines work as printed.
    const lines = output.trimEnd().split('\n');
    expect(lines.slice(-5, -2)).toEqual([`  export TEMPLATE_REGISTRY_URL=http://127.0.0.1:${port}/registry.json`, '  npx template-registry list', '  npx template-registry create node-service my-app']);
    expect(lines.slice(-2).map((line) => line.replace(/\s+#.*$/, ''))).toEqual(['  npx template-registry check-update --project my-app', '  npx template-registry update --project my-app']);
    const registryUrl = /export TEMPLATE_REGISTRY_URL=(\S+)/.exec(output)?.[1] ?? '';
    const consumerEnv = { ...process.env, TEMPLATE_REGISTRY_URL: registryUrl, TEMPLATE_REGISTRY_CACHE: await tempDir('tr-start-cache-'), DO_NOT_TRACK: '1' };
    const work = await tempDir('tr-start-consumer-');
    const list = await promisify(execFile)(process.execPath, [cliBin, 'list'], { env: consumerEnv, cwd: work });
    expect(list.stdout).toMatch(/^node-service\s+\d+\.\d+\.\d+\s/m);
    await promisify(execFile)(process.execPath, [cliBin, 'create', 'node-service', 'my-app'], { env: consumerEnv, cwd: work });
    expect(await readFile(path.join(work, 'my-app', '.template-lock.json'), 'utf8')).toContain('node-service');
    const check = await promisify(execFile)(process.execPath, [cliBin, 'check-update', '--project', 'my-app'], { env: consumerEnv, cwd: work });
    expect(check.stdout).toMatch(/^node-service is up to date/);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 120_000);

  it('explains a busy port in one line and exits 1', async () => {
    const busy: Server = createNetServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const address = busy.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const child = spawn(process.execPath, ['scripts/start.js'], {
        env: { ...process.env, REGISTRY_STORE: await tempDir('tr-start-busy-'), PORT: String(port), HOST: '127.0.0.1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));

      expect(code).toBe(1);
      expect(stderr).toBe(`port ${port} on 127.0.0.1 is in use: set PORT (and HOST) to run elsewhere, e.g. PORT=${port + 1} npm start\n`);
      expect(stdout).toBe('');
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()));
    }
  }, 60_000);

  it('refuses a PORT that is not a port number in one line', async () => {
    const run = await promisify(execFile)(process.execPath, ['scripts/start.js'], {
      env: { ...process.env, REGISTRY_STORE: await tempDir('tr-start-port-'), PORT: 'http' },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code: number; stderr: string }) => error,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('PORT must be a port number from 1 to 65535 (got "http"), e.g. PORT=4873 npm start\n');
  });
});
