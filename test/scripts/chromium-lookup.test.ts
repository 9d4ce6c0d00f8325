import { spawnSync } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';

import { describe, expect, it } from 'vitest';

import { findChromium, NO_CHROMIUM_NOTICE, type ChromiumLookup } from '../helpers/browser.js';

/** A machine whose executables are `files`, with `env`, and Playwright's browser at `downloaded`. */
function machine(env: Record<string, string>, files: string[], downloaded?: string): ChromiumLookup {
  return { env, isExecutable: (file) => files.includes(file), playwrightPath: () => downloaded };
}

describe('finding Chromium for the browser tests', () => {
  it('takes CHROMIUM_PATH first', () => {
    expect(findChromium(machine({ CHROMIUM_PATH: '/opt/chrome/chrome', PATH: '/usr/bin' }, ['/opt/chrome/chrome', '/usr/bin/chromium']))).toBe('/opt/chrome/chrome');
  });

  it('refuses a CHROMIUM_PATH that names no executable, naming the variable', () => {
    expect(() => findChromium(machine({ CHROMIUM_PATH: '/nowhere/chrome', PATH: '/usr/bin' }, ['/usr/bin/chromium']))).toThrow(/CHROMIUM_PATH is "\/nowhere\/chrome", which is not an executable/);
  });

  it('then looks on the PATH for chromium, chromium-browser and google-chrome, in that order', () => {
    const env = { PATH: ['/a', '/b'].join(process.platform === 'win32' ? ';' : ':') };
    expect(findChromium(machine(env, ['/b/chromium-browser', '/a/google-chrome']))).toBe('/b/chromium-browser');
    expect(findChromium(machine(env, ['/a/google-chrome'], '/cache/chrome'))).toBe('/a/google-chrome');
  });

  it("then takes Playwright's own browser when it was downloaded, else finds none", () => {
    expect(findChromium(machine({ PATH: '/usr/bin' }, ['/cache/chrome'], '/cache/chrome'))).toBe('/cache/chrome');
    expect(findChromium(machine({ PATH: '/usr/bin' }, [], '/cache/chrome'))).toBeUndefined();
    expect(findChromium(machine({}, []))).toBeUndefined();
  });

  it('skips the browser tests with a notice when there is no Chromium', () => {
    const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', 'test/registry/catalog.browser.test.ts'], {
      encoding: 'utf8',
      env: { ...process.env, CI: 'true', PATH: '/nonexistent', PLAYWRIGHT_BROWSERS_PATH: '/nonexistent', CHROMIUM_PATH: '' },
    });
    expect(run.status, run.stderr).toBe(0);
    const output = stripVTControlCharacters(run.stdout + run.stderr);
    expect(output).toContain(NO_CHROMIUM_NOTICE);
    expect(output).toMatch(/Tests\s+\d+ skipped/);
    expect(output).not.toMatch(/\d+ (passed|failed)/);
  }, 120_000);
});
