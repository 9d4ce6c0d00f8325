/**
 * Checks of a template's declarative migration steps (`migrations/*.json`) beyond their schema:
 * each step's Liquid parses, its paths stay inside the project, its `toVersion` is above its
 * `fromVersion`; and across the steps, that no two make the same move and that every step runs
 * for every project it should.
 *
 * A run applies the steps whose `fromVersion` <= the project's version < their `toVersion`, in
 * `toVersion` order, then again from the version that hop reached, until none applies
 * (core/step-order.ts). A step is unreachable when a project at some step's `fromVersion` should
 * run it (its `toVersion` is above the project's version) but the chain jumps past it: steps
 * `1.0.0 -> 3.0.0` and `2.0.0 -> 3.0.0` leave a 1.0.0 project at 3.0.0 without the second one.
 */
import path from 'node:path';

import type { Liquid } from 'liquidjs';

import { firstLine } from '../core/errors.js';
import { isRecord } from '../core/is-record.js';
import type { RuleViolation } from '../core/messages.js';
import { chainInOrder } from '../core/step-order.js';
import { versionControlSegment } from '../core/reserved-paths.js';
import { compareVersions, VERSION_PATTERN } from '../core/versions.js';
import { didYouMean } from './suggest.js';

/** The fields of a change rendered through Liquid. */
export const RENDERED_CHANGE_FIELDS = ['path', 'newPath', 'content'] as const;


/** Why a change's `path`/`newPath` (as written, before rendering) leaves the project, or undefined. */
function pathOutsideProject(source: string): string | undefined {
  // What the Liquid renders is not known yet; its literal parts are.
  const literal = source.replace(/\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g, 'x');
  if (path.posix.isAbsolute(literal) || path.win32.isAbsolute(literal) || /^[A-Za-z]:/.test(literal)) {
    return 'is absolute; write it relative to the project root, e.g. "src/app.ts"';
  }
  const normalized = path.posix.normalize(literal.replace(/\\/g, '/'));
  if (normalized === '..' || normalized.startsWith('../')) return 'climbs out of the project with ".."; write it relative to the project root, without leading ".."';
  if (normalized === '.' || normalized === './') return 'names the project folder itself; name a file inside it';
  if (versionControlSegment(literal) !== undefined) return 'is inside version-control data (.git and the like), which a migration may never change';
  return undefined;
}

/**
 * The problems of one step file's content (its schema aside): VERSION_ORDER, LIQUID (with the
 * closest filter for an unknown one) and PATH_OUTSIDE_PROJECT, each at its field's pointer.
 * `step` may be of any shape: fields of the wrong type are left to the schema.
 */
export function checkMigrationStep(step: unknown, engine: Liquid): RuleViolation[] {
  if (!isRecord(step)) return [];
  const problems: RuleViolation[] = [];
  const { fromVersion, toVersion } = step;
  if (typeof fromVersion === 'string' && typeof toVersion === 'string' && VERSION_PATTERN.test(fromVersion) && VERSION_PATTERN.test(toVersion)) {
    if (compareVersions(toVersion, fromVersion) <= 0) {
      problems.push({ pointer: '/toVersion', code: 'VERSION_ORDER', message: `must be greater than fromVersion (${fromVersion}); a step moves a project to a later version` });
    }
  }
  const changes = Array.isArray(step.changes) ? step.changes : [];
  changes.forEach((change: unknown, index) => {
    if (!isRecord(change)) return;
    for (const field of RENDERED_CHANGE_FIELDS) {
      const source = change[field];
      if (typeof source !== 'string') continue;
      const pointer = `/changes/${index}/${field}`;
      try {
        engine.parse(source);
      } catch (error) {
        const reason = firstLine(error).replace(/, line:\d+, col:\d+.*$/, '');
        const filter = /^undefined filter: (\S+)/.exec(reason)?.[1];
        const hint = filter === undefined ? '' : didYouMean(filter, Object.keys(engine.filters));
        problems.push({ pointer, code: 'LIQUID', message: `invalid Liquid: ${reason}${hint}` });
      }
      if (field !== 'content') {
        const outside = pathOutsideProject(source);
        if (outside) problems.push({ pointer, code: 'PATH_OUTSIDE_PROJECT', message: `${JSON.stringify(source)} ${outside}` });
      }
    }
  });
  return problems;
}

/** One step file as the chain check needs it. */
export interface StepVersions {
  file: string;
  fromVersion: string;
  toVersion: string;
}

/** A problem of one step file found by comparing it with the others. */
export interface StepChainProblem extends RuleViolation {
  file: string;
}

/**
 * Problems across the steps (those with valid, ordered versions; in file-name order):
 * MIGRATION_OVERLAP for two steps making the same move (both would run, each unaware of the
 * other), MIGRATION_UNREACHABLE for a step starting after the oldest version the others migrate
 * from (a project at that version never runs it).
 */
export function checkMigrationChain(steps: readonly StepVersions[]): StepChainProblem[] {
  const problems: StepChainProblem[] = [];
  const valid = steps.filter(
    (step) => VERSION_PATTERN.test(step.fromVersion) && VERSION_PATTERN.test(step.toVersion) && compareVersions(step.toVersion, step.fromVersion) > 0,
  );
  const seen = new Map<string, StepVersions>();
  for (const step of valid) {
    const key = `${step.fromVersion}\0${step.toVersion}`;
    const other = seen.get(key);
    if (other) {
      problems.push({
        file: step.file,
        pointer: '/toVersion',
        code: 'MIGRATION_OVERLAP',
        message: `migrates ${step.fromVersion} -> ${step.toVersion}, as ${other.file} does: both would run for the same projects; merge their changes into one step, or correct this step's versions`,
      });
    } else seen.set(key, step);
  }
  // Where projects can be: at the start of any step. From each, the chain must run every step above it.
  const starts = [...new Set(valid.map((step) => step.fromVersion))].sort(compareVersions);
  const reported = new Set<StepVersions>();
  for (const start of starts) {
    const chain = chainInOrder(valid, start);
    const ran = new Set(chain.steps.map(({ step }) => step));
    for (const step of valid) {
      if (reported.has(step) || ran.has(step) || compareVersions(step.toVersion, start) <= 0) continue;
      reported.add(step);
      const jump = chain.steps.find(({ step: other }) => compareVersions(other.toVersion, step.fromVersion) > 0 && compareVersions(other.fromVersion, step.fromVersion) < 0)?.step;
      const past = jump ? `runs ${jump.file} up to ${jump.toVersion}, past this step's fromVersion,` : `stops at ${chain.reachedVersion}, before this step's fromVersion,`;
      problems.push({
        file: step.file,
        pointer: '/fromVersion',
        code: 'MIGRATION_UNREACHABLE',
        message:
          `is unreachable from ${start}: a project at ${start} migrated to ${step.toVersion} or later ${past} and never runs this step ` +
          `(a run applies the steps whose fromVersion is at or before the version it has reached), so it ends at ${step.toVersion} without this step's changes; ` +
          (jump
            ? `end ${jump.file} at ${step.fromVersion} so the chain passes through this step, or start this step at ${start}`
            : `start this step at ${chain.reachedVersion} so the chain reaches it`),
      });
    }
  }
  return problems;
}
