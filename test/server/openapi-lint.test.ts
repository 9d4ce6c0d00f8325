/**
 * `spectral lint` of openapi/openapi.json with the repository's ruleset (.spectral.yaml:
 * spectral:oas) reports no error, as `npm run lint:openapi` does in CI.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SPECTRAL = path.resolve('node_modules/.bin/spectral');

interface Finding {
  code: string;
  message: string;
  path: string[];
  severity: number;
}

/** Spectral's findings (JSON output) for a document; exit status 1 only means it found some. */
async function lint(document: string): Promise<Finding[]> {
  const result = await run(SPECTRAL, ['lint', document, '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet', '--fail-severity', 'error'], { maxBuffer: 16 * 1024 * 1024 }).catch(
    (error: { stdout?: string; code?: number }) => {
      if (error.code === 1 && typeof error.stdout === 'string') return { stdout: error.stdout };
      throw error;
    },
  );
  const text = result.stdout.trim();
  return text === '' ? [] : (JSON.parse(text) as Finding[]);
}

describe('openapi/openapi.json under spectral:oas', () => {
  it('has no error', async () => {
    const errors = (await lint('openapi/openapi.json')).filter((f) => f.severity === 0).map((f) => `${f.code} at ${f.path.join('.')}: ${f.message}`);
    expect(errors).toEqual([]);
  }, 120_000);

  it('finds an error in a broken document (the lint is not vacuous)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tr-openapi-lint-'));
    try {
      // A response without its required description.
      const broken = { openapi: '3.1.0', info: { title: 'Broken', version: '1.0' }, paths: { '/x': { get: { operationId: 'x', responses: { '200': {} } } } } };
      await writeFile(path.join(dir, 'broken.json'), JSON.stringify(broken));
      const errors = (await lint(path.join(dir, 'broken.json'))).filter((f) => f.severity === 0).map((f) => f.code);
      expect(errors).toContain('oas3-schema');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
