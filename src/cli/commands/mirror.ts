/**
 * `template-registry mirror <registry-url> --out <dir|s3://bucket/prefix>`: copies a registry
 * (registry/mirror.ts) so that it can be served from any static host, incrementally.
 */
import { Option, type Command } from 'commander';

import { SIGSTORE_TRUSTED_ROOT_ENV } from '../../core/env-names.js';
import { errorMessage } from '../../core/errors.js';
import { registryUrlProblem } from '../../core/registry-url.js';
import { MIRROR_PROVENANCE_MODES, MirrorError, mirrorRegistry, type MirrorProvenanceMode } from '../../registry/mirror.js';
import { registryKeysFrom } from '../consumer-env.js';
import { EXIT, UsageError, type CliIo } from '../io.js';
import { collect } from '../options.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { sigstoreTrustFrom } from './provenance.js';
import { checkOutputTarget, openOutputTarget } from './output-target.js';
import { S3_ENDPOINT_OPTION, S3_PATH_STYLE_OPTION } from './backends.js';

interface MirrorFlags {
  out: string;
  registryKey: string[];
  s3Endpoint?: string;
  s3ForcePathStyle?: boolean;
  json?: boolean;
  provenance?: MirrorProvenanceMode;
  sigstoreTrustedRoot?: string;
}

export function registerMirror(program: Command, io: CliIo, setExit: (code: number) => void): void {
  program
    .command('mirror')
    .description(COMMAND_SUMMARIES.mirror.description)
    .argument('<registry-url>', 'the registry to copy: its base URL or its registry.json URL')
    .requiredOption('--out <dir|s3-url>', 'folder to write the mirror into, or an S3-compatible bucket: s3://bucket/prefix (credentials and region the AWS SDK way)')
    .option('--registry-key <jwk-or-file>', "the source's public signing key (JWK or JWK Set, or a file holding it): its documents must be signed by it (default: the keys it publishes, and the ones the mirror kept from its last run)", collect, [])
    .addOption(
      new Option('--provenance <mode>', 'attestations: verify (default: each one an entry names must verify against its archive), require (every entry needs one) or off (copied unchecked)').choices([
        ...MIRROR_PROVENANCE_MODES,
      ]),
    )
    .option('--sigstore-trusted-root <file>', `the Sigstore trusted root attestations are verified against (env ${SIGSTORE_TRUSTED_ROOT_ENV}; default the public-good root)`)
    .option('--s3-endpoint <url>', `${S3_ENDPOINT_OPTION} (for --out)`)
    .option('--s3-force-path-style', S3_PATH_STYLE_OPTION)
    .option('--json', 'print the result as JSON')
    .action(async (source: string, flags: MirrorFlags) => {
      const problem = registryUrlProblem(source);
      if (problem) throw new UsageError(`<registry-url> ${problem}`);
      const target = checkOutputTarget(flags);
      const keys = registryKeysFrom(flags.registryKey, {});
      // Without a root of its own, the mirror verifies against the public-good one (registry/mirror.ts).
      const rootGiven = (flags.sigstoreTrustedRoot ?? process.env[SIGSTORE_TRUSTED_ROOT_ENV]) !== undefined;
      const sigstoreTrust = flags.provenance === 'off' || !rootGiven ? undefined : await sigstoreTrustFrom(flags.sigstoreTrustedRoot);
      const { output, close } = await openOutputTarget(target, flags);
      try {
        const result = await mirrorRegistry({ source, output, ...(keys ? { keys } : {}), ...(flags.provenance ? { provenance: flags.provenance } : {}), ...(sigstoreTrust ? { sigstoreTrust } : {}) });
        if (!flags.json) for (const warning of result.warnings) io.stderr(`warning: ${warning}\n`);
        io.stdout(
          flags.json
            ? `${JSON.stringify({ out: flags.out, ...result }, null, 2)}\n`
            : `mirrored ${result.source} into ${flags.out}: ${result.entries} entries of ${result.templates} templates${result.signed ? ', signatures checked and kept' : ''}; ` +
                `${result.copied.length} archive(s) copied, ${result.kept} already there; ${result.fetched} document(s) fetched, ${result.notModified} not modified\n`,
        );
        setExit(EXIT.ok);
      } catch (error) {
        if (!(error instanceof MirrorError)) throw error;
        io.stderr(`error: ${errorMessage(error)}\n`);
        setExit(EXIT.failure);
      } finally {
        await close();
      }
    });
}
