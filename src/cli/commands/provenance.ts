/**
 * The consumer commands' provenance options (`create`, `update`, `check-update`, `info`):
 * `--provenance off|warn|require`, `--accept-new-signer`, `--sigstore-trusted-root <file>`, and
 * their environment (core/env-names.ts): PROVENANCE_ENV (the default mode), PROVENANCE_REQUIRE_ENV
 * (registries, comma-separated, whose default is `require`), SIGSTORE_TRUSTED_ROOT_ENV.
 */
import { Option, type Command } from 'commander';

import { describeSigner, loadSigstoreTrust, PROVENANCE_MODES, type ProvenanceMode, type ProvenanceOutcome, type ProvenancePolicy, type SigstoreTrust } from '../../client/index.js';
import { errorMessage } from '../../core/errors.js';
import { registryDocumentUrl, registryUrlProblem } from '../../core/registry-url.js';
import { PROVENANCE_ENV, PROVENANCE_REQUIRE_ENV, SIGSTORE_TRUSTED_ROOT_ENV } from '../../core/env-names.js';
import { UsageError, type CliIo } from '../io.js';
import { stderrStyle } from '../style.js';

export interface ProvenanceFlags {
  provenance?: string;
  acceptNewSigner?: boolean;
  sigstoreTrustedRoot?: string;
}

/** Adds the provenance options to a consumer command. */
export function provenanceOptions(command: Command, options: { acceptNewSigner?: boolean } = {}): Command {
  command
    .addOption(
      new Option(
        '--provenance <mode>',
        `build provenance of the archive: off, warn (verify it; missing or failing is a warning) or require (missing or failing is an error) (env ${PROVENANCE_ENV}, default warn; ${PROVENANCE_REQUIRE_ENV} lists registries whose default is require)`,
      ).choices([...PROVENANCE_MODES]),
    )
    .option('--sigstore-trusted-root <file>', `the Sigstore trusted root provenance is verified against (env ${SIGSTORE_TRUSTED_ROOT_ENV}; default the public-good root)`);
  if (options.acceptNewSigner !== false) {
    command.option('--accept-new-signer', "accept a version signed by another identity than the one the project's lock pins, or not signed (a possible takeover otherwise), and pin the new one");
  }
  return command;
}

/** Whether `registryUrl` (a registry.json URL) is one of PROVENANCE_REQUIRE_ENV's. */
function requiredFor(registryUrl: string, list: string | undefined): boolean {
  for (const item of (list ?? '').split(',').map((value) => value.trim()).filter((value) => value !== '')) {
    const problem = registryUrlProblem(item);
    if (problem) throw new UsageError(`${PROVENANCE_REQUIRE_ENV}: ${JSON.stringify(item)} ${problem}`);
    if (registryDocumentUrl(item) === registryUrl) return true;
  }
  return false;
}

/** The mode for a registry: the flag, else `require` for a registry PROVENANCE_REQUIRE_ENV names, else PROVENANCE_ENV, else `warn`. */
function provenanceModeFor(flag: string | undefined, registryUrl: string, env: Readonly<Record<string, string | undefined>> = process.env): ProvenanceMode {
  if (flag !== undefined) return flag as ProvenanceMode;
  if (requiredFor(registryUrl, env[PROVENANCE_REQUIRE_ENV])) return 'require';
  const value = env[PROVENANCE_ENV]?.trim();
  if (value === undefined || value === '') return 'warn';
  if (!(PROVENANCE_MODES as readonly string[]).includes(value)) throw new UsageError(`${PROVENANCE_ENV} must be off, warn or require (got ${JSON.stringify(value)})`);
  return value as ProvenanceMode;
}

/**
 * The Sigstore trusted root of `--sigstore-trusted-root` (`flag`), else SIGSTORE_TRUSTED_ROOT_ENV's,
 * else the public-good one; one that cannot be read is a UsageError naming where it was given.
 */
export async function sigstoreTrustFrom(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): Promise<SigstoreTrust> {
  try {
    return await loadSigstoreTrust(flag ?? env[SIGSTORE_TRUSTED_ROOT_ENV]);
  } catch (error) {
    throw new UsageError(`${flag !== undefined ? '--sigstore-trusted-root' : SIGSTORE_TRUSTED_ROOT_ENV}: ${errorMessage(error)}`);
  }
}

/** The provenance policy of a command on `registryUrl` (its trusted root loaded; warnings printed on stderr). */
export async function provenancePolicyFor(flags: ProvenanceFlags, registryUrl: string, io: CliIo, env: Readonly<Record<string, string | undefined>> = process.env): Promise<Omit<ProvenancePolicy, 'pinned'>> {
  const mode = provenanceModeFor(flags.provenance, registryUrl, env);
  const trust = mode === 'off' ? undefined : await sigstoreTrustFrom(flags.sigstoreTrustedRoot, env);
  return {
    mode,
    ...(trust ? { trust } : {}),
    ...(flags.acceptNewSigner ? { acceptNewSigner: true } : {}),
    onWarning: (message) => io.stderr(`${stderrStyle(io).yellow('warning')}: ${message}\n`),
  };
}

/** The line saying who built a version whose provenance verified; undefined otherwise (a missing or failing one was a warning on stderr already). */
export function provenanceLine(outcome: ProvenanceOutcome | undefined): string | undefined {
  if (outcome?.status !== 'verified') return undefined;
  return `provenance verified: built by ${describeSigner(outcome.signer)}${outcome.runUrl ? ` in ${outcome.runUrl}` : ''}`;
}
