import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import * as api from '../src/index.js';

const exported = api as unknown as Record<string, unknown>;

describe('the package root', () => {
  it('exports the public API the issues and the README name', () => {
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
    expect(names.filter((name) => typeof exported[name] !== 'function')).toEqual([]);
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
    expect([...classes].filter((name) => !internal.has(name) && typeof exported[name] !== 'function')).toEqual([]);
  });

  it('keeps internal helpers private', () => {
    for (const name of ['writeFileAtomic', 'readIfExists', 'escapePointerSegment', 'buildIndex', 'isInside', 'run', 'parseInputs', 'consoleCore']) {
      expect(exported[name], name).toBeUndefined();
    }
  });
});
