/**
 * A real browser for tests: a Chromium found on this machine (`findChromium`), driven by
 * playwright-core (which never downloads a browser of its own). One browser per test file; a page per
 * test, watched for errors. A test file without a browser skips itself (`browserTests`).
 */
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { describe } from 'vitest';

/** The names a Chromium goes by on the PATH, in the order they are tried. */
export const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome'] as const;

/** Where the machine is looked at: its environment, which files are executable, and Playwright's own browser path. */
export interface ChromiumLookup {
  env: Readonly<Record<string, string | undefined>>;
  isExecutable: (file: string) => boolean;
  playwrightPath: () => string | undefined;
}

const machine: ChromiumLookup = {
  env: process.env,
  isExecutable: (file) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  },
  playwrightPath: () => {
    try {
      return chromium.executablePath();
    } catch {
      // no browser build for this platform
      return undefined;
    }
  },
};

/**
 * The Chromium the browser tests run: `CHROMIUM_PATH` when set (an error when it names no
 * executable: that browser was asked for), else the first of chromium, chromium-browser and
 * google-chrome on the PATH, else the browser Playwright downloaded (`npx playwright install
 * chromium`), else undefined.
 */
export function findChromium(lookup: ChromiumLookup = machine): string | undefined {
  const given = lookup.env.CHROMIUM_PATH?.trim();
  if (given) {
    if (!lookup.isExecutable(given)) throw new Error(`CHROMIUM_PATH is ${JSON.stringify(given)}, which is not an executable file: point it at a Chromium, or unset it to look on the PATH`);
    return given;
  }
  const dirs = (lookup.env.PATH ?? '').split(path.delimiter).filter((dir) => dir !== '');
  for (const name of CHROMIUM_NAMES) {
    for (const dir of dirs) {
      const file = path.join(dir, name);
      if (lookup.isExecutable(file)) return file;
    }
  }
  const downloaded = lookup.playwrightPath();
  return downloaded && lookup.isExecutable(downloaded) ? downloaded : undefined;
}

/** What a run without a browser prints, once per test file it skips. */
export const NO_CHROMIUM_NOTICE =
  'skipping the browser tests: no Chromium found (set CHROMIUM_PATH, put chromium, chromium-browser or google-chrome on the PATH, or run `npx playwright install chromium`)';

const found = findChromium();

/** `describe`, or `describe.skip` with a printed notice when this machine has no Chromium. */
export function browserTests(name: string, body: () => void): void {
  if (found === undefined) {
    console.warn(`${name}: ${NO_CHROMIUM_NOTICE}`);
    describe.skip(name, body);
  } else {
    describe(name, body);
  }
}

/** The launch flags of DEVELOPERS.md: headless, no sandbox (containers), nothing that phones home. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches the Chromium `findChromium` found (a fresh temp profile each time, outside the repository). */
export async function launchBrowser(): Promise<Browser> {
  if (found === undefined) throw new Error(NO_CHROMIUM_NOTICE);
  return chromium.launch({ executablePath: found, args: CHROMIUM_FLAGS, headless: true });
}

export interface PageProblems {
  /** Console errors and warnings (CSP violations are reported there), uncaught exceptions, failed requests. */
  list: string[];
}

/**
 * Records everything that went wrong on `page`: console errors, uncaught exceptions, CSP violations
 * (also caught by a listener installed before any script of the page runs) and failed requests.
 */
export async function watchProblems(page: Page): Promise<PageProblems> {
  const problems: PageProblems = { list: [] };
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.list.push(`console ${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.list.push(`uncaught: ${error.message}`));
  page.on('requestfailed', (request) => problems.list.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`));
  await page.exposeFunction('__reportProblem', (text: string) => problems.list.push(text));
  await page.addInitScript({
    content: "addEventListener('securitypolicyviolation', (e) => window.__reportProblem('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI));",
  });
  return problems;
}

const normalized = (text: string | null): string => (text ?? '').replace(/\s+/g, ' ').trim();

/** The text of the (first) element, white space collapsed as a reader sees it. */
export async function textOf(locator: Locator): Promise<string> {
  return normalized(await locator.first().textContent());
}

/** The texts of every element, white space collapsed. */
export async function textsOf(locator: Locator): Promise<string[]> {
  return (await locator.allTextContents()).map(normalized);
}

/** What has the keyboard focus: its tag name and its id, else its text (`H2 node-api1.0.0`, `INPUT q`). */
export async function focusedOf(page: Page): Promise<string> {
  return page.evaluate<string>(
    "(() => { const e = document.activeElement; return e ? e.tagName + ' ' + (e.id || e.textContent || '').replace(/\\s+/g, ' ').trim() : ''; })()",
  );
}
