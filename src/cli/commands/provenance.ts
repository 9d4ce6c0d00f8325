/**
 * The consumer commands' provenance options (`create`, `update`, `check-update`, `info`):
 * `--provenance off|warn|require`, `--accept-new-signer`, `--sigstore-trusted-root <file>`, and
 * their environment: TEMPLATE_REGISTRY_PROVENANCE (the default mode), TEMPLATE_REGISTRY_PROVENANCE_REQUIRE
 * (registries, comma-separated, whose default is `require`), TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT.
 */
import { Option, type Command } from 'commander';

import { describeSigner, loadSigstoreTrust, PROVENANCE_MODES, type ProvenanceMode, type ProvenanceOutcome, type ProvenancePolicy } from '../../client/index.js';
import { errorMessage } from '../../core/errors.js';
import { registryDocumentUrl, registryUrlProblem } from '../../core/registry-url.js';
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
        'build provenance of the archive: off, warn (verify it; missing or failing is a warning) or require (missing or failing is an error) (env TEMPLATE_REGISTRY_PROVENANCE, default warn; TEMPLATE_REGISTRY_PROVENANCE_REQUIRE lists registries whose default is require)',
      ).choices([...PROVENANCE_MODES]),
    )
    .option('--sigstore-trusted-root <file>', 'the Sigstore trusted root provenance is verified against (env TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT; default the public-good root)');
  if (options.acceptNewSigner !== false) {
    command.option('--accept-new-signer', "accept a version signed by another identity than the one the project's lock pins, or not signed (a possible takeover otherwise), and pin the new one");
  }
  return command;
}

/** Whether `registryUrl` (a registry.json URL) is one of TEMPLATE_REGISTRY_PROVENANCE_REQUIRE's. */
function requiredFor(registryUrl: string, list: string | undefined): boolean {
  for (const item of (list ?? '').split(',').map((value) => value.trim()).filter((value) => value !== '')) {
    const problem = registryUrlProblem(item);
    if (problem) throw new UsageError(`TEMPLATE_REGISTRY_PROVENANCE_REQUIRE: ${JSON.stringify(item)} ${problem}`);
    if (registryDocumentUrl(item) === registryUrl) return true;
  }
  return false;
}

/** The mode for a registry: the flag, else `require` for a registry TEMPLATE_REGISTRY_PROVENANCE_REQUIRE names, else TEMPLATE_REGISTRY_PROVENANCE, else `warn`. */
function provenanceModeFor(flag: string | undefined, registryUrl: string, env: Readonly<Record<string, string | undefined>> = process.env): ProvenanceMode {
  if (flag !== undefined) return flag as ProvenanceMode;
  if (requiredFor(registryUrl, env.TEMPLATE_REGISTRY_PROVENANCE_REQUIRE)) return 'require';
  const value = env.TEMPLATE_REGISTRY_PROVENANCE?.trim();
  if (value === undefined || value === '') return 'warn';
  if (!(PROVENANCE_MODES as readonly string[]).includes(value)) throw new UsageError(`TEMPLATE_REGISTRY_PROVENANCE must be off, warn or require (got ${JSON.stringify(value)})`);
  return value as ProvenanceMode;
}

/** The provenance policy of a command on `registryUrl` (its trusted root loaded; warnings printed on stderr). */
export async function provenancePolicyFor(flags: ProvenanceFlags, registryUrl: string, io: CliIo, env: Readonly<Record<string, string | undefined>> = process.env): Promise<Omit<ProvenancePolicy, 'pinned'>> {
  const mode = provenanceModeFor(flags.provenance, registryUrl, env);
  const file = flags.sigstoreTrustedRoot ?? env.TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT;
  let trust;
  if (mode !== 'off') {
    try {
      trust = await loadSigstoreTrust(file);
    } catch (error) {
      throw new UsageError(`${flags.sigstoreTrustedRoot !== undefined ? '--sigstore-trusted-root' : 'TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT'}: ${errorMessage(error)}`);
    }
  }
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
