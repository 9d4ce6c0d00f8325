import { readdir } from 'node:fs/promises';

import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

import { LAYERS } from '../../eslint.boundaries.js';

/** Lints `code` as if it were the file `filePath` of the project, with the project's own config. */
async function lintAs(filePath: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: process.cwd() });
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'boundaries/dependencies').map((m) => m.message);
}

// The first lint builds the typed program of the whole project: tens of seconds on a busy 2-core machine.
describe('the layers of src/ (ARCHITECTURE.md)', { timeout: 180_000 }, () => {
  it('fails lint when a folder imports one it may not (src/client importing src/server)', async () => {
    const messages = await lintAs('src/client/registry-client.ts', "export { createServer } from '../server/app.js';\n");
    expect(messages).toEqual([expect.stringMatching(/src\/client may not import src\/server/)]);
  });

  it('lets a folder import the ones it may (src/client importing src/core)', async () => {
    expect(await lintAs('src/client/registry-client.ts', "export { compareVersions } from '../core/versions.js';\n")).toEqual([]);
  });

  it('keeps src/core free of every other folder', async () => {
    expect(await lintAs('src/core/listing.ts', "export { RegistryClient } from '../client/registry-client.js';\n")).toEqual([
      expect.stringMatching(/src\/core may not import src\/client/),
    ]);
  });

  it('names every folder of src/ in the layer table', async () => {
    const folders = (await readdir('src', { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(folders.filter((name) => !(name in LAYERS))).toEqual([]);
  });
});
