import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';

import { templateManifest } from './builders.js';

const created: string[] = [];

afterEach(async () => {
  await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A fresh temp folder, removed after the test. */
export async function tempDir(prefix = 'tr-test-'): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export const validManifest = templateManifest('demo-template', '1.0.0', {
  description: 'A demo template used by the tests',
  stability: 'stable',
  author: { name: 'Test Author', email: 'author@example.com' },
  features: ['api', 'testing'],
  changelog: 'CHANGELOG.md',
});

export const validVariables = {
  variables: {
    projectName: { type: 'string', default: 'my-app', validation: '^[a-z][a-z0-9-]*$' },
    description: { type: 'string', default: 'An app' },
    features: { type: 'array', enum: ['api', 'testing'], default: ['api'] },
  },
  computed: { packageName: 'projectName | package_name' },
};

export const validPrompts = {
  prompts: [
    { name: 'projectName', message: 'Project name?', type: 'input', validate: '^[a-z][a-z0-9-]*$' },
    {
      name: 'features',
      message: 'Features?',
      type: 'multiselect',
      choices: [
        { name: 'API', value: 'api' },
        { name: 'Tests', value: 'testing' },
      ],
    },
  ],
};

export type FileTree = Record<string, string | Buffer | object | null>;

/**
 * Writes a template folder: the valid defaults above merged with `files` (a path to text, bytes
 * or a JSON value; `null` leaves a default file out).
 */
export async function writeTemplate(files: FileTree = {}, dir?: string): Promise<string> {
  const root = dir ?? (await tempDir('tr-template-'));
  // The change log names the manifest's version, as lint (and so an upload) requires.
  const manifest = files['template.json'];
  const version = typeof manifest === 'object' && manifest !== null && !Buffer.isBuffer(manifest) && typeof (manifest as { version?: unknown }).version === 'string' ? (manifest as { version: string }).version : '1.0.0';
  const tree: FileTree = {
    'template.json': validManifest,
    'template.vars.json': validVariables,
    'template.prompts.json': validPrompts,
    'README.md': '# Demo\n',
    'CHANGELOG.md': `# Changelog\n\n## [${version}] - 2026-01-01\n\n- First release\n`,
    'template/README.md': '# {{ projectName }}\n',
    ...files,
  };
  await writeTree(root, tree);
  return root;
}

export async function writeTree(root: string, tree: FileTree): Promise<void> {
  for (const [relative, content] of Object.entries(tree)) {
    if (content === null) continue;
    const file = path.join(root, relative);
    await mkdir(path.dirname(file), { recursive: true });
    const data =
      typeof content === 'string' || Buffer.isBuffer(content) ? content : `${JSON.stringify(content, null, 2)}\n`;
    await writeFile(file, data);
  }
}

/**
 * Gives each test of the calling file (or describe block) the environment of a consumer on a fresh
 * machine: its own empty cache folder, no analytics, and `unset` names removed; restored after.
 */
export function isolateConsumerEnvironment(options: { unset?: readonly string[] } = {}): void {
  const names = ['TEMPLATE_REGISTRY_CACHE', 'DO_NOT_TRACK', ...(options.unset ?? [])];
  let saved: Record<string, string | undefined> = {};
  beforeEach(async () => {
    saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
    process.env.DO_NOT_TRACK = '1';
    for (const name of options.unset ?? []) delete process.env[name];
  });
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}

/** Removes `names` from the environment before each test of the calling file, and restores them after. */
export function withoutEnvironment(names: readonly string[]): void {
  let saved: Record<string, string | undefined> = {};
  beforeEach(() => {
    saved = Object.fromEntries(names.map((name) => [name, process.env[name]]));
    for (const name of names) delete process.env[name];
  });
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
}
