/**
 * Trusted publishing's rules (crates.io's and PyPI's design): which trusted publishers a verified ID
 * token matches, and what the token it is exchanged for may do.
 *
 * A trusted publisher matches when the token's issuer and `repository` are its own (the repository
 * without regard to case), its `repository_owner_id` is the one pinned when it was saved, the
 * workflow file running the job is its `workflow`, its `environment` (when it names one) is the
 * job's, and its `ref` pattern (when it has one) matches the token's `ref`.
 *
 * The workflow is read from `job_workflow_ref`, which GitHub makes as
 * `<owner>/<repo>/.github/workflows/<file>@<ref>`: the claim must be exactly that, for the token's
 * own repository and with the token's `ref` (or `sha`) after the `@`. It is never split at an `@`:
 * a workflow file named `nested@evil.yml` makes `owner/repo/.github/workflows/nested@evil.yml@refs/heads/main`,
 * which is the file `nested@evil.yml`, not `nested` or `evil.yml`. The workflow is the file that
 * runs the publishing job: a reusable workflow of the same repository is that file; one of another
 * repository never matches.
 */
import { environmentKey, pendingHolds } from '../store/records.js';
import type { PublisherRun, TrustedPublisher } from '../store/types.js';
import type { VerifiedIdToken } from './oidc.js';

/** How long a token minted for trusted publishing lives. */
export const EXCHANGED_TOKEN_LIFETIME_MS = 15 * 60 * 1000;

export { REF_PATTERN, REPOSITORY_PATTERN, WORKFLOW_PATTERN } from '../core/trusted-publisher-fields.js';

/**
 * The workflow file `job_workflow_ref` names for the token's repository and ref (or sha), or
 * undefined when it is not `<repository>/.github/workflows/<file>@<ref or sha>` (another
 * repository's workflow, another ref, a path below the folder).
 */
export function workflowOf(token: Pick<VerifiedIdToken, 'jobWorkflowRef' | 'repository' | 'ref' | 'sha'>): string | undefined {
  const prefix = `${token.repository}/.github/workflows/`;
  const claim = token.jobWorkflowRef;
  if (claim.length <= prefix.length || claim.slice(0, prefix.length).toLowerCase() !== prefix.toLowerCase()) return undefined;
  const rest = claim.slice(prefix.length);
  for (const at of [token.ref, token.sha]) {
    const suffix = `@${at}`;
    if (!rest.endsWith(suffix)) continue;
    const file = rest.slice(0, -suffix.length);
    if (file !== '' && !file.includes('/')) return file;
  }
  return undefined;
}

/** Whether `ref` matches a pattern where `*` stands for any characters (linear: no regular expression). */
export function refMatches(pattern: string, ref: string): boolean {
  const parts = pattern.split('*');
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  if (parts.length === 1) return ref === pattern;
  if (!ref.startsWith(first) || ref.length < first.length + last.length || !ref.endsWith(last)) return false;
  let at = first.length;
  const end = ref.length - last.length;
  for (const middle of parts.slice(1, -1)) {
    const found = ref.indexOf(middle, at);
    if (found === -1 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}

/** Why a trusted publisher does not match a token: the claim at fault, in words. */
export interface Mismatch {
  template: string;
  claim: string;
  message: string;
}

/** The first claim of `token` a trusted publisher (of its issuer and repository) does not match, or undefined when it matches. */
export function mismatchOf(record: TrustedPublisher, token: VerifiedIdToken, workflow: string | undefined): Mismatch | undefined {
  const template = record.template;
  if (record.repositoryOwnerId !== token.repositoryOwnerId) {
    return {
      template,
      claim: 'repository_owner_id',
      message: `${template}: the repository's owner id ${token.repositoryOwnerId} is not the one pinned when the trusted publisher was saved (${record.repositoryOwnerId}); the owner was deleted and its name taken by another account?`,
    };
  }
  if (workflow === undefined) {
    return {
      template,
      claim: 'job_workflow_ref',
      message: `${template}: job_workflow_ref ${JSON.stringify(token.jobWorkflowRef)} is not a workflow file of ${token.repository}/.github/workflows at the run's ref or sha`,
    };
  }
  if (record.workflow !== workflow) {
    return { template, claim: 'job_workflow_ref', message: `${template}: the job runs workflow ${workflow}, not ${record.workflow}` };
  }
  if (record.environment !== undefined && environmentKey(token.environment) !== environmentKey(record.environment)) {
    return {
      template,
      claim: 'environment',
      message:
        token.environment === undefined
          ? `${template}: the job runs in no environment; the trusted publisher requires ${record.environment}`
          : `${template}: the job's environment ${token.environment} is not ${record.environment}`,
    };
  }
  if (record.ref !== undefined && !refMatches(record.ref, token.ref)) {
    return { template, claim: 'ref', message: `${template}: the run's ref ${token.ref} does not match ${record.ref}` };
  }
  return undefined;
}

/** What an exchange grants: the names, who it publishes for, and the run; or why nothing matched. */
export type Grant = { templates: string[]; owner: string; run: PublisherRun } | { refused: Mismatch[] };

/**
 * The grant of a verified token, from the trusted publishers of its issuer and repository and the
 * owners of their names (`ownersOf`): every name one of them matches. A pending one (an unclaimed
 * name) counts only while its name is unclaimed or its saver's; it makes the token publish for its
 * saver (the first publish claims the name for them), so pending ones of one saver only are granted
 * together (the first's, by name).
 */
export function grantOf(token: VerifiedIdToken, candidates: readonly TrustedPublisher[], ownersOf: ReadonlyMap<string, readonly string[]>): Grant {
  const workflow = workflowOf(token);
  const refused: Mismatch[] = [];
  const matched: TrustedPublisher[] = [];
  for (const record of candidates) {
    const owners = ownersOf.get(record.template) ?? [];
    if (!pendingHolds(record, owners)) continue;
    const mismatch = mismatchOf(record, token, workflow);
    if (mismatch) refused.push(mismatch);
    else matched.push(record);
  }
  const unclaimed = (record: TrustedPublisher): boolean => (ownersOf.get(record.template) ?? []).length === 0;
  // An unclaimed name whose matching pending publishers were saved by several publishers is nobody's
  // to claim: whoever saved one first may not be the repository's (squatting a name on someone else's workflow).
  const ambiguous = new Set<string>();
  for (const record of matched.filter(unclaimed)) {
    if (matched.some((other) => other.template === record.template && other.pendingOwner !== record.pendingOwner)) ambiguous.add(record.template);
  }
  for (const template of [...ambiguous].sort()) {
    refused.push({
      template,
      claim: 'repository',
      message: `${template}: several publishers saved a pending trusted publisher of ${template} for this repository; none may claim it until only one is left (or the name is published otherwise)`,
    });
  }
  const pendingOwner = matched.find((record) => unclaimed(record) && !ambiguous.has(record.template))?.pendingOwner;
  const granted = matched.filter((record) => !ambiguous.has(record.template) && (!unclaimed(record) || record.pendingOwner === pendingOwner));
  const templates = [...new Set(granted.map((record) => record.template))].sort();
  const first = templates[0];
  if (first === undefined) {
    if (refused.length > 0) return { refused };
    return {
      refused: [{ template: '', claim: 'repository', message: `no template trusts repository ${token.repository} (issuer ${token.issuer}): add a trusted publisher with template-registry trust add` }],
    };
  }
  const owner = pendingOwner ?? (ownersOf.get(first) ?? [])[0] ?? first;
  return {
    templates,
    owner,
    run: {
      issuer: token.issuer,
      repository: token.repository,
      repositoryOwnerId: token.repositoryOwnerId,
      workflow: workflow ?? '',
      ref: token.ref,
      sha: token.sha,
      runId: token.runId,
      ...(token.runAttempt !== undefined ? { runAttempt: token.runAttempt } : {}),
      ...(token.environment !== undefined ? { environment: token.environment } : {}),
    },
  };
}
