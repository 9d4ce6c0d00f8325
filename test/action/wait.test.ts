/**
 * The publish action's `wait`: after the upload it polls the public URL of the
 * template's file until it lists the version, sets `visible-after-ms`, and a time-out is a warning
 * naming the URL and what it served, not a failed run. The clock is a fake one.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import path from 'node:path';

import type { AnnotationProperties } from '@actions/core';
import { afterEach, describe, expect, it } from 'vitest';

import { parseInputs } from '../../src/action/inputs.js';
import { run, type ActionCore } from '../../src/action/main.js';
import type { PublishOptions, PublishResult } from '../../src/publish/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { writePublishableTemplate } from '../publish/publishable-template.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

function recordingCore() {
  const calls = { outputs: {} as Record<string, string>, warnings: [] as { message: string; properties?: AnnotationProperties }[], failed: [] as string[], log: [] as string[] };
  const core: ActionCore = {
    setOutput: (name, value) => void (calls.outputs[name] = value),
    setSecret: () => undefined,
    setFailed: (message) => void calls.failed.push(message),
    info: (message) => void calls.log.push(message),
    warning: (message, properties) => void calls.warnings.push({ message, ...(properties ? { properties } : {}) }),
    error: (message) => void calls.failed.push(message),
    startGroup: (name) => void calls.log.push(`group ${name}`),
    endGroup: () => void calls.log.push('endgroup'),
    summary: { addHeading: () => undefined, addTable: () => undefined, addRaw: () => undefined, write: () => Promise.resolve() },
  };
  return { core, calls };
}

/** The warnings of the wait (the publishable template's lint warnings aside). */
const notVisible = (warnings: { message: string; properties?: AnnotationProperties }[]): string[] => warnings.filter((w) => w.properties?.title === 'not visible yet').map((w) => w.message);

const upload = (options: PublishOptions): Promise<PublishResult> => Promise.resolve({ uploaded: true, status: 201, attempts: 1, integrity: options.integrity ?? '' });

/** The registry's public side: `templates/demo-template.json` listing `listed()`. */
async function publicSide(listed: () => string[]): Promise<{ url: string; requests: { path: string; headers: IncomingHttpHeaders }[] }> {
  const requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers });
    if (req.url !== '/cdn/templates/demo-template.json') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'demo-template', versions: listed().map((version) => ({ id: 'demo-template', version })) }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/cdn`, requests };
}

function fakeClock() {
  let now = 0;
  return { now: () => now, sleep: (ms: number) => Promise.resolve(void (now += ms)) };
}

async function env(publicUrl: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const dir = await writePublishableTemplate();
  return {
    GITHUB_WORKSPACE: path.dirname(dir),
    RUNNER_TEMP: await tempDir(),
    'INPUT_TEMPLATE-PATH': path.basename(dir),
    INPUT_VERSION: '1.0.0',
    'INPUT_CREATE-RELEASE': 'false',
    'INPUT_REGISTRY-URL': 'https://api.registry.test',
    'INPUT_REGISTRY-TOKEN': 'tr_secret',
    'INPUT_PUBLIC-URL': publicUrl,
    INPUT_WAIT: 'true',
    ...extra,
  };
}

describe('the publish action with wait', () => {
  it('polls the public URL with no-cache until it lists the version and sets visible-after-ms', async () => {
    let polls = 0;
    const registry = await publicSide(() => (++polls < 3 ? [] : ['1.0.0']));
    const { core, calls } = recordingCore();
    const clock = fakeClock();
    const outcome = await run({ env: await env(registry.url), core, upload, wait: clock, setExitCode: () => undefined });
    expect(calls.failed).toEqual([]);
    expect(outcome.ok).toBe(true);
    expect(calls.outputs['visible-after-ms']).toBe('3000');
    expect(registry.requests.map((r) => `${r.path} ${String(r.headers['cache-control'])}`)).toEqual(Array(3).fill('/cdn/templates/demo-template.json no-cache'));
    expect(calls.log).toContain('group Wait until visible');
    expect(notVisible(calls.warnings)).toEqual([]);
  });

  it('warns on a time-out, naming the URL and what it served, sets no visible-after-ms, and does not fail the run', async () => {
    const registry = await publicSide(() => ['0.9.0']);
    const { core, calls } = recordingCore();
    const outcome = await run({ env: await env(registry.url, { 'INPUT_WAIT-TIMEOUT': '60' }), core, upload, wait: fakeClock(), setExitCode: () => undefined });
    expect(outcome.ok).toBe(true);
    expect(calls.failed).toEqual([]);
    expect(calls.outputs).not.toHaveProperty('visible-after-ms');
    const [warning, ...more] = notVisible(calls.warnings);
    expect(more).toEqual([]);
    expect(warning).toContain(`demo-template@1.0.0 is published, but ${registry.url}/templates/demo-template.json did not list it within 60 s`);
    expect(warning).toContain('it last served HTTP 200 listing 0.9.0');
  });

  it('does not wait unless asked, nor on a dry run', async () => {
    const registry = await publicSide(() => []);
    const { core, calls } = recordingCore();
    await run({ env: await env(registry.url, { INPUT_WAIT: 'false' }), core, upload, wait: fakeClock(), setExitCode: () => undefined });
    await run({ env: await env(registry.url, { 'INPUT_DRY-RUN': 'true' }), core, upload, wait: fakeClock(), setExitCode: () => undefined });
    expect(registry.requests).toEqual([]);
    expect(calls.outputs).not.toHaveProperty('visible-after-ms');
  });

  it('declares wait, wait-timeout and public-url, and the output visible-after-ms; refuses a bad wait-timeout', async () => {
    const yml = await readFile('action.yml', 'utf8');
    expect(yml).toMatch(/^ {2}wait:\n[\s\S]*?default: 'false'/m);
    expect(yml).toMatch(/^ {2}wait-timeout:\n[\s\S]*?default: '300'/m);
    expect(yml).toMatch(/^ {2}public-url:/m);
    expect(yml).toMatch(/^ {2}visible-after-ms:/m);
    expect(() => parseInputs({ INPUT_VERSION: '1.0.0', 'INPUT_DRY-RUN': 'true', 'INPUT_WAIT-TIMEOUT': 'soon' })).toThrow(/input wait-timeout must be a whole number of seconds/);
    expect(parseInputs({ INPUT_VERSION: '1.0.0', 'INPUT_DRY-RUN': 'true' })).toMatchObject({ wait: false, waitTimeoutMs: 300_000 });
  });
});
