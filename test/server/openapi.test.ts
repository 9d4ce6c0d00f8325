/**
 * The OpenAPI document against the running server: every route fastify has is described, and real
 * answers of the read routes validate against the response schema the document gives for their
 * path, method, status and media type (Ajv 2020 with every schemas/*.json plus the document).
 *
 * The document embeds the project's JSON Schemas in components.schemas, so that it stands alone and
 * every tool resolves it with plain JSON pointers: each copy is the file with `$id` / `$schema`
 * replaced by `x-schema-id`, and its `$ref`s (local, or to another file's `$id`) turned into
 * `#/components/schemas/...` pointers. The copies must equal what `embedSchema` makes of the
 * files; after changing a schema, refresh them with
 * `UPDATE_OPENAPI_SCHEMAS=1 npx vitest run test/server/openapi.test.ts`.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';

import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

import { isValidRange } from '../../src/core/index.js';
import { createServer, type RegistryServer } from '../../src/server/app.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { tempDir } from '../helpers/fixtures.js';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

const DOCUMENT_FILE = path.resolve('openapi/openapi.json');
const SCHEMAS_DIR = path.resolve('schemas');
const DOCUMENT_ID = 'urn:template-registry:openapi';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document, walked generically
type Json = Record<string, any>;

const document: Json = JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8'));
const fileSchemas: Json[] = readdirSync(SCHEMAS_DIR)
  .filter((f) => f.endsWith('.schema.json'))
  .sort()
  .map((f) => JSON.parse(readFileSync(path.join(SCHEMAS_DIR, f), 'utf8')) as Json);
const fileSchemaById = new Map(fileSchemas.map((s) => [s.$id as string, s]));

// ---- the document as one Ajv schema resource

function decodePointer(pointer: string): string[] {
  return pointer
    .replace(/^#?\/?/, '')
    .split('/')
    .filter((p) => p !== '')
    .map((p) => decodeURIComponent(p).replace(/~1/g, '/').replace(/~0/g, '~'));
}

function resolveLocal(ref: string, root: unknown = document): unknown {
  let node: unknown = root;
  for (const part of decodePointer(ref)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Json)[part];
  }
  return node;
}

/** Every object of a tree, with its pointer. */
function* walk(node: unknown, at = '#'): Generator<[string, Json]> {
  if (node === null || typeof node !== 'object') return;
  yield [at, node];
  for (const [key, value] of Object.entries(node as Json)) yield* walk(value, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
}

/** Component name of each embedded file schema, by the file's `$id`. */
function embeddedNames(): Map<string, string> {
  const names = new Map<string, string>();
  for (const [name, schema] of Object.entries(document.components.schemas as Json)) {
    if (typeof schema['x-schema-id'] === 'string') names.set(schema['x-schema-id'], name);
  }
  return names;
}

/** The components.schemas copy of a file schema (see the top of this file). */
function embedSchema(file: Json, names: Map<string, string>): Json {
  const { $schema: _schema, $id, ...rest } = structuredClone(file);
  const copy: Json = { 'x-schema-id': $id, ...rest };
  for (const [at, node] of walk(copy)) {
    if (typeof node.$ref !== 'string') continue;
    const [base = '', fragment = ''] = (node.$ref).split('#');
    const target = names.get(base === '' ? ($id as string) : base);
    if (!target) throw new Error(`${String($id)}${at.slice(1)}: $ref ${String(node.$ref)} names a schema that is not embedded`);
    node.$ref = `#/components/schemas/${target}${fragment}`;
  }
  return copy;
}

function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: false, allowUnionTypes: true });
  addFormats(ajv);
  ajv.addFormat('semver-range', { type: 'string', validate: isValidRange });
  for (const schema of fileSchemas) ajv.addSchema(schema);
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  return ajv;
}

let sharedAjv: Ajv2020 | undefined;
const validators = new Map<string, ValidateFunction>();

function validatorAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (!validate) {
    sharedAjv ??= createAjv();
    validate = sharedAjv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

const escape = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** The response object (and its pointer) for a path template, method and status. */
function responseOf(pathTemplate: string, method: string, status: number): { response: Json; pointer: string } {
  const operation = document.paths[pathTemplate]?.[method];
  expect(operation, `${method.toUpperCase()} ${pathTemplate} is not in the document`).toBeDefined();
  const response = (operation as Json).responses[String(status)];
  expect(response, `${method.toUpperCase()} ${pathTemplate} does not document status ${status}`).toBeDefined();
  if (typeof response.$ref === 'string') return { response: resolveLocal(response.$ref) as Json, pointer: response.$ref };
  return { response, pointer: `#/paths/${escape(pathTemplate)}/${method}/responses/${status}` };
}

/** Checks an answer against the document: status, headers and (for JSON) the body schema. */
function expectDocumented(pathTemplate: string, method: string, res: LightMyRequestResponse): void {
  const label = `${method.toUpperCase()} ${pathTemplate} -> ${res.statusCode}`;
  const { response, pointer } = responseOf(pathTemplate, method, res.statusCode);
  const declared = Object.keys(response.headers ?? {}).map((h) => h.toLowerCase());
  for (const header of ['x-request-id', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-ratelimit-window']) {
    expect(res.headers[header], `${label}: header ${header}`).toBeDefined();
    expect(declared, `${label}: ${header} is not documented`).toContain(header);
  }
  for (const header of ['etag', 'cache-control', 'retry-after', 'location', 'content-encoding', 'content-disposition', 'www-authenticate', 'last-modified', 'vary']) {
    if (res.headers[header] !== undefined) expect(declared, `${label}: ${header} is sent but not documented`).toContain(header);
  }
  if (!response.content) {
    expect(res.payload, `${label}: no body documented`).toBe('');
    return;
  }
  const mediaType = String(res.headers['content-type'] ?? '').split(';')[0]!.trim();
  expect(Object.keys(response.content), `${label}: media type ${mediaType}`).toContain(mediaType);
  if (mediaType !== 'application/json') return;
  const validate = validatorAt(`${pointer}/content/application~1json/schema`);
  const encoding = res.headers['content-encoding'];
  const bytes = encoding === 'br' ? brotliDecompressSync(res.rawPayload) : encoding === 'gzip' ? gunzipSync(res.rawPayload) : res.rawPayload;
  const body: unknown = JSON.parse(bytes.toString('utf8'));
  const valid = validate(body);
  expect(valid ? [] : validate.errors, `${label}: body does not match the documented schema`).toEqual([]);
}

// ---- a seeded server

const servers: RegistryServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.app.close()));
});

async function start(readPerMinute = 1000): Promise<RegistryServer> {
  const store = await openSqliteStorage(await tempDir('tr-openapi-'));
  const { record } = await store.tokens.createToken({ role: 'admin' });
  for (const [name, version, stability] of [
    ['web-app', '1.0.0', 'stable'],
    ['web-app', '1.1.0', 'beta'],
    ['cli-tool', '0.1.0', 'experimental'],
  ] as const) {
    const bytes = gzipSync(Buffer.from(`${name}@${version}`));
    const temp = store.versions.uploadTempPath('.tgz');
    await writeFile(temp, bytes);
    await store.versions.reserveVersion(
      {
        name,
        version,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
        owner: record.owner,
      },
      record,
    );
    await store.versions.commitVersion(name, version, temp, {
      name,
      version,
      description: `The ${name} template for the OpenAPI tests`,
      category: 'fullstack',
      stability,
      author: { name: 'Tester', email: 'tester@example.com' },
      keywords: ['demo'],
      features: ['api'],
    });
  }
  const server = await createServer({ store, publicUrl: 'http://registry.test', limits: { readPerMinute } });
  servers.push(server);
  return server;
}

/** Every method and path fastify serves, from printRoutes (HEAD routes fastify adds for GET excluded). */
function fastifyRoutes(app: FastifyInstance): { method: string; url: string }[] {
  const routes: { method: string; url: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([\s│├└─]*?)(\S+) \(([A-Z, ]+)\)$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack[depth - 1] = match[2]!;
    const url = stack.join('');
    for (const method of match[3]!.split(',').map((m) => m.trim())) {
      if (method !== 'HEAD') routes.push({ method, url });
    }
  }
  return routes;
}

const toOpenapiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const toFastifyPath = (template: string): string => template.replace(/\{([^}]+)\}/g, ':$1');

// ---------------------------------------------------------------------------------------------

describe('openapi/openapi.json', () => {
  it('is an OpenAPI 3.1 document whose local references all resolve', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    const broken: string[] = [];
    for (const [at, node] of walk(document)) {
      if (typeof node.$ref !== 'string') continue;
      if (!node.$ref.startsWith('#/')) broken.push(`${at}: ${node.$ref} is not a local pointer`);
      else if (resolveLocal(node.$ref) === undefined) broken.push(`${at}: ${node.$ref}`);
      if (typeof node.$id === 'string') broken.push(`${at}: has an $id (${node.$id}); embedded schemas carry x-schema-id`);
    }
    expect(broken).toEqual([]);
    for (const [template, item] of Object.entries(document.paths as Json)) {
      for (const method of METHODS) {
        const operation = (item as Json)[method] as Json | undefined;
        if (!operation) continue;
        expect(operation.operationId, `${method} ${template}`).toEqual(expect.any(String));
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
        // Every path parameter is declared.
        const declared = [...((item as Json).parameters ?? []), ...(operation.parameters ?? [])]
          .map((p: Json) => (p.$ref ? (resolveLocal(p.$ref as string) as Json) : p))
          .filter((p: Json) => p.in === 'path')
          .map((p: Json) => p.name as string);
        const inTemplate = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
        expect(declared.sort(), `${method} ${template}`).toEqual(inTemplate.sort());
      }
    }
  });

  it('embeds copies of schemas/*.json that equal the files', () => {
    const schemas = document.components.schemas as Json;
    const names = embeddedNames();
    expect(names.size).toBeGreaterThan(0);
    const stale: string[] = [];
    for (const [id, name] of names) {
      const file = fileSchemaById.get(id);
      expect(file, `${name} embeds an unknown schema ${id}`).toBeDefined();
      const copy = embedSchema(file!, names);
      if (JSON.stringify(schemas[name]) !== JSON.stringify(copy)) {
        stale.push(name);
        schemas[name] = copy;
      }
    }
    if (stale.length > 0 && process.env.UPDATE_OPENAPI_SCHEMAS === '1') {
      writeFileSync(DOCUMENT_FILE, `${JSON.stringify(document, null, 2)}\n`);
      return;
    }
    expect(stale, 'refresh with UPDATE_OPENAPI_SCHEMAS=1').toEqual([]);
  });

  it('validates like the files do (the embedded copies are the same rules)', () => {
    // The same bodies, through the file schema and through the document's copy.
    sharedAjv ??= createAjv();
    const now = new Date().toISOString();
    const entry = { id: 'a', name: 'a', version: '1.0.0', description: '', category: 'x', stability: 'stable', downloadUrl: 'u' };
    const samples: Array<[string, unknown, boolean]> = [
      ['error-envelope', { error: { code: 'VALIDATION_ERROR', message: 'm', details: [], requestId: 'r', timestamp: now } }, false],
      ['error-envelope', { error: { code: 'NOT_FOUND', message: 'm', details: [], requestId: 'r', timestamp: now } }, true],
      ['error-envelope', { error: { code: 'RATE_LIMIT_EXCEEDED', message: 'm', requestId: 'r', timestamp: now } }, false],
      ['error-envelope', { error: { code: 'bad code', message: 'm', details: [{ field: 'f', message: 'm', code: 'X' }], requestId: 'r', timestamp: now } }, false],
      ['template-entry', { ...entry, version: '1.0' }, false],
      ['template-entry', { ...entry, compatibility: { platforms: [{ name: 'linux', supported: true }] } }, true],
      ['template-entry', { ...entry, compatibility: { platforms: [{ name: 'linux' }] } }, false],
      ['template-entry', { ...entry, author: {} }, false],
      ['registry-document', { templates: [entry], categories: [{ id: 'x', name: 'X' }], tags: [], lastUpdated: now }, true],
      ['registry-document', { templates: [{ ...entry, stability: 'gold' }], categories: [], tags: [], lastUpdated: now }, false],
    ];
    const names = embeddedNames();
    for (const [file, body, expected] of samples) {
      const id = `https://template-registry.dev/schemas/${file}.schema.json`;
      const label = `${file}: ${JSON.stringify(body)}`;
      expect(sharedAjv.getSchema(id)!(body), label).toBe(expected);
      expect(validatorAt(`#/components/schemas/${names.get(id)!}`)(body), label).toBe(expected);
    }
  });

  it('describes every route the server has, and the server has every route described', async () => {
    const { app } = await start();
    await app.ready();
    const routes = fastifyRoutes(app);
    expect(routes.length).toBeGreaterThanOrEqual(13);
    for (const route of routes) {
      expect(app.hasRoute({ method: route.method, url: route.url }), `parsed ${route.method} ${route.url}`).toBe(true);
      expect(document.paths[toOpenapiPath(route.url)]?.[route.method.toLowerCase()], `${route.method} ${route.url} is not documented`).toBeDefined();
    }
    for (const [template, item] of Object.entries(document.paths as Json)) {
      for (const method of METHODS) {
        if ((item as Json)[method]) expect(app.hasRoute({ method: method.toUpperCase(), url: toFastifyPath(template) }), `${method} ${template} is documented but not served`).toBe(true);
      }
    }
  });

  it('matches the real answers of the read routes', async () => {
    const { app, context } = await start();
    const etag = context.registry().etag;
    const sha256 = context.registry().document.templates.find((e) => e.id === 'web-app' && e.version === '1.0.0')?.sha256;
    const cases: Array<[string, string, { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string> }, number]> = [
      ['/', 'get', { url: '/' }, 200],
      ['/', 'get', { url: '/', headers: { 'if-none-match': etag } }, 304],
      ['/registry.json', 'get', { url: '/registry.json' }, 200],
      ['/registry.json', 'get', { url: '/registry.json', headers: { 'accept-encoding': 'br' } }, 200],
      ['/registry.json', 'get', { url: '/registry.json', headers: { 'if-none-match': etag } }, 304],
      ['/index.html', 'get', { url: '/index.html' }, 200],
      ['/catalog', 'get', { url: '/catalog' }, 200],
      ['/templates', 'get', { url: '/templates' }, 200],
      ['/templates', 'get', { url: '/templates?limit=1&page=2&sort=-name' }, 200],
      ['/templates', 'get', { url: '/templates?cursor=&limit=1' }, 200],
      ['/templates', 'get', { url: '/templates?fields=name,version' }, 200],
      ['/templates', 'get', { url: '/templates?q=web&stability=stable,beta&features=api&category=fullstack' }, 200],
      ['/templates', 'get', { url: '/templates?limit=500' }, 400],
      ['/templates', 'get', { url: '/templates?sort=nope' }, 400],
      ['/templates', 'get', { url: '/templates?cursor=bad' }, 400],
      ['/templates', 'post', { url: '/templates', method: 'POST' }, 401],
      ['/templates/{id}', 'get', { url: '/templates/web-app' }, 200],
      ['/templates/{id}', 'get', { url: '/templates/cli-tool' }, 200],
      ['/templates/{id}', 'get', { url: '/templates/nope' }, 404],
      ['/templates/{id}/versions', 'get', { url: '/templates/web-app/versions' }, 200],
      ['/templates/{id}/versions', 'get', { url: '/templates/nope/versions' }, 404],
      ['/templates/{id}/versions/{version}', 'get', { url: '/templates/web-app/versions/1.1.0' }, 200],
      ['/templates/{id}/versions/{version}', 'get', { url: '/templates/web-app/versions/3.0.0' }, 404],
      ['/templates/{id}/versions/{version}/archive', 'get', { url: '/templates/web-app/versions/1.0.0/archive' }, 200],
      ['/templates/{id}/versions/{version}/archive', 'get', { url: '/templates/web-app/versions/1.0.0/archive', headers: { 'if-none-match': `"${sha256}"` } }, 304],
      ['/templates/{id}/versions/{version}/archive', 'get', { url: '/templates/web-app/versions/9.0.0/archive' }, 404],
      ['/categories', 'get', { url: '/categories' }, 200],
      ['/templates/{id}/analytics', 'get', { url: '/templates/web-app/analytics' }, 200],
      ['/templates/{id}/analytics', 'get', { url: '/templates/web-app/analytics?version=1.0.0' }, 200],
      ['/templates/{id}/analytics', 'get', { url: '/templates/web-app/analytics?version=1.0' }, 400],
      ['/templates/{id}/analytics', 'get', { url: '/templates/nope/analytics' }, 404],
      ['/healthz', 'get', { url: '/healthz' }, 200],
      ['/openapi.json', 'get', { url: '/openapi.json' }, 200],
    ];
    for (const [template, method, request, status] of cases) {
      const res = await app.inject(request);
      expect(res.statusCode, `${request.method ?? 'GET'} ${request.url}`).toBe(status);
      expectDocumented(template, method, res);
    }
    const served = await app.inject({ url: '/openapi.json' });
    expect(served.json().servers).toEqual([{ url: 'http://registry.test', description: expect.any(String) }]);
    expect(served.json().paths).toEqual(document.paths);
    const again = await app.inject({ url: '/openapi.json', headers: { 'if-none-match': String(served.headers.etag) } });
    expect(again.statusCode).toBe(304);
    expectDocumented('/openapi.json', 'get', again);
  });

  it('matches the 429 answer', async () => {
    const { app } = await start(1);
    expect((await app.inject({ url: '/templates' })).statusCode).toBe(200);
    const limited = await app.inject({ url: '/templates' });
    expect(limited.statusCode).toBe(429);
    expectDocumented('/templates', 'get', limited);
  });

  it('a schema violation is caught (the validation is not vacuous)', () => {
    const validate = validatorAt('#/paths/~1templates~1{id}/get/responses/200/content/application~1json/schema');
    expect(validate({ data: { id: 'x' }, meta: { timestamp: new Date().toISOString(), requestId: 'r', version: '1' } })).toBe(false);
    const list = validatorAt('#/paths/~1templates/get/responses/200/content/application~1json/schema');
    expect(list({ data: [], pagination: { page: 2, limit: 20, total: 0, totalPages: 0, hasNext: false, hasPrevious: false } })).toBe(false);
    expect(
      list({ data: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0, hasNext: false, hasPrevious: false }, meta: { timestamp: new Date().toISOString(), requestId: 'r', version: '1' } }),
    ).toBe(true);
  });
});
