
import { loadSemver } from '../core/lazy/semver.load.js';
import type { CompatibilityEnvironment, CompatibilityResult, RegistryDocument, TemplateEntry } from '../core/schema-types.js';
import { selectLatest } from '../core/listing.js';

/** A declared version range: a semver range string, or the matrix shape `{ min, max?, supported, notes? }`. */
export type DeclaredRange = string | { min: string; max?: string; supported?: boolean; notes?: string };
/** A declared platform: a name, or the matrix shape `{ name, supported, notes? }`. */
export type DeclaredPlatform = string | { name: string; supported?: boolean; notes?: string };

export interface CheckOptions {
  /** Check this exact version of the template instead of the one the spec's selection rule picks. */
  version?: string;
}

function coerce(version: string): string | undefined {
  const { coerce, valid } = loadSemver();
  return valid(version) ?? coerce(version)?.version ?? undefined;
}

function describeRange(range: DeclaredRange): string {
  if (typeof range === 'string') return range;
  return `${range.min}${range.max ? ` - ${range.max}` : ' and later'}${range.supported === false ? ' (unsupported)' : ''}`;
}

/** Whether a version lies in a declared range (a matrix range must also be `supported`). */
export function inRange(version: string, range: DeclaredRange): boolean {
  const v = coerce(version);
  if (!v) return false;
  if (typeof range === 'string') {
    try {
      return loadSemver().satisfies(v, range);
    } catch {
      return false;
    }
  }
  const min = coerce(range.min);
  const max = range.max ? coerce(range.max) : undefined;
  if (!min || (range.max && !max)) return false;
  // A bare "18" as max means the whole 18.x line.
  const maxRange = range.max && /^\d+(\.\d+)?$/.test(range.max) ? `<=${range.max}.x` : max ? `<=${max}` : '';
  return range.supported !== false && loadSemver().satisfies(v, `>=${min} ${maxRange}`.trim());
}

/** The runtimes whose version the check compares, with the environment field and the compatibility array of each. */
const CHECKED_RUNTIMES = [
  { runtime: 'methodology', label: 'methodology version', environment: 'methodologyVersion', declared: 'methodologyVersions' },
  { runtime: 'node', label: 'node version', environment: 'nodeVersion', declared: 'nodeVersions' },
  { runtime: 'npm', label: 'npm version', environment: 'npmVersion', declared: 'npmVersions' },
] as const;

export type CheckedRuntime = (typeof CHECKED_RUNTIMES)[number]['runtime'];

interface EntryCompatibility {
  methodologyVersions?: DeclaredRange[];
  nodeVersions?: DeclaredRange[];
  npmVersions?: DeclaredRange[];
  platforms?: DeclaredPlatform[];
  deprecated?: string[];
}

/** A range that lets every version through: nothing to check. */
const anyVersion = (range: DeclaredRange): boolean => typeof range === 'string' && (range.trim() === '' || range.trim() === '*' || range.trim() === 'x');

/**
 * What an entry declares for one runtime: the ranges of its compatibility array, and the range of
 * `dependencies.<runtime>` when that is not one of them already; ranges allowing anything left out.
 */
function declaredFor(entry: TemplateEntry, runtime: (typeof CHECKED_RUNTIMES)[number]): { ranges: DeclaredRange[]; dependency?: string } {
  const compatibility = (entry.compatibility ?? {}) as EntryCompatibility;
  const ranges = (compatibility[runtime.declared] ?? []).filter((range) => !anyVersion(range));
  const dependency = (entry.dependencies as Record<string, unknown> | undefined)?.[runtime.runtime];
  const extra = typeof dependency === 'string' && !anyVersion(dependency) && !ranges.includes(dependency) ? dependency : undefined;
  return extra === undefined ? { ranges } : { ranges, dependency: extra };
}

/** Whether the entry declares a version range for `runtime` (so the environment's version of it is worth finding). */
export function declaresRuntime(entry: TemplateEntry, runtime: CheckedRuntime): boolean {
  const checked = CHECKED_RUNTIMES.find((candidate) => candidate.runtime === runtime);
  if (!checked) return false;
  const { ranges, dependency } = declaredFor(entry, checked);
  return ranges.length > 0 || dependency !== undefined;
}

function checkRuntime(entry: TemplateEntry, runtime: (typeof CHECKED_RUNTIMES)[number], version: string | undefined, issues: string[], warnings: string[]): void {
  const { ranges, dependency } = declaredFor(entry, runtime);
  if (ranges.length === 0 && dependency === undefined) return;
  if (!version) {
    const declared = [...ranges.map(describeRange), ...(dependency === undefined ? [] : [dependency])].join(', ');
    warnings.push(`not checked: ${runtime.runtime} ${declared} (no ${runtime.label} given)`);
    return;
  }
  if (ranges.length > 0 && !ranges.some((range) => inRange(version, range))) {
    issues.push(`${runtime.label} ${version} is outside the supported ranges: ${ranges.map(describeRange).join(', ')}`);
  }
  if (dependency !== undefined && !inRange(version, dependency)) {
    issues.push(`${runtime.label} ${version} does not satisfy ${runtime.runtime} ${dependency} (dependencies.${runtime.runtime})`);
  }
}

/** Every declared dependency the check has no environment version for (python, go, docker, ...): a warning each, never "compatible" silently. */
function uncheckedDependencies(entry: TemplateEntry, warnings: string[]): void {
  const known: readonly string[] = CHECKED_RUNTIMES.map((runtime) => runtime.runtime);
  for (const [name, range] of Object.entries((entry.dependencies ?? {}) as Record<string, unknown>)) {
    if (known.includes(name) || range === undefined) continue;
    const shown = typeof range === 'string' ? range : JSON.stringify(range);
    warnings.push(`not checked: ${name} ${shown} (only ${known.slice(0, -1).join(', ')} and ${known.at(-1) ?? ''} versions are checked)`);
  }
}

function checkPlatform(platform: string | undefined, platforms: readonly DeclaredPlatform[] | undefined, issues: string[], warnings: string[]): void {
  if (!platforms || platforms.length === 0) return;
  const declared = platforms.map((p) => (typeof p === 'string' ? { name: p, supported: true } : { supported: true, ...p }));
  const supported = declared.filter((p) => p.supported !== false).map((p) => p.name);
  if (!platform) {
    warnings.push(`not checked: platforms ${supported.join(', ') || 'none'} (no platform given)`);
    return;
  }
  const match = declared.find((p) => p.name.toLowerCase() === platform.toLowerCase());
  if (!match || match.supported === false) {
    issues.push(`platform ${platform} is not supported (supported: ${supported.join(', ') || 'none'})`);
  }
}

/**
 * The platform names the environment's `platform` is one of: Node's `process.platform` values,
 * the names a template declares its platforms by.
 */
export const KNOWN_PLATFORMS = ['aix', 'android', 'darwin', 'freebsd', 'haiku', 'linux', 'netbsd', 'openbsd', 'sunos', 'win32', 'cygwin'] as const;

/** The entry `checkCompatibility` checks: the exact version asked for, else the one the spec's selection rule picks. */
export function checkedEntry(registry: Pick<RegistryDocument, 'templates'>, templateId: string, options: CheckOptions = {}): TemplateEntry | undefined {
  const entries = registry.templates.filter((e) => e.id === templateId);
  return (options.version ? entries.find((e) => e.version === options.version) : selectLatest(entries, templateId)) ?? undefined;
}

/**
 * Checks one entry against an environment, as the spec says: an issue for a methodology, node or
 * npm version outside the declared ranges (the compatibility arrays, and `dependencies.<runtime>`),
 * an unsupported platform; a warning for each deprecated feature. Besides the spec: a warning for
 * each declared runtime that cannot be checked, either because the environment does not give its
 * version or because the check has no version of it (python, go, docker, ...). `compatible`
 * only without issues. Reads both shapes the spec mentions: string arrays and matrix objects.
 */
export function checkEntryCompatibility(entry: TemplateEntry, environment: Partial<CompatibilityEnvironment>): CompatibilityResult {
  const issues: string[] = [];
  const warnings: string[] = [];
  for (const runtime of CHECKED_RUNTIMES) checkRuntime(entry, runtime, environment[runtime.environment], issues, warnings);
  uncheckedDependencies(entry, warnings);
  const compatibility = (entry.compatibility ?? {}) as EntryCompatibility;
  checkPlatform(environment.platform, compatibility.platforms, issues, warnings);
  warnings.push(...(compatibility.deprecated ?? []).map((feature) => `feature ${feature} is deprecated`));
  return { compatible: issues.length === 0, issues, warnings };
}

/**
 * Checks a template of a registry document against an environment (`checkEntryCompatibility`);
 * an unknown template, or version, is an issue.
 */
export function checkCompatibility(
  registry: Pick<RegistryDocument, 'templates'>,
  templateId: string,
  environment: Partial<CompatibilityEnvironment>,
  options: CheckOptions = {},
): CompatibilityResult {
  const entry = checkedEntry(registry, templateId, options);
  if (!entry) {
    const what = options.version ? `${templateId}@${options.version}` : templateId;
    return { compatible: false, issues: [`template ${what} not found`], warnings: [] };
  }
  return checkEntryCompatibility(entry, environment);
}
