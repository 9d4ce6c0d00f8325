import { readFile } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';

/** The names listed under `Commands:` in a help text (without commander's own `help`). */
function commandsOf(help: string): string[] {
  const section = help.split('\nCommands:\n')[1] ?? '';
  return [...section.matchAll(/^ {2}([a-z][\w-]*)/gm)].map((match) => match[1] ?? '').filter((name) => name !== 'help');
}

/** The long flags listed under `Options:` in a help text (without `--help`). */
function flagsOf(help: string): string[] {
  const section = (help.split('\nOptions:\n')[1] ?? '').split('\nCommands:\n')[0] ?? '';
  return [...section.matchAll(/^ {2}(?:-\w, )?(--[\w-]+)/gm)].map((match) => match[1] ?? '').filter((flag) => flag !== '--help');
}

/** Every command path (`['token', 'create']`) with its flags, read from the CLI's own --help. */
async function commandTree(path: string[] = []): Promise<{ path: string[]; flags: string[] }[]> {
  const help = await cli(...path, '--help');
  expect(help.code, help.stderr).toBe(0);
  const here = path.length > 0 ? [{ path, flags: flagsOf(help.stdout) }] : [];
  const below = await Promise.all(commandsOf(help.stdout).map((name) => commandTree([...path, name])));
  return [...here, ...below.flat()];
}

describe('docs/cli.md, the CLI reference', () => {
  it('documents every command, subcommand and flag the CLI has', async () => {
    const doc = await readFile('docs/cli.md', 'utf8');
    const tree = await commandTree();
    expect(tree.length).toBeGreaterThan(25);
    const missing: string[] = [];
    for (const { path, flags } of tree) {
      const [top, ...rest] = path;
      // A subcommand is documented on a line of its command: `template-registry token create`, `owner add|rm`.
      const lines = doc.split('\n').filter((line) => line.includes(`template-registry ${top}`));
      if (lines.length === 0) missing.push(path.join(' '));
      else if (rest.length > 0 && !lines.some((line) => new RegExp(`template-registry ${top} (?:[\\w-]+\\|)*${rest.join(' ')}\\b`).test(line))) missing.push(path.join(' '));
      for (const flag of flags) if (!new RegExp(`${flag}(?![\\w-])`).test(doc)) missing.push(`${path.join(' ')} ${flag}`);
    }
    expect(missing).toEqual([]);
  });
});
