import { describe, expect, it } from 'vitest';

import * as api from '../src/index.js';

describe('the package root', () => {
  it('exports the public API the issues name', () => {
    const names = [
      'validateTemplate',
      'compareVersions',
      'resolveAnswers',
      'generateProject',
      'testTemplate',
      'lintTemplate',
      'packTemplate',
      'publishTemplate',
      'buildRegistry',
      'createServer',
      'RegistryClient',
      'downloadTemplate',
      'checkCompatibility',
      'runMigrations',
      'loadDeclarativeSteps',
      'githubReleasesSource',
      'runCli',
    ];
    const exported = api as unknown as Record<string, unknown>;
    expect(names.filter((name) => typeof exported[name] !== 'function')).toEqual([]);
  });
});
