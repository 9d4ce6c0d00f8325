/** The registry's environment variables are named once (`core/env-names.ts`): the CLI, the publish library and the action refer to the constants. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import * as envNames from '../../src/core/env-names.js';
import { REGISTRY_KEY_ENV, REGISTRY_TOKEN_ENV, REGISTRY_URL_ENV } from '../../src/core/env-names.js';

async function sources(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await sources(file)));
    else if (file.endsWith('.ts')) files.push(file);
  }
  return files;
}

/** The code of a file without its comments (names in comments are documentation). */
const code = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

describe('environment variable names', () => {
  it('are spelled only in core/env-names.ts by the CLI, the publish library and the action', async () => {
    const names = [REGISTRY_URL_ENV, REGISTRY_TOKEN_ENV, REGISTRY_KEY_ENV];
    expect(names).toEqual(['TEMPLATE_REGISTRY_URL', 'TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_KEY']);
    const spelled: string[] = [];
    for (const folder of ['src/cli', 'src/publish', 'src/action']) {
      for (const file of await sources(folder)) {
        const text = code(await readFile(file, 'utf8'));
        for (const name of names) if (new RegExp(`\\b${name}\\b`).test(text)) spelled.push(`${file}: ${name}`);
      }
    }
    expect(spelled).toEqual([]);
  });

  it('every TEMPLATE_REGISTRY_* variable the CLI, the client and the catalog read or name is a constant of core/env-names.ts', async () => {
    const names = Object.values(envNames);
    expect(names).toEqual(
      expect.arrayContaining([
        'TEMPLATE_REGISTRY_CACHE',
        'TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES',
        'TEMPLATE_REGISTRY_MODE',
        'TEMPLATE_REGISTRY_PROVENANCE',
        'TEMPLATE_REGISTRY_PROVENANCE_REQUIRE',
        'TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT',
      ]),
    );
    const spelled: string[] = [];
    for (const folder of ['src/cli', 'src/client', 'src/catalog', 'src/publish', 'src/action', 'src/project', 'src/sync-action']) {
      for (const file of await sources(folder)) {
        for (const match of code(await readFile(file, 'utf8')).matchAll(/\bTEMPLATE_REGISTRY_[A-Z0-9_]+\b/g)) spelled.push(`${file}: ${match[0]}`);
      }
    }
    expect(spelled).toEqual([]);
  });
});
