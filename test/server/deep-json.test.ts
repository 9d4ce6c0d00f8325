/**
 * JSON nested deeper than the server takes (MAX_JSON_DEPTH) is a 4xx on every
 * route, whatever carries it: a JSON body (batch included, whose operations' bodies are re-sent),
 * a multipart part (the manifest, the metadata of a staged file; sent as text or as application/json),
 * the template.json inside an archive. Never a 500 from a stack exhausted by walking it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { MAX_JSON_DEPTH, nestsDeeperThan, valueNestsDeeperThan } from '../../src/server/json-input.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { multipartBody } from '../helpers/multipart.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document, walked generically
const document: Record<string, any> = JSON.parse(readFileSync(path.resolve('openapi/openapi.json'), 'utf8'));

/** Arrays nested `depth` deep: small in bytes, far past any stack when walked recursively. */
const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const DEEP = nested(200_000);

/** Every documented operation that takes a JSON body, with a URL for it. */
function jsonOperations(): { method: string; url: string }[] {
  const operations: { method: string; url: string }[] = [];
  for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>>)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!operation.requestBody?.content?.['application/json']) continue;
      const url = template.replace('{version}', '1.0.0').replace('{fileId}', '00000000-0000-4000-8000-000000000000').replace(/\{[^}]+\}/g, 'x');
      operations.push({ method: method.toUpperCase(), url });
    }
  }
  return operations;
}

describe('a deeply nested JSON body', () => {
  it('is a 400 MAX_DEPTH on every route, batch and multipart parts included', async () => {
    const server = await startRegistryServer();
    const { token: admin } = await server.store.tokens.createToken({ role: 'admin' });
    const operations = jsonOperations();
    expect(operations.length).toBeGreaterThanOrEqual(12);
    const bodies = [
      { method: 'POST', url: '/templates/batch', payload: `{"operations":[{"method":"PATCH","path":"/templates/bulk","body":${DEEP}}]}` },
      { method: 'POST', url: '/templates/batch', payload: `{"operations":[{"method":"PATCH","path":"/templates/x/versions/1.0.0","body":{"stability":${DEEP}}}]}` },
      ...operations.map(({ method, url }) => ({ method, url, payload: `{"a":${DEEP}}` })),
    ];
    for (const { method, url, payload } of bodies) {
      const res = await server.app.inject({ method: method as 'POST', url, payload, headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` } });
      expect(res.statusCode, `${method} ${url}: ${res.body.slice(0, 300)}`).toBe(400);
      expect(res.json().error.details, `${method} ${url}`).toContainEqual(expect.objectContaining({ code: 'MAX_DEPTH' }));
    }

    const deepObject = `{"name":"x","a":${DEEP}}`;
    for (const type of ['application/json', 'text/plain']) {
      const manifest = multipartBody([
        { name: 'manifest', type, body: deepObject },
        { name: 'template', filename: 't.tgz', type: 'application/gzip', body: 'xx' },
      ]);
      const published = await server.app.inject({ method: 'POST', url: '/templates', payload: manifest.payload, headers: { 'content-type': manifest.type, authorization: `Bearer ${server.token}` } });
      expect(published.statusCode, `manifest as ${type}: ${published.body.slice(0, 300)}`).toBe(400);
      expect(published.json().error.details).toContainEqual(expect.objectContaining({ field: 'manifest', code: 'MAX_DEPTH' }));

      const metadata = multipartBody([
        { name: 'file', filename: 't.tgz', type: 'application/gzip', body: 'xx' },
        { name: 'metadata', type, body: deepObject },
      ]);
      const staged = await server.app.inject({ method: 'POST', url: '/files', payload: metadata.payload, headers: { 'content-type': metadata.type, authorization: `Bearer ${server.token}` } });
      expect(staged.statusCode, `metadata as ${type}: ${staged.body.slice(0, 300)}`).toBe(400);
      expect(staged.json().error.details).toContainEqual(expect.objectContaining({ field: 'metadata', code: 'MAX_DEPTH' }));
    }
  });

  it('is measured by brackets outside strings, up to MAX_JSON_DEPTH levels accepted', () => {
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestsDeeperThan(`{"a":"${'['.repeat(1000)}\\"${'{'.repeat(1000)}"}`)).toBe(false);
    expect(valueNestsDeeperThan(JSON.parse(nested(MAX_JSON_DEPTH)))).toBe(false);
    expect(valueNestsDeeperThan(JSON.parse(nested(MAX_JSON_DEPTH + 1)))).toBe(true);
  });
});
