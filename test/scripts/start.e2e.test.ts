import { spawn } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import type { RegistryDocument } from '../../src/core/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { freePort } from '../helpers/registry-server.js';

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
        if (output.includes('Serving until Ctrl-C')) resolve();
      });
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      void exited.then((code) => reject(new Error(`npm start exited with ${String(code)}:\n${output}`)));
    });
    // Every pipeline step ran, in order, before the upload.
    const steps = ['Validate: valid', 'Test generation:', 'Lint:', 'Release notes:', 'Pack:', 'Upload: uploaded'];
    const positions = steps.map((step) => output.indexOf(step));
    expect(positions.every((p) => p >= 0), output).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);

    const registry = (await (await fetch(`http://127.0.0.1:${port}/registry.json`)).json()) as RegistryDocument;
    expect(registry.templates.map((e) => e.id)).toEqual(['node-service']);
    const archive = await fetch(registry.templates[0]!.downloadUrl);
    expect(archive.status).toBe(200);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 120_000);
});
