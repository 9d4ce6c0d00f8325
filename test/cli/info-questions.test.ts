/**
 * `info` shows a registry template's declared dependencies and the questions it asks (read from
 * its verified archive), and still shows the entry when the archive cannot be had.
 */
import { copyFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { buildDocument } from '../../src/registry/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir, validManifest, validPrompts, validVariables, writeTemplate, isolateConsumerEnvironment } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { serveFolder } from '../helpers/static-server.js';

const nodeService = path.resolve('examples/templates/node-service');

isolateConsumerEnvironment();

async function publish(server: TestServer, dir: string): Promise<void> {
  const pack = await packTemplate(dir, { outDir: await tempDir() });
  await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
}

describe('template-registry info', () => {
  it('shows the declared dependencies and every question with its choices, default, rule and condition', async () => {
    const server = await startRegistryServer();
    await publish(server, nodeService);
    const result = await cli('info', 'node-service', '--registry', `${server.url}/registry.json`);
    // Published without provenance: the default `--provenance warn` says so, and nothing else.
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines).toContain('requires:  methodology >=1.0.0 <3.0.0, node >=20, npm >=10');
    expect(lines).toContain('questions (answer them with --set name=value or --answers FILE to skip them):');
    expect(lines).toContain('  projectName  Project name  [input; default "my-service"; required; must match ^[a-z][a-z0-9-]*$]');
    expect(lines).toContain('  features     Which features do you want?  [multiselect: auth, database, api, testing, docker; default api, testing]');
    expect(lines).toContain(
      '  database     Which database?  [select: postgresql, mysql, sqlite, mongodb; default "postgresql"; asked when features contains "database"; only when features contains "database"]',
    );
    // author has no question: it takes its default unless --set gives it.
    expect(lines.find((line) => line.startsWith('not asked (set with --set): '))).toContain('author (default {"name":"Your Name","email":"you@example.com"})');
  }, 60_000);

  it('gives the questions and dependencies as JSON fields, and with --no-questions downloads nothing', async () => {
    // The server's request log says which requests reached it (downloads go through the client's own HTTP transport, not fetch).
    const logged: string[] = [];
    const server = await startRegistryServer({ logger: { level: 'info', stream: { write: (line: string) => void logged.push(line) } } });
    const dir = await writeTemplate({ 'template.json': { ...validManifest, dependencies: { python: '>=3.11', pip: '>=23' } } });
    await publish(server, dir);
    const registry = `${server.url}/registry.json`;
    const archiveRequests = () =>
      logged.filter((line) => {
        const entry = JSON.parse(line) as { msg?: string; req?: { url?: string } };
        return entry.msg === 'incoming request' && entry.req?.url?.endsWith('/archive') === true;
      }).length;

    const json = await cli('info', 'demo-template', '--registry', registry, '--json');
    expect(json.code, json.stderr).toBe(0);
    const parsed = JSON.parse(json.stdout) as { dependencies: Record<string, string>; questions: { name: string; type: string; choices?: unknown[] }[]; unaskedVariables: { name: string }[] };
    expect(parsed.dependencies).toEqual({ methodology: '*', python: '>=3.11', pip: '>=23' });
    expect(parsed.questions.map((q) => [q.name, q.type])).toEqual(validPrompts.prompts.map((p) => [p.name, p.type]));
    expect(parsed.questions[1]?.choices).toEqual([{ name: 'API', value: 'api' }, { name: 'Tests', value: 'testing' }]);
    expect(parsed.unaskedVariables.map((v) => v.name)).toEqual(Object.keys(validVariables.variables).filter((name) => !validPrompts.prompts.some((p) => p.name === name)));
    expect(archiveRequests()).toBe(1);
    // Reading the questions is not a use of the template: no download is counted.
    expect(await server.store.events.countEvents('download')).toBe(0);

    const entryOnly = await cli('info', 'demo-template', '--registry', registry, '--no-questions');
    expect(entryOnly.code, entryOnly.stderr).toBe(0);
    expect(entryOnly.stdout).toContain('requires:  methodology *, python >=3.11, pip >=23');
    expect(entryOnly.stdout).not.toContain('questions');
    expect(archiveRequests()).toBe(1);
  }, 60_000);

  it('still shows the entry, with a warning, when the archive does not match its integrity', async () => {
    const dir = await writeTemplate();
    const pack = await packTemplate(dir, { outDir: await tempDir() });
    const other = await packTemplate(await writeTemplate({ 'README.md': '# Other\n' }), { outDir: await tempDir() });
    const root = await tempDir();
    await copyFile(other.file, path.join(root, 'demo.tgz'));
    const host = await serveFolder(root);
    try {
      const document = buildDocument(
        [{ manifest: pack.manifest, downloadUrl: `${host.url}demo.tgz`, integrity: pack.integrity, size: other.size, createdAt: '2026-01-01T00:00:00.000Z', stats: { downloads: 0, stars: 0, forks: 0, issues: 0 } }],
        { lastUpdated: '2026-01-01T00:00:00.000Z' },
      );
      await writeFile(path.join(root, 'registry.json'), JSON.stringify(document));
      const result = await cli('info', 'demo-template', '--registry', `${host.url}registry.json`);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^demo-template@1\.0\.0 /);
      expect(result.stdout).not.toContain('questions');
      expect(result.stderr).toMatch(/^warning: the questions cannot be shown: .*integrity/im);
      const json = await cli('info', 'demo-template', '--registry', `${host.url}registry.json`, '--json');
      expect(json.code).toBe(0);
      expect((JSON.parse(json.stdout) as { questionsError: string }).questionsError).toMatch(/integrity/i);
    } finally {
      await host.close();
    }
  }, 60_000);

  it('prints a question text from the archive without its terminal escape sequences', async () => {
    const server = await startRegistryServer();
    const prompts = { prompts: [{ ...validPrompts.prompts[0], message: 'Name\u001b[2J\u001b[31m?\u0007\nnext line' }, validPrompts.prompts[1]] };
    await publish(server, await writeTemplate({ 'template.prompts.json': prompts }));
    const result = await cli('info', 'demo-template', '--registry', `${server.url}/registry.json`);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('  projectName  Name? next line  [input;');
    // Control characters are what must be absent.
    // eslint-disable-next-line no-control-regex
    expect(result.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  }, 60_000);
});
