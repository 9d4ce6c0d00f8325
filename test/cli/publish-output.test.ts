import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { runCli } from '../../src/cli/index.js';
import { formatBytes } from '../../src/publish/progress.js';
import { cli, type CliRun } from '../helpers/cli.js';
import { startFakeRegistry, type FakeRegistry } from '../helpers/fake-registry.js';
import { tempDir, withoutEnvironment } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { writePublishableTemplate } from '../publish/publishable-template.js';

const TOKEN = 'cli_secret_token_0123456789abcdef';
const ENV_NAMES = ['TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_CACHE', 'DO_NOT_TRACK'] as const;

/** What a terminal shows after `output`: `\r` returns to the start of the line, characters overwrite, `\n` starts a new line. */
function screen(output: string): string[] {
  const lines: string[][] = [[]];
  let column = 0;
  for (const char of output) {
    if (char === '\r') column = 0;
    else if (char === '\n') {
      lines.push([]);
      column = 0;
    } else {
      lines[lines.length - 1]![column++] = char;
    }
  }
  return lines.map((line) => line.join('').trimEnd());
}

/** Runs the CLI in-process with stderr playing a terminal (`isTTY`) or a pipe, the output captured. */
async function cliOn(stderr: 'terminal' | 'pipe', ...argv: string[]): Promise<CliRun> {
  const run = { code: 0, stdout: '', stderr: '' };
  run.code = await runCli(argv, {
    stdout: (text) => (run.stdout += text),
    stderr: (text) => (run.stderr += text),
    isTTY: { stdout: false, stderr: stderr === 'terminal' },
    env: { ...process.env, NO_COLOR: '1' },
  });
  return run;
}

let fake: FakeRegistry;
withoutEnvironment(ENV_NAMES);

beforeEach(async () => {
  fake = await startFakeRegistry({ token: TOKEN });
});

afterEach(async () => {
  await fake.close();
});

describe('template-registry publish output', () => {
  it('shows the upload progress in place on a terminal and clears it before the next line', async () => {
    const result = await cliOn('terminal', 'publish', await writePublishableTemplate(), '--registry', fake.url, '--token', TOKEN);
    expect(result.code, result.stderr).toBe(0);

    const size = formatBytes(Number(fake.uploads[0]!.headers['content-length']));
    expect(result.stderr).toContain(`\ruploading ${size} / ${size} (100%)`);
    // Once the terminal has drawn everything, no progress is left on it and the step lines are whole.
    const shown = screen(result.stderr);
    expect(shown.filter((line) => line.includes('uploading'))).toEqual([]);
    expect(shown).toContain(`Upload: uploaded to ${fake.url}`);
    expect(shown).toContainEqual(expect.stringMatching(/^Pack: demo-template-1\.0\.0\.tgz: /));
    expect(result.stdout).not.toContain('\r');
    expect(result.stdout.split('\n')[1]).toBe(`download: ${fake.url}/templates/demo-template/versions/1.0.0/archive`);
  });

  it('shows no progress in a pipe', async () => {
    const result = await cliOn('pipe', 'publish', await writePublishableTemplate(), '--registry', fake.url, '--token', TOKEN);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toContain('\r');
    expect(result.stderr).not.toContain('uploading');
    expect(result.stderr).toContain(`Upload: uploaded to ${fake.url}\n`);
  });

  it('with --json prints one JSON document on stdout, with the download URL, and no progress even on a terminal', async () => {
    const result = await cliOn('terminal', 'publish', await writePublishableTemplate(), '--registry', fake.url, '--token', TOKEN, '--json');
    expect(result.code, result.stderr).toBe(0);
    const parsed = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(parsed).toMatchObject({
      name: 'demo-template',
      version: '1.0.0',
      uploaded: true,
      integrity: fake.uploads[0]!.integrity,
      downloadUrl: `${fake.url}/templates/demo-template/versions/1.0.0/archive`,
    });
    expect(result.stderr).not.toContain('\r');
    expect(result.stderr).toContain('Validate: valid\n');

    // A re-run answers 409 (no entry): the download URL is still there.
    const again = await cliOn('terminal', 'publish', await writePublishableTemplate(), '--registry', fake.url, '--token', TOKEN, '--json');
    expect(JSON.parse(again.stdout)).toMatchObject({ uploaded: false, downloadUrl: `${fake.url}/templates/demo-template/versions/1.0.0/archive` });
  });

  it('names what the archive leaves out and why, on stderr and in --json', async () => {
    const dir = await writePublishableTemplate({ 'template/.env': 'SECRET=1', 'id_rsa': 'a private key' });
    const result = await cliOn('pipe', 'publish', dir, '--registry', fake.url, '--token', TOKEN, '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('left out: id_rsa (may hold credentials; list it in the manifest\'s "include" to pack it)\n');
    expect(result.stderr).toContain('left out: template/.env (an .env file;');
    expect((JSON.parse(result.stdout) as { leftOut: unknown }).leftOut).toEqual([
      { path: 'id_rsa', reason: expect.stringContaining('credentials') },
      { path: 'template/.env', reason: expect.stringContaining('.env file') },
    ]);
    const plain = await cliOn('pipe', 'publish', dir, '--registry', fake.url, '--token', TOKEN);
    expect(plain.stderr).toContain('left out: id_rsa (may hold credentials;');
  });

  describe('against a registry server', () => {
    const cwd = process.cwd();
    afterEach(() => process.chdir(cwd));

    it('prints a download URL that serves the archive, and a create line that creates a project from it', async () => {
      const server = await startRegistryServer();
      const result = await cli('publish', await writePublishableTemplate(), '--registry', server.url, '--token', server.token);
      expect(result.code, result.stderr).toBe(0);
      const [published, download, hint] = result.stdout.trimEnd().split('\n');
      const integrity = /\((sha512-[^)]+)\)$/.exec(published ?? '')?.[1];

      const downloadUrl = download?.replace(/^download: /, '') ?? '';
      expect(downloadUrl).toBe(`${server.url}/templates/demo-template/versions/1.0.0/archive`);
      const archive = Buffer.from(await (await fetch(downloadUrl)).arrayBuffer());
      expect(`sha512-${createHash('sha512').update(archive).digest('base64')}`).toBe(integrity);

      // The hint as a user would paste it, run in a fresh folder.
      expect(hint).toMatch(/^create a project from it: npx template-registry create demo-template@1\.0\.0 my-app --registry \S+$/);
      const argv = (hint ?? '').slice((hint ?? '').indexOf('npx template-registry ') + 'npx template-registry '.length).split(' ');
      process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
      process.env.DO_NOT_TRACK = '1';
      const work = await tempDir('tr-consumer-');
      process.chdir(work);
      const created = await cli(...argv);
      expect(created.code, created.stderr).toBe(0);
      const lock = JSON.parse(await readFile(path.join(work, 'my-app', '.template-lock.json'), 'utf8')) as Record<string, unknown>;
      expect(JSON.stringify(lock)).toContain('demo-template');
    });
  });
});
