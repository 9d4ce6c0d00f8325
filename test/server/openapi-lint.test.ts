/**
 * openapi/openapi.json under the linters of others: `spectral lint` with the repository's ruleset
 * (.spectral.yaml: spectral:oas) and `redocly lint` with its configuration (redocly.yaml: Redocly's
 * recommended rules; .redocly.lint-ignore.yaml) report no error and no warning. A rule that is wrong
 * for this document is changed in those files, narrowly and with the reason in a comment.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const SPECTRAL = path.resolve('node_modules/.bin/spectral');
const REDOCLY = path.resolve('node_modules/@redocly/cli/bin/cli.js');

interface Finding {
  code: string;
  message: string;
  path: string[];
  severity: number;
}

/** Exit status 1 only means the linter found something: its output is the answer. */
const findingsOnExit1 = (error: Error & { stdout?: string; code?: number }): { stdout: string } => {
  if (error.code === 1 && typeof error.stdout === 'string') return { stdout: error.stdout };
  throw error;
};

/** Spectral's findings (JSON output) for a document; severity 0 error, 1 warning, 2 info, 3 hint. */
async function spectral(document: string): Promise<Finding[]> {
  const result = await run(SPECTRAL, ['lint', document, '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet', '--fail-severity', 'error'], { maxBuffer: 16 * 1024 * 1024 }).catch(findingsOnExit1);
  const text = result.stdout.trim();
  return text === '' ? [] : (JSON.parse(text) as Finding[]);
}

interface RedoclyProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}

/** Redocly's problems (JSON output) for a document, with redocly.yaml and its ignore file. */
async function redocly(document: string): Promise<RedoclyProblem[]> {
  const result = await run(process.execPath, [REDOCLY, 'lint', document, '--config', 'redocly.yaml', '--format', 'json'], {
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  }).catch(findingsOnExit1);
  return (JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { problems: RedoclyProblem[] }).problems;
}

const label = (f: Finding): string => `${f.code} at ${f.path.join('.')}: ${f.message}`;
const redoclyLabel = (p: RedoclyProblem): string => `${p.ruleId} (${p.severity}) at ${p.location[0]?.pointer ?? '?'}: ${p.message}`;

/** Small documents, each breaking one rule. */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tr-openapi-lint-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const info = { title: 'Broken', version: '1.0', description: 'A document for the lint tests.', contact: { name: 'x' }, license: { name: 'MIT', identifier: 'MIT' } };
const responseOk = { description: 'ok', content: { 'application/json': { schema: { type: 'object' } } } };
const responseNotAllowed = { description: 'not allowed', headers: { Allow: { description: 'methods', schema: { type: 'string' } } } };
const operation = (operationId: string, responses: object): object => ({ operationId, summary: operationId, description: operationId, tags: ['x'], security: [], responses });
async function documentWith(name: string, paths: object): Promise<string> {
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify({ openapi: '3.1.0', info, servers: [{ url: 'https://example.com' }], tags: [{ name: 'x', description: 'x' }], security: [], paths }));
  return file;
}

describe('openapi/openapi.json under spectral:oas (.spectral.yaml)', () => {
  it('has no error and no warning', async () => {
    expect((await spectral('openapi/openapi.json')).filter((f) => f.severity <= 1).map(label)).toEqual([]);
  }, 120_000);

  it('finds an error in a broken document (the lint is not vacuous)', async () => {
    // A response without its required description.
    const broken = await documentWith('broken', { '/x': { get: { operationId: 'x', responses: { '200': {} } } } });
    expect((await spectral(broken)).filter((f) => f.severity === 0).map((f) => f.code)).toContain('oas3-schema');
  }, 120_000);

  it('still wants a success response of every operation but those describing a 405', async () => {
    const file = await documentWith('no-success', {
      '/x': { get: operation('getX', { '404': responseOk }), put: operation('putXNotAllowed', { '405': responseNotAllowed }) },
    });
    const found = (await spectral(file)).filter((f) => f.code === 'operation-success-response-unless-405').map((f) => f.path.join('.'));
    expect(found).toEqual(['paths./x.get.responses']);
  }, 120_000);
});

describe('openapi/openapi.json under Redocly (redocly.yaml)', () => {
  it('has no error and no warning', async () => {
    expect((await redocly('openapi/openapi.json')).map(redoclyLabel)).toEqual([]);
  }, 120_000);

  it('finds an error in a broken document (the lint is not vacuous)', async () => {
    const broken = await documentWith('broken-redocly', { '/x': { get: { operationId: 'x', responses: { '200': {} } } } });
    expect((await redocly(broken)).filter((p) => p.severity === 'error').map((p) => p.ruleId)).toContain('struct');
  }, 120_000);

  it('still wants a success response of every operation but those describing a 405', async () => {
    const file = await documentWith('no-success-redocly', {
      '/x': { get: operation('getX', { '404': responseOk }), put: operation('putXNotAllowed', { '405': responseNotAllowed }) },
    });
    const found = (await redocly(file)).filter((p) => p.ruleId === 'rule/operation-success-response-unless-405').map((p) => p.location[0]?.pointer);
    expect(found).toEqual(['#/paths/~1x/get/responses']);
  }, 120_000);
});
