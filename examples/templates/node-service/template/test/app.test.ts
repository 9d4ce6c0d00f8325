import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { {{ className | remove: "-" }} } from '../src/app.js';
{%- if features contains "auth" %}
import { isAuthorized } from '../src/auth.js';

process.env.API_TOKEN = 'test-token';
{%- endif %}

const server = new {{ className | remove: "-" }}().createServer();
let baseUrl = '';

before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  baseUrl = `http://127.0.0.1:${port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
});

test('GET /health answers 200 with status ok', async () => {
  const res = await fetch(`${baseUrl}/health`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { status: string };
  assert.equal(body.status, 'ok');
});

test('unknown routes answer 404', async () => {
  const res = await fetch(`${baseUrl}/does-not-exist`);
  assert.equal(res.status, 404);
});
{%- if features contains "auth" %}

test('isAuthorized accepts only the configured bearer token', () => {
  assert.equal(isAuthorized('Bearer test-token'), true);
  assert.equal(isAuthorized('Bearer wrong-token'), false);
  assert.equal(isAuthorized('test-token'), false);
  assert.equal(isAuthorized(undefined), false);
});
{%- endif %}
{%- if features contains "api" %}
{%- if features contains "auth" %}

test('GET /api/items without a valid token answers 401', async () => {
  const res = await fetch(`${baseUrl}/api/items`, { headers: { Authorization: 'Bearer wrong-token' } });
  assert.equal(res.status, 401);
});
{%- endif %}

test('POST /api/items creates an item that GET /api/items/:id returns', async () => {
  const headers = { 'Content-Type': 'application/json'{% if features contains "auth" %}, Authorization: 'Bearer test-token'{% endif %} };
  const created = await fetch(`${baseUrl}/api/items`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'first' }),
  });
  assert.equal(created.status, 201);
  const { data } = (await created.json()) as { data: { id: string; name: string } };
  assert.equal(data.name, 'first');

  const fetched = await fetch(`${baseUrl}/api/items/${data.id}`, { headers });
  assert.equal(fetched.status, 200);
});
{%- endif %}
