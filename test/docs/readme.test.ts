import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The targets of the relative Markdown links of `file` (no URLs, no in-page anchors), without their anchors. */
async function relativeLinks(file: string): Promise<string[]> {
  const text = await readFile(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => !/^[a-z]+:/i.test(target) && !target.startsWith('#'))
    .map((target) => target.split('#')[0] ?? '');
}

/** The `template-registry ...` command lines of the README's shell blocks, without their comments. */
async function readmeCommands(): Promise<string[][]> {
  const text = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line.startsWith('template-registry '))
    .map((line) => line.split(/\s+/).slice(1));
}

describe('the README', () => {
  it('says what it is, how to install the CLI without a registry account, the two set-up commands and a tour', async () => {
    const text = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    expect(text).toContain('npm install -g');
    expect(text).toContain('npm ci && npm start');
    expect(text).toMatch(/^npm test\b/m);
    const tour = await readmeCommands();
    // Author, operator and consumer each have a turn.
    for (const command of ['serve', 'token', 'init', 'publish', 'create']) expect(tour.map((args) => args[0])).toContain(command);
    // The CLI reference and the specification live in the repository.
    expect(await relativeLinks('README.md')).toEqual(expect.arrayContaining(['docs/cli.md', 'docs/spec/registry-spec.md']));
  });

  it('shows only commands and flags the CLI has', async () => {
    for (const args of await readmeCommands()) {
      if (args[0] === '--version') continue;
      const words = args.filter((arg) => /^[a-z][\w-]*$/.test(arg));
      // The command, and its subcommand when it has one (`token create`).
      const help = await cli(...words.slice(0, 2), '--help');
      const commandHelp = help.code === 0 ? help : await cli(words[0] ?? '', '--help');
      expect(commandHelp.code, `template-registry ${args.join(' ')}: ${commandHelp.stderr}`).toBe(0);
      for (const flag of args.filter((arg) => arg.startsWith('--'))) expect(commandHelp.stdout, `template-registry ${args.join(' ')}`).toContain(flag);
    }
  });
});

describe('the documentation', () => {
  it('links only to files of the repository that exist', async () => {
    const files = ['README.md', ...(await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
    const broken: string[] = [];
    for (const file of files) {
      for (const target of await relativeLinks(file)) {
        const resolved = path.resolve(ROOT, path.dirname(file), target);
        if (path.relative(ROOT, resolved).startsWith('..') || !existsSync(resolved)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
