/** `template-registry serve` as a child process, for tests that kill it. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const bin = path.resolve('bin/template-registry.js');

const outputs = new WeakMap<ChildProcess, { text: string }>();

/** Everything a process `serveProcess` started has printed so far (stdout and stderr). */
export function serveOutput(child: ChildProcess): string {
  return outputs.get(child)?.text ?? '';
}

/** Starts `serve --store <store> --port <port>` and resolves once it says it is serving. */
export async function serveProcess(store: string, port: number, extraArgs: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, [bin, 'serve', '--store', store, '--port', String(port), ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const kept = { text: '' };
  outputs.set(child, kept);
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${output}`)), 20_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      kept.text += chunk.toString();
      if (output.includes('serving')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      kept.text += chunk.toString();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${String(code)}: ${output}`));
    });
  });
  return child;
}

/** SIGKILLs `child` and waits until it is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
}
