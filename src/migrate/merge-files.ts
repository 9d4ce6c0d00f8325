/**
 * The file-by-file half of `update`: the template's change (its rendering at the locked version,
 * the base, against its rendering at the target version) laid over the project as the migration
 * steps left it, the way copier and cruft do, but deciding per file from the lock's hashes
 * whether the project changed it:
 *
 * - unchanged in the project -> the target's content;
 * - changed on both sides -> a three-way merge; overlapping changes are conflicts, written inline
 *   (markers) or as a `.rej` patch beside the untouched file;
 * - new in the template -> created (a conflict when the project has a different file there);
 * - removed by the template -> removed when unchanged, kept and reported otherwise;
 * - deleted in the project -> stays deleted, reported;
 * - binary -> replaced when unchanged, otherwise kept and reported as a conflict;
 * - a `.json` file whose line merge conflicts -> merged by key (`json-merge.ts`) when no property
 *   changed on both sides, else the conflict markers.
 *
 * The template's `updatePolicy` (and the project's own `skip` globs) change that per file: `once`
 * files are never written, created or removed by an update (the project owns them), `replace`
 * files are always the template's bytes (generated or vendored code), `merge` is the above.
 *
 * A file a step renamed is merged at its new path (the base and the lock follow the rename).
 */
import { globMatcher } from '../core/glob.js';
import { errorMessage } from '../core/errors.js';
import { isOpaqueBytes } from '../template/text-files.js';
import { sha256Hex, type LockedFile } from '../template/lock.js';
import { unifiedDiff } from './diff.js';
import { mergeJsonByKey } from './json-merge.js';
import { mergeThreeWay } from './merge.js';
import type { PlannedProject } from './run.js';

/** What `update` does to a file: merge the template's change (the default), leave it alone (`once`), or write the template's bytes (`replace`). */
export type UpdatePolicy = 'merge' | 'once' | 'replace';

/** A rule of the manifest's `updatePolicy`: the files matching the glob `path` (a project path) get `policy`. */
export interface UpdatePolicyRule {
  path: string;
  policy: UpdatePolicy;
}

/** The policy of one project path, and the rule that gave it (for the report), none for the default `merge`. */
export interface FilePolicy {
  policy: UpdatePolicy;
  rule?: string;
}

/**
 * The policy of each project path: the project's own `skip` globs first (each is `once`: the
 * project decides about its files), then the template's rules in order; the first match wins and
 * a path no rule matches is merged. Globs (`core/glob.ts`: matched in linear time, as they come
 * from the template) apply to the `/`-separated path in the project, dotfiles included. Throws
 * naming the rule whose glob cannot be used.
 */
export function updatePolicies(templateRules: readonly UpdatePolicyRule[] = [], skip: readonly string[] = []): (path: string) => FilePolicy {
  const compile = (glob: string, where: string): ((path: string) => boolean) => {
    try {
      return globMatcher(glob);
    } catch (error) {
      throw new TypeError(`${where}: ${errorMessage(error)}`, { cause: error });
    }
  };
  const rules = [
    ...skip.map((glob, n) => ({ matches: compile(glob, `skip[${n}] of the lock`), found: { policy: 'once' as const, rule: `skipped by the project (update --skip ${glob})` } })),
    ...templateRules.map(({ path, policy }, n) => ({ matches: compile(path, `updatePolicy[${n}].path of the template`), found: { policy, rule: `updatePolicy "${policy}" of ${path}` } })),
  ];
  return (path) => rules.find((rule) => rule.matches(path))?.found ?? { policy: 'merge' };
}

/** Files merged by key when their line merge conflicts. */
const JSON_FILE = /\.json$/i;

/** One file of a template's rendering. */
export interface RenderedContent {
  content: Buffer;
  /** Its mode, for a file the update creates (0o755 keeps a script executable). */
  mode?: number;
}

export type FileUpdateStatus = 'created' | 'updated' | 'merged' | 'conflict' | 'kept' | 'removed';

/** What the update does to one file of the project. */
export interface FileUpdate {
  path: string;
  status: FileUpdateStatus;
  /** Why, in a few words, for `kept` and `conflict`. */
  reason?: string;
  /** The change to the project file (for `--conflict rej`, the patch written to `rejectFile`). */
  diff: string;
  /** True when the file is binary: no line diff then. */
  binary?: boolean;
  /** The `.rej` file written beside the untouched project file (`--conflict rej`). */
  rejectFile?: string;
}

export interface MergeRenderingsInput {
  /** The project as the migration steps left it; the merge's changes are laid over it. */
  project: PlannedProject;
  /**
   * The rendering of the locked version with the lock's answers, by project path; empty when that
   * version is not to be had (then the lock alone says which files were generated, and a file
   * changed on both sides is compared whole).
   */
  base: ReadonlyMap<string, RenderedContent>;
  /** The rendering of the target version with the new answers. */
  target: ReadonlyMap<string, RenderedContent>;
  /** The lock's file hashes: a file whose content still has its hash was not changed in the project. */
  lockedFiles: Readonly<Record<string, LockedFile>>;
  /** The template side's label in conflict markers: `<id>@<version>`. */
  label: string;
  /** Conflicts as markers in the file (`inline`, the default) or as a `.rej` file beside it. */
  conflictStyle?: 'inline' | 'rej';
  /** The policy of each project path (`updatePolicies`); every file is merged unless given. */
  policyOf?: (path: string) => FilePolicy;
}

/** The suffix of the patch written beside a file whose conflicts are left to a person. */
export const REJECT_SUFFIX = '.rej';

const text = (data: Buffer | undefined): string | undefined => data?.toString('utf8');

function diffOf(path: string, before: Buffer | undefined, after: Buffer | undefined): string {
  return unifiedDiff(text(before), text(after), { ...(before ? { oldPath: path } : {}), ...(after ? { newPath: path } : {}) });
}

/** Where the steps left each file of a rendering made for the project before them: renamed files at their new path, deleted ones gone. */
function followSteps<T>(project: PlannedProject, files: Iterable<[string, T]>): Map<string, T> {
  const moves = project.moves();
  const followed = new Map<string, T>();
  for (const [path, value] of files) {
    const moved = moves.get(path);
    if (moved !== undefined) followed.set(moved, value);
    else if (!project.removedBySteps(path)) followed.set(path, value);
  }
  return followed;
}

/**
 * Lays the template's change between `base` and `target` over the project, file by file (see the
 * module comment), and returns what happens to every file that changes or needs attention, in
 * path order. Files the template did not change are left alone and not listed.
 */
export async function mergeRenderings(input: MergeRenderingsInput): Promise<FileUpdate[]> {
  const { project, target, label } = input;
  const style = input.conflictStyle ?? 'inline';
  const base = followSteps(project, input.base);
  const locked = followSteps(project, Object.entries(input.lockedFiles));
  const baseKnown = input.base.size > 0;
  const paths = [...new Set([...base.keys(), ...target.keys(), ...locked.keys()])].sort();
  const updates: FileUpdate[] = [];

  for (const path of paths) {
    const before = base.get(path)?.content;
    const after = target.get(path);
    const { policy, rule } = input.policyOf?.(path) ?? { policy: 'merge' as const };
    if (policy === 'once') {
      // Never written by an update; said when the template changed it, so the project knows what it did not get.
      if (!(before !== undefined && after !== undefined && before.equals(after.content)) && (before !== undefined || after !== undefined)) {
        updates.push({ path, status: 'kept', reason: `${rule ?? 'updatePolicy "once"'}: update leaves it as it is`, diff: '' });
      }
      continue;
    }
    const refusal = await project.refusal(path);
    if (refusal !== undefined) {
      updates.push({ path, status: 'conflict', reason: `not written: ${refusal}`, diff: '' });
      continue;
    }
    const current = await project.planned(path);
    if (current === 'folder') {
      if (after) updates.push({ path, status: 'conflict', reason: 'a folder is in the project where the template has a file', diff: '' });
      continue;
    }
    const lockedHash = locked.get(path)?.sha256;
    const changedInProject = current !== undefined && (lockedHash !== undefined ? sha256Hex(current) !== lockedHash : !before?.equals(current));
    // A file that is not UTF-8 is merged as a binary one: decoding it would replace its bytes with U+FFFD.
    const binary = [before, after?.content, current].some((data) => data !== undefined && isOpaqueBytes(data));
    const shown = binary ? { binary: true } : {};
    // Generated at the locked version: in its rendering, or (when that is not to be had) in the lock.
    const generated = before !== undefined || lockedHash !== undefined;

    if (policy === 'replace') {
      const reason = `${rule ?? 'updatePolicy "replace"'}: the template's bytes`;
      if (after) {
        if (current?.equals(after.content)) continue;
        await project.put(path, after.content, after.mode);
        updates.push({ path, status: current === undefined ? 'created' : 'updated', reason, diff: binary ? '' : diffOf(path, current, after.content), ...shown });
      } else if (current !== undefined && (baseKnown ? before !== undefined : generated)) {
        // Only what the template generated is the template's to remove; a file the project added stays.
        await project.remove(path);
        updates.push({ path, status: 'removed', reason, diff: binary ? '' : diffOf(path, current, undefined), ...shown });
      }
      continue;
    }

    if (!after) {
      // With the base at hand only its files are the template's to remove (the lock also lists files steps created).
      if (!(baseKnown ? before !== undefined : generated) || current === undefined) continue;
      if (changedInProject) {
        updates.push({ path, status: 'kept', reason: 'removed from the template, but changed in the project', diff: '', ...shown });
      } else {
        await project.remove(path);
        updates.push({ path, status: 'removed', diff: binary ? '' : diffOf(path, current, undefined), ...shown });
      }
      continue;
    }
    if (before?.equals(after.content)) continue; // the template did not change it
    if (current?.equals(after.content)) continue; // the project already has the template's new content

    if (current === undefined) {
      if (generated) {
        updates.push({ path, status: 'kept', reason: 'deleted in the project: stays deleted', diff: '', ...shown });
      } else {
        await project.put(path, after.content, after.mode);
        updates.push({ path, status: 'created', diff: binary ? '' : diffOf(path, undefined, after.content), ...shown });
      }
      continue;
    }
    if (!changedInProject && generated) {
      await project.put(path, after.content);
      updates.push({ path, status: 'updated', diff: binary ? '' : diffOf(path, current, after.content), ...shown });
      continue;
    }
    if (binary) {
      updates.push({ path, status: 'conflict', reason: 'a binary file (or one not in UTF-8) changed in the project and in the template: kept as it is', diff: '', binary: true });
      continue;
    }
    // Changed in the project and in the template, or a new template file where the project has another.
    const merged = mergeThreeWay(text(before) ?? '', text(current) ?? '', text(after.content) ?? '', { ours: 'project', theirs: label });
    if (merged.clean) {
      await project.put(path, merged.text);
      updates.push({ path, status: 'merged', diff: diffOf(path, current, Buffer.from(merged.text, 'utf8')) });
      continue;
    }
    // Lines in conflict in a JSON file are often different keys side by side: merged by key when no key changed on both sides.
    const byKey = before && JSON_FILE.test(path) ? mergeJsonByKey(text(before) ?? '', text(current) ?? '', text(after.content) ?? '') : undefined;
    if (byKey !== undefined) {
      await project.put(path, byKey);
      updates.push({ path, status: 'merged', reason: 'merged by key: the line merge conflicted, no key changed on both sides', diff: diffOf(path, current, Buffer.from(byKey, 'utf8')) });
      continue;
    }
    const reason = before
      ? `${merged.conflicts} conflicting change${merged.conflicts === 1 ? '' : 's'} in the project and in the template`
      : generated
        ? 'changed in the project, and the rendering it was generated from is not to be had: compare the whole file'
        : 'the template adds this file and the project has a different one';
    if (style === 'rej') {
      const rejectFile = `${path}${REJECT_SUFFIX}`;
      const patch = unifiedDiff(text(before), text(after.content), { ...(before ? { oldPath: path } : {}), newPath: path });
      await project.put(rejectFile, patch);
      updates.push({ path, status: 'conflict', reason, diff: patch, rejectFile });
    } else {
      await project.put(path, merged.text);
      updates.push({ path, status: 'conflict', reason, diff: diffOf(path, current, Buffer.from(merged.text, 'utf8')) });
    }
  }
  return updates;
}
