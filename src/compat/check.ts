import semver from 'semver';

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
  return semver.valid(version) ?? semver.coerce(version)?.version ?? undefined;
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
      return semver.satisfies(v, range);
    } catch {
      return false;
    }
  }
  const min = coerce(range.min);
  const max = range.max ? coerce(range.max) : undefined;
  if (!min || (range.max && !max)) return false;
  // A bare "18" as max means the whole 18.x line.
  const maxRange = range.max && /^\d+(\.\d+)?$/.test(range.max) ? `<=${range.max}.x` : max ? `<=${max}` : '';
  return range.supported !== false && semver.satisfies(v, `>=${min} ${maxRange}`.trim());
}

function checkVersion(what: string, version: string | undefined, ranges: readonly DeclaredRange[] | undefined, issues: string[]): void {
  if (!version || !ranges || ranges.length === 0) return;
  if (!ranges.some((range) => inRange(version, range))) {
    issues.push(`${what} ${version} is outside the supported ranges: ${ranges.map(describeRange).join(', ')}`);
  }
}

function checkPlatform(platform: string | undefined, platforms: readonly DeclaredPlatform[] | undefined, issues: string[]): void {
  if (!platform || !platforms || platforms.length === 0) return;
  const declared = platforms.map((p) => (typeof p === 'string' ? { name: p, supported: true } : { supported: true, ...p }));
  const match = declared.find((p) => p.name.toLowerCase() === platform.toLowerCase());
  if (!match || match.supported === false) {
    const supported = declared.filter((p) => p.supported !== false).map((p) => p.name);
    issues.push(`platform ${platform} is not supported (supported: ${supported.join(', ') || 'none'})`);
  }
}

/**
 * Checks a template of a registry document against an environment, as the spec says: an issue
 * for an unknown template, a methodology or node version outside the declared ranges, an
 * unsupported platform; a warning for each deprecated feature. `compatible` only without issues.
 * Reads both shapes the spec mentions: the entry's string arrays and the matrix objects.
 */
export function checkCompatibility(
  registry: Pick<RegistryDocument, 'templates'>,
  templateId: string,
  environment: Partial<CompatibilityEnvironment>,
  options: CheckOptions = {},
): CompatibilityResult {
  const entries = registry.templates.filter((e) => e.id === templateId);
  const entry: TemplateEntry | null | undefined = options.version
    ? entries.find((e) => e.version === options.version)
    : selectLatest(entries, templateId);
  if (!entry) {
    const what = options.version ? `${templateId}@${options.version}` : templateId;
    return { compatible: false, issues: [`template ${what} not found`], warnings: [] };
  }
  const compatibility = (entry.compatibility ?? {}) as {
    methodologyVersions?: DeclaredRange[];
    nodeVersions?: DeclaredRange[];
    npmVersions?: DeclaredRange[];
    platforms?: DeclaredPlatform[];
    deprecated?: string[];
  };
  const issues: string[] = [];
  checkVersion('methodology version', environment.methodologyVersion, compatibility.methodologyVersions, issues);
  checkVersion('node version', environment.nodeVersion, compatibility.nodeVersions, issues);
  checkVersion('npm version', environment.npmVersion, compatibility.npmVersions, issues);
  checkPlatform(environment.platform, compatibility.platforms, issues);
  const warnings = (compatibility.deprecated ?? []).map((feature) => `feature ${feature} is deprecated`);
  return { compatible: issues.length === 0, issues, warnings };
}
