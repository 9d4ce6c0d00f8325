/**
 * git for the sync action: `execFile` (no shell, so no quoting of branch names or paths), each
 * call bounded in time, never prompting for credentials (a prompt would hang the job until its
 * timeout; actions/checkout leaves the token in the checkout's config for fetch and push).
 */
import { execFile } from 'node:child_process';

/** How long one git call may take; network calls (fetch, push, ls-remote) get the longer bound. */
const GIT_TIMEOUT_MS = 60_000;
export const GIT_NETWORK_TIMEOUT_MS = 300_000;

/** Who commits the update: the account GitHub shows for the workflow token's commits. */
const BOT_NAME = 'github-actions[bot]';
export const BOT_EMAIL = '41898282+github-actions[bot]@users.noreply.github.com';

class GitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GitError';
  }
}

export type Git = (args: readonly string[], options?: { timeoutMs?: number }) => Promise<string>;

/**
 * Settings of every git call: no hook runs and no fsmonitor command starts, whatever the checkout's
 * config or a file in the project says (git runs hooks from `.git/hooks` or `core.hooksPath`, and
 * `core.fsmonitor` names a command); so nothing a template or a checkout holds is ever executed.
 */
const SAFE_GIT_CONFIG: readonly string[] = ['-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false'];

/** Runs git in `cwd`; resolves with its trimmed stdout, rejects with a GitError holding its stderr. */
export function gitIn(cwd: string): Git {
  return (args, options = {}) =>
    new Promise((resolve, reject) => {
      execFile(
        'git',
        [...SAFE_GIT_CONFIG, ...args],
        {
          cwd,
          timeout: options.timeoutMs ?? GIT_TIMEOUT_MS,
          maxBuffer: 64 * 1024 * 1024,
          env: { ...process.env, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' },
        },
        (error, stdout, stderr) => {
          if (!error) return resolve(stdout.trim());
          const why = error.killed ? `timed out after ${options.timeoutMs ?? GIT_TIMEOUT_MS} ms` : stderr.trim() || error.message;
          reject(new GitError(`git ${args.join(' ')} failed: ${why}`));
        },
      );
    });
}

/** `git commit` as the bot, without touching any git config (`-c` applies to this call only). */
export function commitArgs(message: string): string[] {
  return ['-c', `user.name=${BOT_NAME}`, '-c', `user.email=${BOT_EMAIL}`, '-c', 'commit.gpgsign=false', 'commit', '--no-verify', '--quiet', '-m', message];
}
