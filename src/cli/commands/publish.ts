import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { Command } from 'commander';

import { registryBaseUrl, registryDocumentUrl } from '../../core/registry-url.js';
import { VERSION_PATTERN, VERSION_RULE } from '../../core/versions.js';
import { publishProgressPrinter, uploadProgressLine } from '../../publish/progress.js';
import { runPublishPipeline } from '../../publish/pipeline.js';
import { DEFAULT_VISIBLE_TIMEOUT_MS, notVisibleWarning, waitUntilVisible, type VisibleResult } from '../../publish/visible.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { errorMessage } from '../../core/errors.js';
import { REGISTRY_TOKEN_ENV } from '../../core/env-names.js';
import { redactor } from '../../publish/api-client.js';
import { REGISTRY_FLAG_HELP, serverOf } from '../write-api.js';

interface PublishFlags {
  registry?: string;
  token?: string;
  version?: string;
  exclude: string[];
  skipTest?: boolean;
  json?: boolean;
  wait?: boolean;
  waitTimeout?: string;
  publicUrl?: string;
}

/** `--wait-timeout <seconds>`: a whole number of seconds, at least 1. */
function waitTimeoutMs(value: string | undefined): number {
  if (value === undefined) return DEFAULT_VISIBLE_TIMEOUT_MS;
  const seconds = /^\d+$/.test(value.trim()) ? Number(value.trim()) : NaN;
  if (!(seconds >= 1)) throw new UsageError(`--wait-timeout must be a whole number of seconds, 1 or more (got ${JSON.stringify(value)})`);
  return seconds * 1000;
}

export function registerPublish(program: Command, io: CliIo, setExit: (code: number) => void): void {
  // `publish --version X` must reach this command: without positional options the root program's
  // own `-V, --version` would take it (printing the CLI version) wherever it appears.
  program
    .command('publish')
    .description(COMMAND_SUMMARIES.publish.description)
    .argument('[dir]', 'template folder', '.')
    .option('--registry <url>', REGISTRY_FLAG_HELP)
    .option('--token <token>', `API token (default: $${REGISTRY_TOKEN_ENV}; prefer the variable, flags show up in process lists)`)
    .option('--version <version>', 'release version to stamp into template.json (a leading "v" is dropped)')
    .option('--exclude <glob>', 'leave matching files out of the archive (repeatable)', collect, [])
    .option('--skip-test', 'skip test generation (validation and lint always run)')
    .option('--json', 'print the result as one JSON document on stdout (steps and findings go to stderr)')
    .option('--wait', "after the upload, wait until the registry's public URL lists the version (its template file, asked for with Cache-Control: no-cache); a time-out is a warning")
    .option('--wait-timeout <seconds>', `how long --wait waits (default ${DEFAULT_VISIBLE_TIMEOUT_MS / 1000})`)
    .option('--public-url <url>', 'where clients read the registry, for --wait (a CDN in front of it; default --registry)')
    .action(async (dir: string, flags: PublishFlags) => {
      const usage = (message: string): void => {
        io.stderr(`error: ${message}\n`);
        setExit(EXIT.usage);
      };
      const server = serverOf(flags);
      if (typeof server === 'string') return usage(server);
      const { registryUrl, token } = server;
      let timeoutMs: number;
      try {
        timeoutMs = waitTimeoutMs(flags.waitTimeout);
      } catch (error) {
        return usage(errorMessage(error));
      }
      const publicUrl = registryBaseUrl((flags.publicUrl ?? registryUrl).trim());
      if (!/^https?:\/\/[^\s/]+/.test(publicUrl)) return usage(`--public-url must be an http(s) URL (got ${JSON.stringify(flags.publicUrl)})`);
      let version: string | undefined;
      if (flags.version !== undefined) {
        version = flags.version.replace(/^v/, '');
        if (!VERSION_PATTERN.test(version)) return usage(`--version ${VERSION_RULE} (got "${flags.version}")`);
      }

      // Progress and findings go to stderr, so that stdout holds only the result (`--json` stays parseable).
      // The upload progress line is for a person at a terminal: never in a pipe, a log or with --json.
      const redact = redactor(token);
      const progress = flags.json ? undefined : uploadProgressLine({ isTTY: io.isTTY?.stderr === true, write: io.stderr });
      const outDir = await mkdtemp(path.join(tmpdir(), 'template-registry-publish-'));
      try {
        const { packed, upload, downloadUrl } = await runPublishPipeline(
          {
            templateDir: dir,
            ...(version === undefined ? {} : { version }),
            exclude: flags.exclude,
            skipTest: flags.skipTest ?? false,
            outDir,
            registryUrl,
            token,
          },
          publishProgressPrinter((line) => io.stderr(`${redact(line)}\n`), progress ? { progress } : {}),
        );
        progress?.clear();
        const { name, version: published } = packed.manifest;
        const label = `${name}@${published}`;
        let visible: VisibleResult | undefined;
        if (flags.wait && upload) {
          if (!flags.json) io.stderr(`waiting until ${publicUrl} lists ${label} (at most ${Math.round(timeoutMs / 1000)} s)\n`);
          visible = await waitUntilVisible({ registryUrl: publicUrl, id: name, version: published, timeoutMs });
          if (!visible.visible) io.stderr(`warning: ${notVisibleWarning(visible, name, published)}\n`);
        }
        if (flags.json) {
          const { entry: _entry, ...summary } = upload ?? {};
          const waited = visible ? { visible: visible.visible, ...(visible.visible ? { visibleAfterMs: visible.afterMs } : {}) } : {};
          io.stdout(
            `${JSON.stringify({ name, version: published, size: packed.size, sha256: packed.sha256, files: packed.files, leftOut: packed.leftOut, ...summary, downloadUrl, ...waited }, null, 2)}\n`,
          );
        } else {
          io.stdout(upload?.uploaded ? `published ${label} (${upload.integrity})\n` : `already published ${label} with the same content\n`);
          if (upload?.warning) io.stderr(`warning: ${upload.warning}\n`);
          io.stdout(`download: ${downloadUrl ?? ''}\n`);
          if (visible?.visible) io.stdout(`visible at ${visible.url} after ${visible.afterMs} ms\n`);
          io.stdout(redact(`create a project from it: npx template-registry create ${label} my-app --registry ${registryDocumentUrl(registryUrl)}\n`));
        }
        setExit(EXIT.ok);
      } catch (error) {
        progress?.clear();
        // The pipeline's messages (and the PublishError and PackError ones it passes on) are written
        // for users and never hold the token; redacting is a second guard.
        io.stderr(`error: ${redact(errorMessage(error))}\n`);
        setExit(EXIT.failure);
      } finally {
        await rm(outDir, { recursive: true, force: true });
      }
    });
}
