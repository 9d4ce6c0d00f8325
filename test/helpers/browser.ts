/**
 * A real browser for tests: Debian's chromium driven by playwright-core (which never downloads a
 * browser of its own). One browser per test file; a page per test, watched for errors.
 */
import { existsSync } from 'node:fs';

import { chromium, type Browser, type Locator, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

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

/** Launches chromium (a fresh temp profile each time); fails with what to install when it is missing. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `the browser tests need Debian's chromium at ${CHROMIUM_PATH}, which is missing: install it with \`apt-get install -y chromium\` (.ci/run does it in CI)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_FLAGS, headless: true });
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
