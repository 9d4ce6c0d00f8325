import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import type { Command } from 'commander';

import { VERSION_PATTERN } from '../../core/versions.js';
import { packTemplate } from '../../pack/pack.js';
import { publishTemplate } from '../../publish/upload.js';
import { formatValidationError, validateTemplate } from '../../template/index.js';
import { EXIT, type CliIo } from '../io.js';
import { errorMessage } from '../../core/errors.js';

interface PublishFlags {
  registry?: string;
  token?: string;
  version?: string;
  exclude: string[];
  json?: boolean;
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export const TOKEN_ENV = 'TEMPLATE_REGISTRY_TOKEN';
export const REGISTRY_ENV = 'TEMPLATE_REGISTRY_URL';

export function registerPublish(program: Command, io: CliIo, setExit: (code: number) => void): void {
  // `publish --version X` must reach this command: without positional options the root program's
  // own `-V, --version` would take it (printing the CLI version) wherever it appears.
  program
    .command('publish')
    .description('validate, pack and upload a template folder to a registry')
    .argument('[dir]', 'template folder', '.')
    .option('--registry <url>', `registry base URL (default: $${REGISTRY_ENV})`)
    .option('--token <token>', `API token (default: $${TOKEN_ENV}; prefer the variable, flags show up in process lists)`)
    .option('--version <version>', 'release version to stamp into template.json (a leading "v" is dropped)')
    .option('--exclude <glob>', 'leave matching files out of the archive (repeatable)', collect, [])
    .option('--json', 'print the result as JSON')
    .action(async (dir: string, flags: PublishFlags) => {
      const usage = (message: string): void => {
        io.stderr(`error: ${message}\n`);
        setExit(EXIT.usage);
      };
      const registryUrl = (flags.registry ?? process.env[REGISTRY_ENV] ?? '').trim();
      if (registryUrl === '') return usage(`no registry: pass --registry <url> or set ${REGISTRY_ENV}`);
      const token = (flags.token ?? process.env[TOKEN_ENV] ?? '').trim();
      if (token === '') return usage(`no API token: set ${TOKEN_ENV} or pass --token <token>`);
      let version: string | undefined;
      if (flags.version !== undefined) {
        version = flags.version.replace(/^v/, '');
        if (!VERSION_PATTERN.test(version)) return usage(`--version must be MAJOR.MINOR.PATCH (got "${flags.version}")`);
      }

      const validation = await validateTemplate(dir);
      if (!validation.valid) {
        for (const error of validation.errors) io.stderr(`${formatValidationError(error)}\n`);
        io.stderr(`${validation.errors.length} error(s) in ${dir}: nothing was published\n`);
        setExit(EXIT.failure);
        return;
      }

      const outDir = await mkdtemp(path.join(tmpdir(), 'template-registry-publish-'));
      try {
        const packed = await packTemplate(dir, { ...(version === undefined ? {} : { version }), outDir, exclude: flags.exclude });
        const label = `${packed.manifest.name}@${packed.manifest.version}`;
        const result = await publishTemplate({
          registryUrl,
          token,
          archive: packed.file,
          manifest: packed.manifest,
          integrity: packed.integrity,
          onRetry: ({ attempt, delayMs, reason }) => {
            io.stderr(`attempt ${attempt} failed (${reason}); retrying in ${(delayMs / 1000).toFixed(1)} s\n`);
          },
        });
        if (flags.json) {
          const { entry: _entry, ...summary } = result;
          io.stdout(
            `${JSON.stringify({ name: packed.manifest.name, version: packed.manifest.version, size: packed.size, sha256: packed.sha256, files: packed.files, ...summary }, null, 2)}\n`,
          );
        } else if (result.uploaded) {
          io.stdout(`published ${label} (${result.integrity})\n`);
        } else {
          io.stdout(`already published ${label} with the same content\n`);
        }
        setExit(EXIT.ok);
      } catch (error) {
        // PublishError and PackError messages are written for users and never hold the token.
        const message = errorMessage(error);
        io.stderr(`error: ${message.split(token).join('***')}\n`);
        setExit(EXIT.failure);
      } finally {
        await rm(outDir, { recursive: true, force: true });
      }
    });
}
