/**
 * Runs `template-registry generate` in a real pseudo-terminal (util-linux `script`) and answers
 * its questions with keystrokes, as a user would.
 */
import { execFile, spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

import { tempDir, validManifest, validPrompts, validVariables, writeTemplate } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { publishVersions, TEMPLATE as DEMO } from '../project/versions.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = 'bin/template-registry.js';
const BUILT_ENTRY = path.join(ROOT, 'build/src/cli/index.js');
const TEMPLATE = 'examples/templates/node-service';
const INVALID_NAME = 'Use lower-case letters, digits and hyphens, starting with a letter (for example my-service).';

const KEY = { enter: '\r', down: '\x1b[B', space: ' ', backspace: '\x7f', ctrlC: '\x03' } as const;

/** util-linux `script` (Linux only: the BSD/macOS one takes other arguments). */
const hasScript =
  process.platform === 'linux' && spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout.includes('util-linux');

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, (await stat(path.join(entry.parentPath, entry.name))).mtimeMs);
  }
  return newest;
}

/** Builds the CLI when build/ is missing or older than src/ or schemas/. */
async function buildIfStale(): Promise<void> {
  if (existsSync(BUILT_ENTRY)) {
    const built = (await stat(BUILT_ENTRY)).mtimeMs;
    const sources = Math.max(await newestMtime(path.join(ROOT, 'src')), await newestMtime(path.join(ROOT, 'schemas')));
    if (sources <= built) return;
  }
  await promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT, timeout: 180_000 });
}

/**
 * One CLI run inside a pseudo-terminal: what it printed so far, keystrokes in, exit code out.
 * Keystrokes are sent only once the program has printed what shows it waits for them (a
 * question, or the echo of what was typed): the test waits on output, never on the clock.
 */
class TerminalSession {
  private raw = '';
  private readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number | null>;
  private done = false;
  /** Where in the screen text the last waitFor match ended. */
  private position = 0;
  /** Called on every output chunk and at exit. */
  private readonly listeners = new Set<() => void>();

  constructor(args: readonly string[]) {
    const command = ['stty cols 200 rows 50;', 'node', BIN, ...args.map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`)].join(' ');
    // -q no banner, -f flush each write, -e exit with the command's code, -c the command; log to /dev/null.
    this.child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, TERM: 'xterm-256color', NO_COLOR: '1' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const received = (chunk: Buffer): void => {
      this.raw += chunk.toString('utf8');
      for (const listener of this.listeners) listener();
    };
    this.child.stdout.on('data', received);
    this.child.stderr.on('data', received);
    this.exited = new Promise((resolve, reject) => {
      this.child.on('error', reject);
      this.child.on('close', (code) => {
        this.done = true;
        for (const listener of this.listeners) listener();
        resolve(code);
      });
    });
  }

  /** Everything printed, escape sequences removed. */
  get text(): string {
    return stripVTControlCharacters(this.raw);
  }

  /** Resolves as soon as `expected` is printed after the previous match; rejects if the program exits first or after `timeoutMs`. */
  waitFor(expected: string, timeoutMs = 20_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const finish = (error?: Error): void => {
        this.listeners.delete(check);
        clearTimeout(deadline);
        if (error) reject(error);
        else resolve();
      };
      const fail = (why: string): void => finish(new Error(`${why} ${JSON.stringify(expected)}; the terminal shows:\n${this.text.slice(-2000)}`));
      const check = (): void => {
        const index = this.text.indexOf(expected, this.position);
        if (index >= 0) {
          this.position = index + expected.length;
          finish();
        } else if (this.done) {
          fail('the command exited before printing');
        }
      };
      const deadline = setTimeout(() => fail('timed out waiting for'), timeoutMs);
      this.listeners.add(check);
      check();
    });
  }

  /** Sends keystrokes (the terminal reads them one key at a time). */
  press(...keys: string[]): void {
    this.child.stdin.write(keys.join(''));
  }

  /** Types `text` and waits until the prompt shows it. */
  async type(text: string): Promise<void> {
    this.press(text);
    await this.waitFor(text);
  }

  async close(timeoutMs = 30_000): Promise<number | null> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
      this.child.stdin.end();
    }
  }
}

describe('generate asks the template questions in a terminal', () => {
  beforeAll(async () => {
    if (hasScript) await buildIfStale();
  }, 240_000);

  it.skipIf(!hasScript)(
    'answers with keystrokes, re-asks a bad project name and writes the answers (needs util-linux `script`)',
    async () => {
      const out = path.join(await tempDir('tr-tty-'), 'proj');
      const session = new TerminalSession(['generate', TEMPLATE, '--out', out]);

      await session.waitFor('Project name');
      await session.type('Bad Name');
      session.press(KEY.enter);
      await session.waitFor(INVALID_NAME);
      session.press(...Array<string>('Bad Name'.length).fill(KEY.backspace));
      await session.type('orders-api');
      session.press(KEY.enter);

      await session.waitFor('Short description');
      session.press(KEY.enter); // keep the default

      await session.waitFor('Which features do you want?');
      session.press(KEY.down, KEY.space, KEY.enter); // add "Database connection" to api + testing

      await session.waitFor('Which database?');
      session.press(KEY.down, KEY.down, KEY.enter); // PostgreSQL -> MySQL -> SQLite

      const code = await session.close();
      expect(code, session.text).toBe(0);
      expect(session.text).toContain(`into ${out}`);

      const pkg = JSON.parse(await readFile(path.join(out, 'package.json'), 'utf8')) as { name: string };
      expect(pkg.name).toBe('orders-api');
      const lock = JSON.parse(await readFile(path.join(out, '.template-lock.json'), 'utf8')) as {
        answers: Record<string, unknown>;
      };
      expect(lock.answers).toMatchObject({
        projectName: 'orders-api',
        description: 'A small HTTP service built with Node.js and TypeScript.',
        features: ['database', 'api', 'testing'],
        database: 'sqlite',
      });
    },
    90_000,
  );

  it.skipIf(!hasScript)('stops without writing anything on Ctrl-C (needs util-linux `script`)', async () => {
    const out = path.join(await tempDir('tr-tty-'), 'proj');
    const session = new TerminalSession(['generate', TEMPLATE, '--out', out]);

    await session.waitFor('Project name');
    session.press(KEY.ctrlC);

    const code = await session.close();
    expect(code, session.text).not.toBe(0);
    expect(session.text).toContain('cancelled');
    expect(existsSync(out)).toBe(false);
  }, 60_000);
});

/** A session started outside CI (where nothing is asked), with its own registry cache and no analytics. */
async function terminalOutsideCi(args: readonly string[]): Promise<TerminalSession> {
  const saved = { CI: process.env.CI, TEMPLATE_REGISTRY_CACHE: process.env.TEMPLATE_REGISTRY_CACHE, DO_NOT_TRACK: process.env.DO_NOT_TRACK };
  delete process.env.CI;
  process.env.TEMPLATE_REGISTRY_CACHE = await tempDir('tr-cache-');
  process.env.DO_NOT_TRACK = '1';
  try {
    return new TerminalSession(args);
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

describe('boolean and secret questions, and tasks, in a terminal', () => {
  beforeAll(async () => {
    if (hasScript) await buildIfStale();
  }, 240_000);

  it.skipIf(!hasScript)('a confirm question shows y/N; a secret is typed without echo (needs util-linux `script`)', async () => {
    const secret = 'tok_typed_unseen_42';
    const template = await writeTemplate({
      'template.vars.json': {
        variables: { ...validVariables.variables, useDocker: { type: 'boolean', default: false }, apiToken: { type: 'string', secret: true, required: true } },
      },
      'template.prompts.json': {
        prompts: [...validPrompts.prompts, { name: 'useDocker', message: 'Add a Dockerfile?', type: 'confirm' }, { name: 'apiToken', message: 'API token?', type: 'input' }],
      },
      'template.json': { ...validManifest, files: [{ path: 'Dockerfile', when: 'useDocker' }] },
      'template/Dockerfile': 'FROM node\n',
      'template/token.txt': '{{ apiToken }}\n',
    });
    const out = path.join(await tempDir('tr-tty-'), 'proj');
    const session = await terminalOutsideCi(['generate', template, '--out', out, '--set', 'projectName=tty-app', '--set', 'features=api']);
    await session.waitFor('Add a Dockerfile? (y/N)');
    session.press('y', KEY.enter);
    await session.waitFor('API token?');
    session.press(secret, KEY.enter);
    const code = await session.close();
    expect(code, session.text).toBe(0);
    expect(session.text).not.toContain(secret);
    expect(await readFile(path.join(out, 'token.txt'), 'utf8')).toBe(`${secret}\n`);
    expect(existsSync(path.join(out, 'Dockerfile'))).toBe(true);
    expect(await readFile(path.join(out, '.template-lock.json'), 'utf8')).not.toContain(secret);
  }, 90_000);

  it.skipIf(!hasScript)('create lists the tasks and runs them when the user says yes; the folder name answers projectName (needs util-linux `script`)', async () => {
    const server = await startRegistryServer();
    const task = [process.execPath, '-e', 'require("node:fs").writeFileSync("marker.txt", "done")'];
    await publishVersions(server, [{ version: '1.0.0', files: { 'template.json': { ...validManifest, tasks: [{ description: 'Write a marker', run: task }] } } }]);
    const project = path.join(await tempDir('tr-tty-'), 'orders-api');
    const session = await terminalOutsideCi(['create', DEMO, project, '--registry', `${server.url}/registry.json`]);
    await session.waitFor('Features?');
    session.press(KEY.enter);
    await session.waitFor('the template has 1 task(s) to run in the new project:');
    await session.waitFor('Write a marker');
    await session.waitFor('Run them now? (y/N)');
    session.press('y', KEY.enter);
    const code = await session.close();
    expect(code, session.text).toBe(0);
    expect(session.text).not.toContain('Project name?');
    expect(await readFile(path.join(project, 'marker.txt'), 'utf8')).toBe('done');
    const lock = JSON.parse(await readFile(path.join(project, '.template-lock.json'), 'utf8')) as { answers: Record<string, unknown>; tasks: unknown[] };
    expect(lock.answers.projectName).toBe('orders-api');
    expect(lock.tasks).toEqual([{ description: 'Write a marker', run: task, status: 'succeeded', exitCode: 0 }]);
  }, 90_000);
});
