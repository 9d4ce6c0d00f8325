/**
 * The spec's rule for which migration steps run and in which order, and the chain of hops built
 * on it; shared by the runner (migrate/run.ts) and the checks of a template's steps
 * (template/migration-check.ts), so both follow the same rule.
 */
import { compareVersions } from './versions.js';

/** What the rule reads of a step. */
export interface VersionedStep {
  fromVersion: string;
  toVersion: string;
}

/**
 * The steps that apply at `currentVersion`, in the order they run: `fromVersion` <= current and
 * `toVersion` > current, sorted by ascending `toVersion` (ties keep their order).
 */
export function applicableInOrder<T extends VersionedStep>(steps: readonly T[], currentVersion: string): T[] {
  return steps
    .filter((step) => compareVersions(step.fromVersion, currentVersion) <= 0 && compareVersions(step.toVersion, currentVersion) > 0)
    .map((step, index) => ({ step, index }))
    .sort((x, y) => compareVersions(x.step.toVersion, y.step.toVersion) || x.index - y.index)
    .map(({ step }) => step);
}

/**
 * The steps of a run, hop after hop: the rule from `currentVersion`, then again from the highest
 * `toVersion` that hop reached, until no step applies. Steps 1.0.0 -> 2.0.0 and 2.0.0 -> 3.0.0
 * thus both run from 1.0.0. Each step comes with the version its hop starts from; `reachedVersion`
 * is where the last hop ends (`currentVersion` when no step applies). Every hop moves strictly
 * up, so the chain ends.
 */
export function chainInOrder<T extends VersionedStep>(steps: readonly T[], currentVersion: string): { steps: { step: T; hopVersion: string }[]; reachedVersion: string } {
  const chained: { step: T; hopVersion: string }[] = [];
  let current = currentVersion;
  for (;;) {
    const hop = applicableInOrder(steps, current);
    if (hop.length === 0) return { steps: chained, reachedVersion: current };
    for (const step of hop) chained.push({ step, hopVersion: current });
    current = hop.reduce((highest, step) => (compareVersions(step.toVersion, highest) > 0 ? step.toVersion : highest), current);
  }
}
