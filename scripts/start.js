#!/usr/bin/env node
// `npm start`: the main job end to end on the embedded default. It starts a registry server on a
// local store, publishes the example template through the publish pipeline (validate,
// test-generate, lint, changelog section, pack, upload: what the action and `publish` run), and
// prints where registry.json and the catalog are; then it serves until Ctrl-C.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { publishProgressPrinter, runPublishPipeline } from '../build/src/publish/index.js';
import { createServer } from '../build/src/server/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const storeDir = process.env.REGISTRY_STORE ?? path.join(root, '.template-registry', 'store');
const example = path.join(root, 'examples', 'templates', 'node-service');
const host = process.env.HOST ?? '127.0.0.1';
const port = Number(process.env.PORT ?? 4873);
const publicUrl = process.env.REGISTRY_PUBLIC_URL ?? `http://${host}:${port}`;

const server = await createServer({ store: storeDir, publicUrl });
await server.app.listen({ host, port });
console.log(`registry server on ${publicUrl} (store ${path.relative(root, storeDir)})`);

const { token } = await server.store.tokens.createToken({ role: 'publisher', templates: ['node-service'], owner: 'example' });
const version = JSON.parse(readFileSync(path.join(example, 'template.json'), 'utf8')).version;
let result;
try {
  result = await runPublishPipeline({ templateDir: example, version, registryUrl: publicUrl, token }, publishProgressPrinter((line) => console.log(line)));
} catch (error) {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  await server.app.close();
  process.exit(1);
}
await rm(path.dirname(result.packed.file), { recursive: true, force: true });

const files = path.join(storeDir, 'public');
console.log(`
published node-service@${version}: ${result.upload?.uploaded ? 'uploaded' : 'already in the store with the same integrity'}
  registry.json  ${publicUrl}/registry.json   (file ${path.relative(root, path.join(files, 'registry.json'))})
  catalog        ${publicUrl}/index.html      (file ${path.relative(root, path.join(files, 'index.html'))})
  one template   ${publicUrl}/templates/node-service
  archive        ${result.downloadUrl}
  API            ${publicUrl}/openapi.json

Serving until Ctrl-C. Publish more with:
  template-registry token create --role publisher --store ${path.relative(root, storeDir)}
  TEMPLATE_REGISTRY_TOKEN=<token> template-registry publish <template-dir> --registry ${publicUrl}`);

const stop = () => server.app.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
