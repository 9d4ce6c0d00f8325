/**
 * The owner key of temp names: a start can tell a temp file of a process that still runs from one
 * of a process that is gone, even when a new process got the same pid (pid 1 of a restarted
 * container), and leaves alone what it cannot judge (another machine, an older release).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { TEMP_FILE_PATTERN, tempPathBeside } from '../../src/core/files.js';
import { tempNameOwner } from '../../src/core/temp-owner.js';

const nameOf = (file: string): string => path.basename(file);
/** The name with the 8 hex of its process key (after the 8 of its namespace) replaced. */
const withProcessKey = (name: string, key: string): string => name.replace(/\.(\d+)\.([0-9a-f]{8})[0-9a-f]{8}([0-9a-f]{12})\.tmp$/, `.$1.$2${key}$3.tmp`);
const withNamespace = (name: string, key: string): string => name.replace(/\.(\d+)\.[0-9a-f]{8}([0-9a-f]{20})\.tmp$/, `.$1.${key}$2.tmp`);

describe('temp file owners', () => {
  it("knows this process's own temp names, and keeps their old shape recognisable", () => {
    const name = nameOf(tempPathBeside('/x/registry.json'));
    expect(name).toMatch(TEMP_FILE_PATTERN);
    expect(name).toMatch(new RegExp(`^\\.registry\\.json\\.${process.pid}\\.[0-9a-f]{28}\\.tmp$`));
    expect(tempNameOwner(name)).toBe('mine');
    expect(TEMP_FILE_PATTERN.test(`.registry.json.${process.pid}.0123456789ab.tmp`)).toBe(true);
  });

  it('takes a name of this pid with another start for a gone process (the pid was reused)', () => {
    const name = nameOf(tempPathBeside('/x/registry.json'));
    const other = withProcessKey(name, withProcessKey(name, '00000000') === name ? '11111111' : '00000000');
    expect(other).not.toBe(name);
    expect(tempNameOwner(other)).toBe('dead');
  });

  it('leaves undecided what it cannot see: another machine or namespace, a name from before owner keys', () => {
    const name = nameOf(tempPathBeside('/x/registry.json'));
    const other = withNamespace(name, withNamespace(name, 'ffffffff') === name ? 'eeeeeeee' : 'ffffffff');
    expect(other).not.toBe(name);
    expect(tempNameOwner(other)).toBe('foreign');
    expect(tempNameOwner(`.registry.json.${process.pid}.0123456789ab.tmp`)).toBe('legacy');
    expect(tempNameOwner('1700000000000-0123456789abcdef.tgz')).toBe('legacy');
  });

  it("tells another process's names live while it runs and dead once it is killed (runs build/)", async () => {
    const files = path.resolve('build/src/core/files.js');
    const script = `const { tempPathBeside } = await import(${JSON.stringify(files)}); process.stdout.write(tempPathBeside('/x/a') + '\\n'); setInterval(() => undefined, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const name = nameOf(await new Promise<string>((resolve) => child.stdout.once('data', (data: Buffer) => resolve(data.toString('utf8').trim()))));
    expect(name).toContain(`.${child.pid}.`);
    expect(tempNameOwner(name)).toBe('live');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(tempNameOwner(name)).toBe('dead');
  });
});
