#!/usr/bin/env node
// `npm start`: the main job end to end on the embedded default. It starts a registry server on a
// local store, publishes the example template through the publish pipeline (validate,
// test-generate, lint, changelog section, pack, upload: what the action and `publish` run), and
// prints where registry.json and the catalog are and how a consumer uses them; then it serves
// until Ctrl-C.
//
// Environment: PORT (default 4873) and HOST (default 127.0.0.1) say where it listens,
// REGISTRY_STORE the store folder, REGISTRY_PUBLIC_URL the address it gives in URLs.
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { publishProgressPrinter, runPublishPipeline, uploadProgressLine } from '../build/src/publish/index.js';
import { createServer } from '../build/src/server/index.js';

const DEFAULT_PORT = 4873;
const DEFAULT_HOST = '127.0.0.1';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const storeDir = process.env.REGISTRY_STORE ?? path.join(root, '.template-registry', 'store');
const example = path.join(root, 'examples', 'templates', 'node-service');
const host = process.env.HOST || DEFAULT_HOST;
const portText = process.env.PORT || String(DEFAULT_PORT);

/** Ends the run with one line on stderr and no stack: what went wrong and what to do. */
function fail(message) {
  console.error(message);
  process.exit(1);
}

if (!/^\d+$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
  fail(`PORT must be a port number from 1 to 65535 (got ${JSON.stringify(portText)}), e.g. PORT=${DEFAULT_PORT} npm start`);
}
const port = Number(portText);
const otherPort = port === 65535 ? port - 1 : port + 1;
const publicUrl = process.env.REGISTRY_PUBLIC_URL ?? `http://${host}:${port}`;

const server = await createServer({ store: storeDir, publicUrl });
try {
  await server.app.listen({ host, port });
} catch (error) {
  await server.app.close();
  if (error?.code === 'EADDRINUSE') {
    fail(`port ${port} on ${host} is in use: set PORT (and HOST) to run elsewhere, e.g. PORT=${otherPort} npm start`);
  }
  if (error?.code === 'EADDRNOTAVAIL' || error?.code === 'ENOTFOUND' || error?.code === 'EAI_AGAIN') {
    fail(`cannot listen on HOST ${host} (${error.code}): set HOST to an address of this machine, e.g. HOST=127.0.0.1 npm start`);
  }
  if (error?.code === 'EACCES') fail(`no permission to listen on port ${port} of ${host}: set PORT above 1023, e.g. PORT=${DEFAULT_PORT} npm start`);
  fail(`cannot listen on ${host}:${port}: ${error instanceof Error ? error.message : String(error)}`);
}
console.log(`registry server on ${publicUrl} (store ${path.relative(root, storeDir)})`);
console.log(`  PORT=${port} and HOST=${host} say where it listens: set them to run elsewhere, e.g. PORT=${otherPort} npm start`);
console.log('  REGISTRY_STORE is the store folder, REGISTRY_PUBLIC_URL the address given in URLs');

const { token } = await server.store.tokens.createToken({ role: 'publisher', templates: ['node-service'], owner: 'example' });
const manifest = JSON.parse(readFileSync(path.join(example, 'template.json'), 'utf8'));
const { version } = manifest;
// On a terminal the upload shows its progress in place; in a pipe or a log, only the step lines.
const progress = uploadProgressLine(process.stdout);
let result;
try {
  result = await runPublishPipeline(
    { templateDir: example, version, registryUrl: publicUrl, token },
    publishProgressPrinter((line) => console.log(line), progress ? { progress } : {}),
  );
} catch (error) {
  progress?.clear();
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  await server.app.close();
  process.exit(1);
}
progress?.clear();
await rm(path.dirname(result.packed.file), { recursive: true, force: true });

const files = path.join(storeDir, 'public');
const store = path.relative(root, storeDir);
console.log(`
published ${manifest.name}@${version}: ${result.upload?.uploaded ? 'uploaded' : 'already in the store with the same integrity'}
  registry.json  ${publicUrl}/registry.json   (file ${path.relative(root, path.join(files, 'registry.json'))})
  catalog        ${publicUrl}/index.html      (file ${path.relative(root, path.join(files, 'index.html'))})
  one template   ${publicUrl}/templates/${manifest.name}
  archive        ${result.downloadUrl}
  API            ${publicUrl}/openapi.json

Publish more with:
  template-registry token create --role publisher --store ${store}
  TEMPLATE_REGISTRY_TOKEN=<token> template-registry publish <template-dir> --registry ${publicUrl}

Serving until Ctrl-C. Use it from another terminal (in this folder, or wherever template-registry is installed):
  export TEMPLATE_REGISTRY_URL=${publicUrl}/registry.json
  npx template-registry list
  npx template-registry create ${manifest.name} my-app
  npx template-registry check-update --project my-app    # later: is there a newer version?
  npx template-registry update --project my-app          # bring it in, keeping your changes`);

const stop = () => server.app.close().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
