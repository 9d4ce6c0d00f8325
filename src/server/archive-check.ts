/**
 * What an uploaded archive must be before a version is reserved: a safe gzip tar whose own
 * template.json follows the manifest rules and equals the manifest part, and a template that
 * passes every check needing no execution (validation of all its files, the lint errors, Liquid
 * parsing of its content). A change log without a section for the version is only a lint warning
 * (the spec does not ask for one) unless the operator requires it (`requireChangelogEntry`).
 * Checked on a private temp copy that is always removed.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { unpackArchive, UnsafeArchiveError, type UnpackedArchive, type UnpackOptions } from '../archive/index.js';
import { canonicalJson } from '../core/canonical-json.js';
import { errorMessage } from '../core/errors.js';
import { ownedTempName } from '../core/files.js';
import { describeSchemaErrors } from '../core/messages.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { errorDetails, type ErrorDetail } from '../core/validation.js';
import { BINARY_HEAD_BYTES, formatLintFinding, isBinary, lintTemplate, MANIFEST_FILE, readTemplateTree, REQUIRED_FILES, type TemplateTree } from '../template/index.js';
import { ApiError } from './envelope.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-input.js';

/**
 * How an archive is unpacked for this check: a binary file only as far as the binary rule reads
 * (validate and lint read no more of it), so that its bulk is never written.
 */
export const CHECK_UNPACK: UnpackOptions = { headOnly: { bytes: BINARY_HEAD_BYTES, opaque: isBinary } };

/** The field an archive problem is reported under: the `template` part, then the file. */
const archiveField = (file: string): string => `template/${file}`;

function refused(message: string, details: ErrorDetail[]): ApiError {
  return new ApiError(422, 'VALIDATION_ERROR', message, details);
}

/** The archive's template.json against the manifest rules and against the manifest part. */
function manifestProblems(text: string | undefined, manifest: TemplateManifest): ErrorDetail[] {
  const field = archiveField(MANIFEST_FILE);
  if (text === undefined) return []; // reported as a missing required file
  if (nestsDeeperThan(text)) return [{ field, code: 'MAX_DEPTH', message: `the archive's ${MANIFEST_FILE} nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels` }];
  let packed: unknown;
  try {
    packed = JSON.parse(text) as unknown;
  } catch (error) {
    return [{ field, code: 'INVALID_JSON', message: `the archive's ${MANIFEST_FILE} is not valid JSON: ${errorMessage(error)}` }];
  }
  const invalid = errorDetails(describeSchemaErrors(schemaErrors('template-manifest', packed)), field).map((detail) => ({
    ...detail,
    field: detail.field.startsWith(field) ? detail.field : `${field}.${detail.field}`,
  }));
  if (invalid.length > 0) return invalid;
  if (canonicalJson(packed) !== canonicalJson(manifest)) {
    const differing = Object.keys({ ...(packed as object), ...manifest }).filter(
      (key) => canonicalJson((packed as Record<string, unknown>)[key]) !== canonicalJson((manifest as unknown as Record<string, unknown>)[key]),
    );
    return [
      {
        field,
        code: 'MISMATCH',
        message: `the archive's ${MANIFEST_FILE} differs from the manifest part in ${differing.map((key) => JSON.stringify(key)).join(', ')}; publish the manifest the archive holds`,
      },
    ];
  }
  return [];
}

/** The lint rule an operator may turn into a refusal (`requireChangelogEntry`). */
const CHANGELOG_RULE = 'changelog-missing-version';

/** What the server asks of an archive beyond the spec. */
export interface ArchiveRequirements {
  /** Refuse an archive whose change log has no section for its version (off by default: the spec does not ask for one). */
  requireChangelogEntry?: boolean;
}

/** Every lint error of the unpacked template (and the change log warning when it is required), located as `file:line:col`. */
async function templateProblems(tree: TemplateTree, requirements: ArchiveRequirements): Promise<ErrorDetail[]> {
  const { findings } = await lintTemplate(tree);
  return findings
    .filter((finding) => finding.severity === 'error' || (requirements.requireChangelogEntry === true && finding.rule === CHANGELOG_RULE))
    .map((finding) => ({ field: archiveField(finding.file), code: finding.rule.toUpperCase().replace(/-/g, '_'), message: formatLintFinding(finding) }));
}

/**
 * Refuses (422, every problem listed) an archive that is not what `manifest` says it is. `archive`
 * is the outcome of its one-pass unpack as it was received (archive/unpack.ts), or a file, then
 * unpacked in one pass into a private folder of `scratch` (default: the system's temp folder).
 */
export async function checkUploadedArchive(
  archive: string | { archive: UnpackedArchive } | { error: unknown },
  manifest: TemplateManifest,
  requirements: ArchiveRequirements = {},
  scratch = tmpdir(),
): Promise<void> {
  if (typeof archive !== 'string') return checkUnpacked(archive, manifest, requirements);
  // Named after this process, so that a start after a kill removes it (core/temp-owner.ts).
  const dir = await mkdtemp(path.join(scratch, ownedTempName('.check-')));
  try {
    const unpacked = await unpackArchive(createReadStream(archive) as AsyncIterable<Buffer>, dir, {}, CHECK_UNPACK).then(
      (result) => ({ archive: result }),
      (error: unknown) => ({ error }),
    );
    await checkUnpacked(unpacked, manifest, requirements);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function checkUnpacked(outcome: { archive: UnpackedArchive } | { error: unknown }, manifest: TemplateManifest, requirements: ArchiveRequirements): Promise<void> {
  if ('error' in outcome) {
    // The archive's fault is the client's; a full disk or an I/O error is ours (5xx).
    if (!(outcome.error instanceof UnsafeArchiveError)) throw outcome.error;
    throw refused('the template part is not a valid template archive', [{ field: 'template', code: 'INVALID_ARCHIVE', message: outcome.error.message }]);
  }
  const { files, manifestText, dir } = outcome.archive;
  const present = new Set(files);
  const missing = REQUIRED_FILES.filter((f) => !present.has(f)).map((f) => ({ field: archiveField(f), code: 'MISSING_FILE', message: `the archive has no ${f}` }));
  // The scan read template.json as the bytes went by.
  const mismatch = manifestProblems(present.has(MANIFEST_FILE) ? (manifestText ?? '') : undefined, manifest);
  if (missing.length > 0 || mismatch.length > 0) throw refused('the archive does not match the manifest', [...missing, ...mismatch]);
  // Read once, by the template layer's reader, for lint.
  const problems = await templateProblems(await readTemplateTree(dir), requirements);
  if (problems.length > 0) throw refused(`the template in the archive has ${problems.length} error(s)`, problems);
}
