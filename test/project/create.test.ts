import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { IntegrityError } from '../../src/client/index.js';
import { AnswersFileError, createProject, TemplateNotFoundError, type CreateProjectResult } from '../../src/project/index.js';
import { AnswersError, OutputNotEmptyError, PromptCancelledError, TemplateLoadError, type TemplateLock } from '../../src/template/index.js';
import { tempDir, validVariables } from '../helpers/fixtures.js';
import { memoryRegistry, REGISTRY_URL, TEMPLATE_ID } from './registry.js';

/** A clock that moves 250 ms each time it is read. */
function steppingClock(): () => Date {
  let ms = Date.parse('2026-03-01T12:00:00.000Z');
  return () => new Date((ms += 250));
}

/** Runs `work` with a fresh TMPDIR, and lists what it left there (the temp download folder must go). */
async function leftInTmp(work: () => Promise<unknown>): Promise<{ outcome: unknown; left: string[] }> {
  const tmp = await tempDir('tr-tmpdir-');
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  try {
    const outcome = await work().catch((error: unknown) => error);
    return { outcome, left: await readdir(tmp) };
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

describe('createProject', () => {
  it('generates the version the registry selects, records its source in the lock, and reports the generation', async () => {
    const registry = await memoryRegistry();
    const dir = path.join(await tempDir(), 'app');
    const { outcome, left } = await leftInTmp(() =>
      createProject({ client: registry.client, id: TEMPLATE_ID, dir, set: ['projectName=shop'], fetch: registry.fetch, now: steppingClock() }),
    );
    expect(left).toEqual([]);
    const result = outcome as CreateProjectResult;

    expect(result.entry.version).toBe('1.1.0');
    expect(result.project.outDir).toBe(dir);
    expect(await readFile(path.join(dir, 'README.md'), 'utf8')).toBe('# shop\n');
    const lock = JSON.parse(await readFile(path.join(dir, '.template-lock.json'), 'utf8')) as TemplateLock;
    expect(lock.template).toMatchObject({ name: TEMPLATE_ID, version: '1.1.0', source: `${REGISTRY_URL}#${TEMPLATE_ID}@1.1.0` });
    expect(result.event).toEqual({ delivered: true, status: 201 });
    expect(registry.events).toEqual([
      { type: 'generation', templateId: TEMPLATE_ID, version: '1.1.0', success: true, duration: 250, timestamp: '2026-03-01T12:00:00.500Z' },
    ]);
  });

  it('takes an exact version', async () => {
    const registry = await memoryRegistry();
    const dir = path.join(await tempDir(), 'app');
    const result = await createProject({ client: registry.client, id: TEMPLATE_ID, version: '1.0.0', dir, fetch: registry.fetch });
    expect(result.entry.version).toBe('1.0.0');
    expect(existsSync(path.join(dir, 'NOTES.md'))).toBe(false);
  });

  it('sends no event when the user asked not to be tracked', async () => {
    const registry = await memoryRegistry();
    const result = await createProject({ client: registry.client, id: TEMPLATE_ID, dir: path.join(await tempDir(), 'app'), doNotTrack: true, fetch: registry.fetch });
    expect(result.event).toEqual({ delivered: false, skipped: true });
    expect(registry.requests.filter((request) => request.includes('/events'))).toEqual([]);
  });

  it('creates the project from a static registry, which has no events route', async () => {
    const registry = await memoryRegistry({ acceptsEvents: false });
    const result = await createProject({ client: registry.client, id: TEMPLATE_ID, dir: path.join(await tempDir(), 'app'), fetch: registry.fetch });
    expect(result.event).toEqual({ delivered: false, status: 404 });
    expect(result.project.files.length).toBeGreaterThan(0);
  });

  it('collects the answers: the object, then the answers file, then the set pairs, then what ask adds', async () => {
    const registry = await memoryRegistry();
    const answersFile = path.join(await tempDir(), 'answers.json');
    await writeFile(answersFile, JSON.stringify({ projectName: 'from-file', description: 'from the file' }));
    const asked: unknown[] = [];
    const result = await createProject({
      client: registry.client,
      id: TEMPLATE_ID,
      dir: path.join(await tempDir(), 'app'),
      answers: { projectName: 'from-object', description: 'from the object', features: ['testing'] },
      answersFile,
      set: ['projectName=from-set'],
      ask: (template, given) => {
        asked.push({ template: template.manifest.name, given });
        return Promise.resolve({ ...given, description: 'asked' });
      },
      fetch: registry.fetch,
    });
    expect(asked).toEqual([{ template: TEMPLATE_ID, given: { projectName: 'from-set', description: 'from the file', features: ['testing'] } }]);
    expect(result.project.answers).toMatchObject({ projectName: 'from-set', description: 'asked', features: ['testing'] });
  });

  it('reports a failed generation once the template is loaded, cleans up, and throws the cause', async () => {
    const registry = await memoryRegistry();
    const dir = path.join(await tempDir(), 'app');
    const cancelled = new PromptCancelledError();
    const { outcome, left } = await leftInTmp(() =>
      createProject({ client: registry.client, id: TEMPLATE_ID, dir, ask: () => Promise.reject(cancelled), fetch: registry.fetch, now: steppingClock() }),
    );
    expect(outcome).toBe(cancelled);
    expect(registry.events).toEqual([expect.objectContaining({ type: 'generation', success: false, version: '1.1.0', duration: 250 })]);
    expect(existsSync(dir)).toBe(false);
    expect(left).toEqual([]);
  });

  it.each([
    ['an unreadable answers file', { answersFile: '/nonexistent/answers.json' }, AnswersFileError, /^cannot read \/nonexistent\/answers\.json$/],
    ['an answer the template refuses', { set: ['projectName=Not Valid'] }, AnswersError, /projectName/],
  ])('throws for %s, as a failed generation', async (_what, given, type, message) => {
    const registry = await memoryRegistry();
    const error = await createProject({ client: registry.client, id: TEMPLATE_ID, dir: path.join(await tempDir(), 'app'), ...given, fetch: registry.fetch }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toMatch(message);
    expect(registry.events).toEqual([expect.objectContaining({ success: false })]);
  });

  it.each(['^(a|a)*$', '^(b|b)*$', '^(a+)+$'])('refuses a template from the registry whose validation pattern %s can backtrack catastrophically, before any answer is matched', async (pattern) => {
    // Packed and listed as any registry would (nothing upstream checked it); the consumer is the last line.
    const evil = { ...validVariables, variables: { ...validVariables.variables, projectName: { type: 'string', default: `${'a'.repeat(40)}!`, validation: pattern } } };
    const registry = await memoryRegistry({ files: { 'template.vars.json': evil } });
    const dir = path.join(await tempDir(), 'app');
    const error = await createProject({ client: registry.client, id: TEMPLATE_ID, dir, fetch: registry.fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TemplateLoadError);
    expect((error as Error).message).toContain(`template.vars.json:`);
    expect((error as Error).message).toContain(`validation of variable "projectName" ${JSON.stringify(pattern)} is refused: it is prone to catastrophic backtracking`);
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses a folder that is not empty unless forced', async () => {
    const registry = await memoryRegistry();
    const dir = await tempDir();
    await writeFile(path.join(dir, 'mine.txt'), 'mine');
    await expect(createProject({ client: registry.client, id: TEMPLATE_ID, dir, fetch: registry.fetch })).rejects.toBeInstanceOf(OutputNotEmptyError);
    // The temp folder's name is no valid projectName: it is given instead.
    const forced = await createProject({ client: registry.client, id: TEMPLATE_ID, dir, force: true, set: ['projectName=app'], fetch: registry.fetch });
    expect(forced.project.outDir).toBe(dir);
    expect(await readFile(path.join(dir, 'mine.txt'), 'utf8')).toBe('mine');
  });

  it('throws TemplateNotFoundError, downloading nothing, for an id or version the registry does not have', async () => {
    const registry = await memoryRegistry();
    for (const [id, version, message] of [
      ['nope', undefined, 'template nope not found in the registry'],
      [TEMPLATE_ID, '9.9.9', `template ${TEMPLATE_ID}@9.9.9 not found in the registry`],
    ] as const) {
      const error = await createProject({ client: registry.client, id, ...(version ? { version } : {}), fetch: registry.fetch }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TemplateNotFoundError);
      expect((error as Error).message).toBe(message);
    }
    expect(registry.requests).toEqual([`GET ${REGISTRY_URL}`]);
  });

  it('sends no event when the download fails: no template was used', async () => {
    const registry = await memoryRegistry();
    const tampered: typeof globalThis.fetch = async (input, init) => {
      const response = await registry.fetch(input, init);
      if (!response.headers.get('content-type')?.includes('gzip')) return response;
      const bytes = Buffer.from(await response.arrayBuffer());
      bytes[bytes.length - 10] = (bytes[bytes.length - 10] as number) ^ 0xff;
      return new Response(bytes);
    };
    const dir = path.join(await tempDir(), 'app');
    const { outcome, left } = await leftInTmp(() => createProject({ client: registry.client, id: TEMPLATE_ID, dir, fetch: tampered }));
    expect(outcome).toBeInstanceOf(IntegrityError);
    expect(registry.events).toEqual([]);
    expect(existsSync(dir)).toBe(false);
    expect(left).toEqual([]);
  });
});
