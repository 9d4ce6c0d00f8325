import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { tempDir } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const example = path.resolve('examples/templates/node-service');

async function published() {
  const server = await startRegistryServer();
  const pack = await packTemplate(example, { outDir: await tempDir() });
  await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
  return server;
}

const post = (url: string, body: unknown) =>
  fetch(`${url}/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('POST /events', () => {
  it('records a generation event of a published version', async () => {
    const server = await published();
    const response = await post(server.url, {
      type: 'generation',
      templateId: 'node-service',
      version: '1.1.0',
      success: true,
      duration: 120,
      timestamp: new Date().toISOString(),
    });
    expect(response.status).toBe(202);
    expect(((await response.json()) as { data: unknown }).data).toEqual({ accepted: true, type: 'generation' });
    expect(await server.store.events.countEvents('generation')).toBe(1);
  });

  it('refuses an event that breaks the schema, listing the fields', async () => {
    const server = await published();
    const response = await post(server.url, { type: 'generation', templateId: 'node-service', version: '1.1.0', success: true, duration: 1, timestamp: 'yesterday' });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { error: { code: string; details: { field: string }[] } };
    expect(body.error.code).toBe('VALIDATION_ERROR');
    expect(await server.store.events.countEvents()).toBe(0);
  });

  it("names only the fields of the event's own type in its validation details", async () => {
    const server = await published();
    const fieldsOf = async (body: unknown): Promise<string[]> => {
      const response = await post(server.url, body);
      expect(response.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      const answer = (await response.json()) as { error: { code: string; details: { field: string; code: string }[] } };
      expect(answer.error.code).toBe('VALIDATION_ERROR');
      return answer.error.details.map((detail) => `${detail.field} ${detail.code}`).sort();
    };
    const base = { templateId: 'node-service', version: '1.1.0' };
    // A generation event: its own missing and broken fields, nothing of downloads or feedback.
    expect(await fieldsOf({ type: 'generation', ...base, timestamp: 'yesterday' })).toEqual(['duration REQUIRED', 'success REQUIRED', 'timestamp FORMAT']);
    // A feedback event: its rating out of range and a field it does not have, named.
    expect(await fieldsOf({ type: 'feedback', ...base, rating: 9, comment: 'ok', userId: 'u1', mood: 'happy' })).toEqual(['mood UNKNOWN_FIELD', 'rating MAXIMUM']);
    // A download event carrying a feedback field: that field, as unknown to downloads.
    expect(await fieldsOf({ type: 'download', ...base, timestamp: new Date().toISOString(), userAgent: 'curl', platform: 'linux', comment: 'hi' })).toEqual(['comment UNKNOWN_FIELD']);
    // No type, or one the spec does not have: only `type`.
    expect(await fieldsOf({ ...base, success: true })).toEqual(['type REQUIRED']);
    expect(await fieldsOf({ type: 'install', ...base })).toEqual(['type ENUM']);
    expect(await server.store.events.countEvents()).toBe(0);
  });

  it('stamps a feedback event sent without a timestamp with the time the server received it', async () => {
    const server = await published();
    const before = Date.now();
    const response = await post(server.url, { type: 'feedback', templateId: 'node-service', version: '1.1.0', rating: 5, comment: 'Nice', userId: 'u1' });
    expect(response.status).toBe(202);
    const [recorded] = await server.store.events.listEvents({ type: 'feedback' });
    expect(recorded?.receivedAt).toBeDefined();
    expect(recorded?.event.timestamp).toBe(recorded?.receivedAt);
    expect(Date.parse(recorded!.receivedAt!)).toBeGreaterThanOrEqual(before);
  });

  it('refuses an event of a version that is not published', async () => {
    const server = await published();
    const response = await post(server.url, {
      type: 'generation',
      templateId: 'node-service',
      version: '9.9.9',
      success: false,
      duration: 1,
      timestamp: new Date().toISOString(),
    });
    expect(response.status).toBe(404);
  });
});
