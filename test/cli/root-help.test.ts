import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';

describe('template-registry --help', () => {
  it('lists every command with the usage and description the command itself declares', async () => {
    // `help` (commander's help command) loads every command; `--help` lists them from their summaries.
    const loaded = await cli('help');
    const listed = await cli('--help');
    expect(listed.code).toBe(0);
    expect(loaded.code).toBe(0);
    expect(listed.stdout).toBe(loaded.stdout);
    for (const command of ['init', 'validate', 'publish', 'serve', 'token', 'create', 'update', 'check-update', 'build-registry', 'store', 'db']) {
      expect(listed.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    }
  });

  it("still shows one command's own options", async () => {
    const run = await cli('validate', '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: template-registry validate [options] [dir]');
    expect(run.stdout).toContain('--json');
  });
});
