/**
 * Secrets through create and update against a registry server: never in the lock file, --json,
 * analytics events or the sync action's pull request; `update` asks for (or takes) a secret only
 * when a file that uses it must be rendered again.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { createProject, questionsOf, updateProject, type UpdateProjectResult } from '../../src/project/index.js';
import { pullRequestBody } from '../../src/sync-action/body.js';
import { loadTemplate, type Answers, type LoadedTemplate, type TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer, type TestServer } from '../helpers/registry-server.js';
import { SECRET_ENV, secretFiles, secretPrompts, secretVariablesFile } from '../helpers/secret-template.js';
import { publishVersions, TEMPLATE, type VersionSpec } from './versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL', SECRET_ENV] });

const TOKEN = 'tok_9d8c7b6a5f4e';

const V1: VersionSpec = { version: '1.0.0', files: secretFiles };
/** 1.1.0 changes the README only: no file that uses the secret. */
const V1_1: VersionSpec = { version: '1.1.0', files: { ...secretFiles, 'template/README.md': '# {{ projectName }}\n\nVersion 1.1\n' } };
/** 1.2.0 changes the file that holds the secret. */
const V1_2: VersionSpec = { version: '1.2.0', files: { ...V1_1.files, 'template/config/api.txt': 'token={{ apiToken }}\nheader={{ authHeader }}\nretries=3\n' } };

const readLockText = (project: string): Promise<string> => readFile(path.join(project, '.template-lock.json'), 'utf8');
const lockOf = async (project: string): Promise<TemplateLock> => JSON.parse(await readLockText(project)) as TemplateLock;

/**
 * A registry with `first`, a project created from its newest version with the token from the
 * environment, then `later` published.
 */
async function projectWithSecret(first: VersionSpec[], later: VersionSpec[]): Promise<{ server: TestServer; registry: string; project: string; client: RegistryClient }> {
  const server = await startRegistryServer();
  await publishVersions(server, first);
  const registry = `${server.url}/registry.json`;
  const project = path.join(await tempDir(), 'shop');
  process.env[SECRET_ENV] = TOKEN;
  try {
    const created = await cli('create', `${TEMPLATE}@${first.at(-1)?.version ?? ''}`, project, '--registry', registry, '--defaults');
    expect(created.code, created.stderr).toBe(0);
  } finally {
    delete process.env[SECRET_ENV];
  }
  expect(await readFile(path.join(project, 'config/api.txt'), 'utf8')).toBe(`token=${TOKEN}\nheader=Bearer ${TOKEN}\n`);
  await publishVersions(server, later);
  return { server, registry, project, client: new RegistryClient({ registryUrl: registry }) };
}

describe('create with a secret', () => {
  it('renders it into the files; the lock file, the result, --json and the generation event never hold it', async () => {
    const server = await startRegistryServer();
    await publishVersions(server, [V1]);
    const registry = `${server.url}/registry.json`;
    const bodies: string[] = [];
    const fetchSpy: typeof globalThis.fetch = (input, init) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.endsWith('/events') && typeof init?.body === 'string') bodies.push(init.body);
      return globalThis.fetch(input, init);
    };
    const project = path.join(await tempDir(), 'shop');
    const result = await createProject({ client: new RegistryClient({ registryUrl: registry }), id: TEMPLATE, dir: project, env: { [SECRET_ENV]: TOKEN }, fetch: fetchSpy });
    expect(await readFile(path.join(project, 'config/api.txt'), 'utf8')).toContain(`token=${TOKEN}`);
    expect(await readLockText(project)).not.toContain(TOKEN);
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(result.event).toMatchObject({ delivered: true });
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).not.toContain(TOKEN);

    process.env[SECRET_ENV] = TOKEN;
    const json = await cli('create', TEMPLATE, path.join(await tempDir(), 'other'), '--registry', registry, '--defaults', '--json');
    delete process.env[SECRET_ENV];
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toContain(TOKEN);
    expect(json.stderr).not.toContain(TOKEN);
    expect((JSON.parse(json.stdout) as { answers: Answers }).answers).toEqual({ projectName: 'other' });
  });
});

describe('info about a secret question', () => {
  it('says the answer is a secret and which environment variable can give it', async () => {
    const { questions } = questionsOf(await loadTemplate(await writeTemplate(secretFiles)));
    expect(questions.find((question) => question.name === 'apiToken')).toMatchObject({ type: 'input', secret: true, env: SECRET_ENV, required: true });
    expect(questions.find((question) => question.name === 'projectName')).not.toHaveProperty('secret');
  });
});

describe('update of a project with a secret', () => {
  it('does without the secret when no file that uses it changes: the file and its lock hash stay', async () => {
    const { registry, project } = await projectWithSecret([V1], [V1_1]);
    const before = await lockOf(project);
    const updated = await cli('update', '--project', project, '--registry', registry, '--refresh', '--json');
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).not.toContain(TOKEN);
    expect(await readFile(path.join(project, 'README.md'), 'utf8')).toBe('# shop\n\nVersion 1.1\n');
    expect(await readFile(path.join(project, 'config/api.txt'), 'utf8')).toBe(`token=${TOKEN}\nheader=Bearer ${TOKEN}\n`);
    const after = await lockOf(project);
    expect(after.template.version).toBe('1.1.0');
    // The lock still tells the file is as generated: a later update will not take it for the user's.
    expect(after.files['config/api.txt']).toEqual(before.files['config/api.txt']);
    expect(await readLockText(project)).not.toContain(TOKEN);
  });

  it('needs the secret when a file that uses it must be rendered again: refused without it, naming how to give it; done with it', async () => {
    const { registry, project } = await projectWithSecret([V1], [V1_1, V1_2]);
    const refused = await cli('update', '--project', project, '--registry', registry, '--refresh');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `apiToken: is a secret (kept in no file) that this update needs to render "config/api.txt" again: give it with --set apiToken=... or the environment variable ${SECRET_ENV} or running update on a terminal to be asked`,
    );
    expect((await lockOf(project)).template.version).toBe('1.0.0');

    process.env[SECRET_ENV] = TOKEN;
    const dryRun = await cli('update', '--project', project, '--registry', registry, '--refresh', '--dry-run');
    expect(dryRun.code, dryRun.stderr).toBe(0);
    expect(dryRun.stdout).toContain('+retries=3');
    expect(dryRun.stdout).toContain(' token=********');
    expect(dryRun.stdout).not.toContain(TOKEN);

    const updated = await cli('update', '--project', project, '--registry', registry, '--refresh', '--json');
    delete process.env[SECRET_ENV];
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).not.toContain(TOKEN);
    expect(updated.stderr).not.toContain(TOKEN);
    expect(await readFile(path.join(project, 'config/api.txt'), 'utf8')).toBe(`token=${TOKEN}\nheader=Bearer ${TOKEN}\nretries=3\n`);
    expect((await lockOf(project)).template.version).toBe('1.2.0');
    expect(await readLockText(project)).not.toContain(TOKEN);
  });

  it('asks only for what the update needs: a new required question (asked before the secrets are weighed), not the secret, when no file using it changes', async () => {
    const withRegion: VersionSpec = {
      version: '1.1.0',
      files: {
        ...secretFiles,
        'template.vars.json': { ...secretVariablesFile, variables: { ...secretVariablesFile.variables, region: { type: 'string', required: true } } },
        'template.prompts.json': { prompts: [...secretPrompts.prompts, { name: 'region', message: 'Region?', type: 'input' }] },
        'template/README.md': '# {{ projectName }} in {{ region }}\n',
      },
    };
    const { client, project } = await projectWithSecret([V1], [withRegion]);
    const asked: { given: Answers; skip: string[] }[] = [];
    const ask = (template: LoadedTemplate, given: Answers, options?: { skip?: ReadonlySet<string> }): Promise<Answers> => {
      asked.push({ given, skip: [...(options?.skip ?? [])] });
      return Promise.resolve({ ...given, region: 'us' });
    };
    const outcome = await updateProject({ client, projectDir: project, ask });
    expect(outcome.status).toBe('updated');
    expect(asked).toEqual([{ given: { projectName: 'shop' }, skip: ['apiToken'] }]);
    expect(await readFile(path.join(project, 'README.md'), 'utf8')).toBe('# shop in us\n');
    expect(JSON.stringify(outcome)).not.toContain(TOKEN);
  });

  it('asks for the secret when a file using it changes; the plan, its diffs and the pull request body never show it', async () => {
    const { client, project } = await projectWithSecret([V1], [V1_1, V1_2]);
    const skips: string[][] = [];
    const ask = (template: LoadedTemplate, given: Answers, options?: { skip?: ReadonlySet<string> }): Promise<Answers> => {
      skips.push([...(options?.skip ?? [])]);
      return Promise.resolve({ ...given, apiToken: TOKEN });
    };
    const outcome: UpdateProjectResult = await updateProject({ client, projectDir: project, ask });
    // Asked once, for the secret alone: every other answer is known.
    expect(skips).toEqual([['projectName']]);
    expect(outcome.status).toBe('updated');
    if (outcome.status !== 'updated') return;
    expect(await readFile(path.join(project, 'config/api.txt'), 'utf8')).toContain('retries=3');
    expect(JSON.stringify(outcome)).not.toContain(TOKEN);
    expect(outcome.files.find((file) => file.path === 'config/api.txt')?.diff).toContain('+retries=3');
    const body = pullRequestBody({
      templateId: outcome.templateId,
      fromVersion: outcome.fromVersion,
      toVersion: outcome.toVersion,
      projectPath: 'shop',
      branch: 'template-update/x',
      breaking: false,
      breakingReasons: [],
      files: outcome.files,
      stepsApplied: outcome.steps.applied,
      warnings: outcome.steps.warnings,
      conflicts: outcome.conflicts,
      changelog: [],
    });
    expect(body).toContain('config/api.txt');
    expect(body).not.toContain(TOKEN);
  });
});
