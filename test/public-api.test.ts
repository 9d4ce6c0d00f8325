import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import * as api from '../src/index.js';
import * as serverApi from '../src/server-package.js';

const exported = api as unknown as Record<string, unknown>;
const serverExported = serverApi as unknown as Record<string, unknown>;

/** What only the server package (template-registry-server) exports: the server, its stores, the registry generator, the GitHub client. */
const SERVER_NAMES = ['buildRegistry', 'buildDocument', 'aggregateAnalytics', 'createServer', 'githubReleasesSource', 'verifyWebhookSignature', 'signWebhookBody', 'signWebhookPayload', 'openSqliteStorage'];

describe('the package roots', () => {
  it('export the public API the issues and the README name: the consumer package, and the server package on top of it', () => {
    const names = [
      'validateTemplate',
      'loadTemplate',
      'resolveAnswers',
      'generateProject',
      'testTemplate',
      'lintTemplate',
      'compareVersions',
      'packTemplate',
      'publishTemplate',
      'runPublishPipeline',
      'buildRegistry',
      'buildDocument',
      'aggregateAnalytics',
      'selectLatest',
      'sortEntries',
      'createServer',
      'RegistryClient',
      'downloadTemplate',
      'checkCompatibility',
      'runMigrations',
      'loadDeclarativeSteps',
      'createProject',
      'migrateProject',
      'githubReleasesSource',
      'schemaErrors',
      'verifyWebhookSignature',
      'signWebhookBody',
      'signWebhookPayload',
      'openSqliteStorage',
      'runCli',
    ];
    expect(names.filter((name) => typeof serverExported[name] !== 'function')).toEqual([]);
    expect(names.filter((name) => !SERVER_NAMES.includes(name) && typeof exported[name] !== 'function')).toEqual([]);
    // The consumer package holds no server: its root exports none of the server's API.
    expect(SERVER_NAMES.filter((name) => name in exported)).toEqual([]);
  });

  it('exports every error class a library call can throw', async () => {
    const classes = new Set<string>();
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(file);
        // The shells (CLI and actions) are not library calls.
        else if (file.endsWith('.ts') && !['cli', 'action', 'registry-action', 'sync-action'].some((shell) => file.startsWith(path.join('src', shell) + path.sep))) {
          for (const match of (await readFile(file, 'utf8')).matchAll(/export class (\w+) extends \w*Error\b/g)) classes.add(match[1] ?? '');
        }
      }
    };
    await walk('src');
    expect(classes.size).toBeGreaterThan(20);
    // Caught inside the client's cache (CachedJson) and turned into its load errors: never reaches a
    // caller (IndexLayoutError, an index.json in neither layout, becomes a FetchFailure there).
    const internal = new Set(['FetchFailure', 'IndexLayoutError']);
    expect([...classes].filter((name) => !internal.has(name) && typeof serverExported[name] !== 'function')).toEqual([]);
  });

  it('keeps internal helpers private', () => {
    for (const name of ['writeFileAtomic', 'readIfExists', 'escapePointerSegment', 'buildIndex', 'isInside', 'run', 'parseInputs', 'consoleCore']) {
      expect(exported[name], name).toBeUndefined();
      expect(serverExported[name], name).toBeUndefined();
    }
  });
});
