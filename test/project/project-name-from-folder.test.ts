/**
 * `create <id> <dir>` answers `projectName` from the folder's name, as `npm create` does: only for
 * a template with that variable, when no answer gives it, and when the name passes its rules
 * (else it is asked, or, without questions, the creation fails saying why).
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { RegistryClient } from '../../src/client/index.js';
import { createProject } from '../../src/project/index.js';
import type { Answers, TemplateLock } from '../../src/template/index.js';
import { cli } from '../helpers/cli.js';
import { isolateConsumerEnvironment, tempDir, validPrompts, validVariables, type FileTree } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE } from './versions.js';

isolateConsumerEnvironment({ unset: ['TEMPLATE_REGISTRY_URL'] });

async function registry(files: FileTree = {}): Promise<{ url: string; client: RegistryClient }> {
  const server = await startRegistryServer();
  await publishVersions(server, [{ version: '1.0.0', files }]);
  const url = `${server.url}/registry.json`;
  return { url, client: new RegistryClient({ registryUrl: url }) };
}

const lockOf = async (project: string): Promise<TemplateLock> => JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as TemplateLock;

describe('projectName from the folder name', () => {
  it('is the folder name when no answer gives it, and its question is not asked', async () => {
    const { client } = await registry();
    const dir = path.join(await tempDir(), 'shop-api');
    const given: Answers[] = [];
    const result = await createProject({ client, id: TEMPLATE, dir, doNotTrack: true, ask: (_template, answers) => (given.push(answers), Promise.resolve(answers)) });
    expect(given).toEqual([{ projectName: 'shop-api' }]);
    expect(result.project.answers.projectName).toBe('shop-api');
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toBe('# shop-api\n');
    expect((await lockOf(dir)).answers.projectName).toBe('shop-api');
    // The values computed from it follow.
    expect(result.project.computed.packageName).toBe('shop-api');
  });

  it('gives way to --set and to an answers file', async () => {
    const { client } = await registry();
    const fromSet = await createProject({ client, id: TEMPLATE, dir: path.join(await tempDir(), 'folder-name'), set: ['projectName=from-set'], doNotTrack: true });
    expect(fromSet.project.answers.projectName).toBe('from-set');
    const file = path.join(await tempDir(), 'answers.json');
    await writeFile(file, JSON.stringify({ projectName: 'from-file' }));
    const fromFile = await createProject({ client, id: TEMPLATE, dir: path.join(await tempDir(), 'folder-name'), answersFile: file, doNotTrack: true });
    expect(fromFile.project.answers.projectName).toBe('from-file');
  });

  it('an invalid folder name is asked about on a terminal', async () => {
    const { client } = await registry();
    const given: Answers[] = [];
    const result = await createProject({
      client,
      id: TEMPLATE,
      dir: path.join(await tempDir(), 'My App'),
      doNotTrack: true,
      ask: (_template, answers) => (given.push(answers), Promise.resolve({ ...answers, projectName: 'my-app-2' })),
    });
    expect(given).toEqual([{}]);
    expect(result.project.answers.projectName).toBe('my-app-2');
  });

  it('without questions, an invalid folder name fails with a clear message and creates nothing', async () => {
    const { url } = await registry();
    const dir = path.join(await tempDir(), 'My App');
    const run = await cli('create', TEMPLATE, dir, '--registry', url, '--defaults');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'projectName: is taken from the folder name "My App" when not given, and that name is not valid: must match ^[a-z][a-z0-9-]*$ (got "My App"); pass --set projectName=<name> or create the project in a folder with a valid name',
    );
    expect(existsSync(dir)).toBe(false);
    const named = await cli('create', TEMPLATE, dir, '--registry', url, '--defaults', '--set', 'projectName=my-app');
    expect(named.code, named.stderr).toBe(0);
  });

  it('the prompt pattern applies too, and a template without projectName is left alone', async () => {
    const strict = await registry({
      'template.prompts.json': { prompts: [{ ...validPrompts.prompts[0], validate: '^[a-z-]{3,6}$', invalidMessage: 'three to six letters' }, validPrompts.prompts[1]] },
    });
    const run = await cli('create', TEMPLATE, path.join(await tempDir(), 'toolong'), '--registry', strict.url, '--defaults');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('that name is not valid: three to six letters (got "toolong")');

    const { projectName: _dropped, ...others } = validVariables.variables;
    const nameless = await registry({
      'template.vars.json': { variables: others },
      'template.prompts.json': { prompts: [validPrompts.prompts[1]] },
      'template/README.md': '# {{ description }}\n',
    });
    const dir = path.join(await tempDir(), 'Any Folder');
    const created = await createProject({ client: nameless.client, id: TEMPLATE, dir, doNotTrack: true });
    expect(created.project.answers).not.toHaveProperty('projectName');
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toBe('# An app\n');
  });
});
