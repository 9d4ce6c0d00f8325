/**
 * The title and body of the sync action's pull request. Both are a pure function of the update,
 * with nothing of the run in them (no time, no run id), so that a re-run with the same result
 * finds them equal and edits nothing.
 *
 * Everything the template wrote (its change log, its migration guide, the reasons and warnings of
 * its steps) goes through `safeMarkdown`: no raw HTML, no @-mentions, no images, links as text.
 */
import type { ChangelogEntry, UpdatePlan } from '../project/index.js';
import { safeMarkdown, safeMarkdownLine } from './safe-markdown.js';

type FileUpdate = UpdatePlan['files'][number];

/** The label of a pull request whose update left conflicts to resolve. */
export const NEEDS_ATTENTION_LABEL = 'template-update: needs attention';

/** GitHub refuses a body over 65,536 characters; what is over this is cut at a line. */
const MAX_BODY = 60_000;

export interface PullRequestBodyInput {
  templateId: string;
  fromVersion: string;
  toVersion: string;
  /** The project's folder in the repository, posix, '' for the root: file paths are shown from the repository's root. */
  projectPath: string;
  branch: string;
  breaking: boolean;
  breakingReasons: string[];
  /** The template's migration guide, when the update ran breaking steps. */
  guide?: { path: string; firstLines: string[] };
  files: FileUpdate[];
  stepsApplied: string[];
  /** The update's warnings (of the migration steps, or a locked version the registry no longer has). */
  warnings: string[];
  conflicts: string[];
  /** Newest first. */
  changelog: ChangelogEntry[];
}

export function pullRequestTitle(templateId: string, version: string): string {
  return `Update ${templateId} to ${version}`;
}

/** `text` as an inline code span, whatever backticks it holds. */
function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return longest > 0 ? `${fence} ${text} ${fence}` : `${fence}${text}${fence}`;
}

/** One line of a file list, its reason made single-line. */
function fileItem(prefix: string, file: FileUpdate): string {
  const reason = file.reason ? `: ${safeMarkdownLine(file.reason.replace(/\s+/g, ' '))}` : '';
  return `- ${file.status} ${code(`${prefix}${file.path}`)}${reason}`;
}

export function pullRequestBody(input: PullRequestBodyInput): string {
  const prefix = input.projectPath === '' ? '' : `${input.projectPath}/`;
  const where = input.projectPath === '' ? 'this project' : `the project in ${code(input.projectPath)}`;
  const conflictFiles = input.files.filter((file) => file.status === 'conflict');
  const lines: string[] = [];

  if (input.conflicts.length > 0) {
    const count = input.conflicts.length === 1 ? '1 file has' : `${input.conflicts.length} files have`;
    lines.push(`> **⚠️ Needs attention:** ${count} conflicts to resolve before merging (see *Conflicts to resolve* below).`, '');
  }
  lines.push(`Updates ${where} from template **${input.templateId}** ${code(input.fromVersion)} to ${code(input.toVersion)}.`, '');

  if (input.breaking) {
    lines.push('**Breaking:** yes');
    for (const reason of input.breakingReasons) lines.push(`- ${safeMarkdownLine(reason.replace(/\s+/g, ' '))}`);
    if (input.guide) {
      lines.push('', `Migration guide (${code(input.guide.path)} in the template):`, '');
      for (const line of safeMarkdown(input.guide.firstLines.join('\n')).split('\n')) lines.push(`> ${line}`);
    }
  } else {
    lines.push('**Breaking:** no');
  }

  lines.push('', '### Changed files', '');
  if (input.files.length === 0) lines.push('None.');
  for (const file of input.files) lines.push(fileItem(prefix, file));

  lines.push('', '### Migration steps applied', '');
  if (input.stepsApplied.length === 0) lines.push('None.');
  for (const id of input.stepsApplied) lines.push(`- ${code(id)}`);

  if (input.warnings.length > 0) {
    lines.push('', '### Warnings', '');
    for (const warning of input.warnings) lines.push(`- ${safeMarkdownLine(warning.replace(/\s+/g, ' '))}`);
  }

  if (input.conflicts.length > 0) {
    lines.push(
      '',
      '### Conflicts to resolve',
      '',
      'The project and the template changed the same lines. Each text file below holds both versions between markers:',
      '',
      '```',
      '<<<<<<< project',
      "the project's lines",
      '=======',
      "the template's lines",
      `>>>>>>> ${input.templateId}@${input.toVersion}`,
      '```',
      '',
      `Keep what the project needs, remove the markers, and commit the result to ${code(input.branch)}; a binary file is left as the project had it. ` +
        'Once this branch has commits of yours, later runs leave it alone.',
      '',
    );
    for (const file of conflictFiles) lines.push(fileItem(prefix, file));
    // A conflict the plan counted without a file entry (should not happen): still listed.
    for (const path of input.conflicts.filter((p) => !conflictFiles.some((f) => f.path === p))) lines.push(`- conflict ${code(`${prefix}${path}`)}`);
  }

  lines.push('', '### Changelog');
  for (const entry of input.changelog) lines.push('', `#### ${entry.version}`, '', safeMarkdown(entry.body.trim()) || '(the change log has no section for this version)');

  lines.push('', '---', '<sub>Opened by the template-registry sync action. Later runs update this pull request; a newer template version replaces it.</sub>');
  return cut(lines.join('\n'));
}

function cut(body: string): string {
  if (body.length <= MAX_BODY) return body;
  const head = body.slice(0, MAX_BODY);
  return `${head.slice(0, head.lastIndexOf('\n'))}\n\n… (cut: the body was too long; the action's log lists everything)`;
}
