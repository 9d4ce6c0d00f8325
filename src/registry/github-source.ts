/**
 * A registry source reading GitHub releases: every published (non-draft, non-prerelease) release
 * of the configured repositories that carries a `template.json` asset and exactly one `.tgz`
 * asset is one template version (what the publish action creates).
 *
 * The config file (JSON):
 *
 *     { "repositories": ["acme/node-service", { "repository": "acme/monorepo", "templatePath": "templates/web" }] }
 *
 * `templatePath` is where the template lives in the repository; its README is the documentation
 * link. A repository that cannot be read (404, network) is skipped with a warning and the others
 * go on; when every repository fails, `versions()` throws (an empty registry is never the answer
 * to a bad token).
 */
import { readFile } from 'node:fs/promises';

import type { Octokit } from '@octokit/rest';

import { mapLimit } from '../core/concurrency.js';
import { describeSchemaErrors } from '../core/messages.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { entryViolations, toEntry } from './document.js';
import type { RegistrySource, SourceVersion } from './source.js';
import { errorMessage } from '../core/errors.js';

export const MANIFEST_ASSET = 'template.json';

/** A template.json asset larger than this is not read. */
const MAX_MANIFEST_BYTES = 1024 * 1024;

export interface GithubRepositoryConfig {
  owner: string;
  repo: string;
  /** Folder of the template inside the repository (its README is the documentation). */
  templatePath?: string;
}

export interface GithubSourceConfig {
  repositories: GithubRepositoryConfig[];
}

export interface GithubSourceDependencies {
  /** An Octokit, e.g. from `createGitHubClient` (with retries and rate-limit handling). */
  octokit: Octokit;
  /** Receives one line per skipped repository or release. Default: ignore. */
  onWarning?: (message: string) => void;
  /** Repositories read at the same time (default 4). */
  concurrency?: number;
}

/** The config file is unreadable or breaks a rule; the message names the file and the entry. */
export class GithubSourceConfigError extends Error {
  override readonly name = 'GithubSourceConfigError';
}

/** Every configured repository failed: the build must not go on with an empty registry. */
export class GithubSourceError extends Error {
  override readonly name = 'GithubSourceError';
}

// ---------------------------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------------------------

const NAME_PART = /^[A-Za-z0-9_.-]+$/;

function parseRepository(value: string, where: string, file: string): { owner: string; repo: string } {
  const [owner, repo, ...rest] = value.split('/');
  if (!owner || !repo || rest.length > 0 || !NAME_PART.test(owner) || !NAME_PART.test(repo) || owner.startsWith('.') || repo.startsWith('.')) {
    throw new GithubSourceConfigError(`${file}: ${where} must be "owner/repo" (got ${JSON.stringify(value)})`);
  }
  return { owner, repo };
}

function parseTemplatePath(value: unknown, where: string, file: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new GithubSourceConfigError(`${file}: ${where}.templatePath must be a non-empty string (got ${JSON.stringify(value)})`);
  }
  const cleaned = value.trim().replace(/^\.\/+/, '').replace(/\/+$/, '');
  if (cleaned.startsWith('/') || cleaned.split('/').some((part) => part === '..' || part === '')) {
    throw new GithubSourceConfigError(`${file}: ${where}.templatePath must be a relative folder inside the repository (got ${JSON.stringify(value)})`);
  }
  return cleaned;
}

/** Checks a parsed config file; `file` is named in every error. */
export function parseGithubSourceConfig(value: unknown, file: string): GithubSourceConfig {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new GithubSourceConfigError(`${file}: must be a JSON object with a "repositories" array`);
  }
  const unknownKeys = Object.keys(value).filter((k) => k !== 'repositories' && k !== '$schema');
  if (unknownKeys.length > 0) throw new GithubSourceConfigError(`${file}: unknown field ${JSON.stringify(unknownKeys[0])} (expected "repositories")`);
  const list = (value as { repositories?: unknown }).repositories;
  if (!Array.isArray(list) || list.length === 0) {
    throw new GithubSourceConfigError(`${file}: "repositories" must be a non-empty array of "owner/repo" strings or { "repository": "owner/repo" } objects`);
  }
  const seen = new Set<string>();
  const repositories = list.map((item: unknown, index): GithubRepositoryConfig => {
    const where = `repositories[${index}]`;
    let parsed: GithubRepositoryConfig;
    if (typeof item === 'string') {
      parsed = parseRepository(item, where, file);
    } else if (item && typeof item === 'object' && !Array.isArray(item)) {
      const record = item as Record<string, unknown>;
      const extra = Object.keys(record).filter((k) => k !== 'repository' && k !== 'templatePath');
      if (extra.length > 0) {
        throw new GithubSourceConfigError(`${file}: ${where} has an unknown field ${JSON.stringify(extra[0])} (expected "repository" and optionally "templatePath")`);
      }
      if (typeof record.repository !== 'string') throw new GithubSourceConfigError(`${file}: ${where}.repository is required ("owner/repo")`);
      parsed = parseRepository(record.repository, `${where}.repository`, file);
      if (record.templatePath !== undefined) parsed.templatePath = parseTemplatePath(record.templatePath, where, file);
    } else {
      throw new GithubSourceConfigError(`${file}: ${where} must be "owner/repo" or { "repository": "owner/repo" } (got ${JSON.stringify(item)})`);
    }
    const key = `${parsed.owner}/${parsed.repo}`.toLowerCase();
    if (seen.has(key)) throw new GithubSourceConfigError(`${file}: ${where} repeats ${parsed.owner}/${parsed.repo}`);
    seen.add(key);
    return parsed;
  });
  return { repositories };
}

/** Reads and checks the config file; errors name the file and the entry. */
export async function loadGithubSourceConfig(file: string): Promise<GithubSourceConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new GithubSourceConfigError(code === 'ENOENT' ? `${file}: no such file` : `${file}: cannot be read (${code ?? String(error)})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new GithubSourceConfigError(`${file}: not valid JSON (${errorMessage(error)})`);
  }
  return parseGithubSourceConfig(value, file);
}

// ---------------------------------------------------------------------------------------------
// Source
// ---------------------------------------------------------------------------------------------

interface ReleaseAsset {
  id: number;
  name: string;
  size: number;
  download_count: number;
  browser_download_url: string;
}

interface Release {
  tag_name: string;
  draft: boolean;
  prerelease: boolean;
  published_at: string | null;
  created_at: string;
  assets: ReleaseAsset[];
}

function describeError(error: unknown): string {
  const status = (error as { status?: unknown } | null)?.status;
  const data = (error as { response?: { data?: unknown } } | null)?.response?.data;
  const message =
    data && typeof data === 'object' && 'message' in data && typeof data.message === 'string'
      ? data.message
      : error instanceof Error
        ? error.message
        : String(error);
  return typeof status === 'number' ? `${status} ${message}` : message;
}

/** The body of an asset download: Octokit gives JSON already parsed, text, or an ArrayBuffer. */
function manifestFromBody(data: unknown): unknown {
  if (data instanceof ArrayBuffer) return JSON.parse(Buffer.from(data).toString('utf8'));
  if (ArrayBuffer.isView(data)) return JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  if (typeof data === 'string') return JSON.parse(data);
  return data;
}

/** The template versions of one repository; throws when the repository or its releases cannot be read. */
async function repositoryVersions(octokit: Octokit, config: GithubRepositoryConfig, warn: (message: string) => void): Promise<SourceVersion[]> {
  const { owner, repo } = config;
  const where = `${owner}/${repo}`;
  const { data: repository } = await octokit.rest.repos.get({ owner, repo });
  const releases = (await octokit.paginate(octokit.rest.repos.listReleases, { owner, repo, per_page: 100 })) as Release[];
  const documentationUrl = config.templatePath
    ? `${repository.html_url}/tree/HEAD/${config.templatePath.split('/').map(encodeURIComponent).join('/')}#readme`
    : `${repository.html_url}#readme`;

  const versions: SourceVersion[] = [];
  for (const release of releases) {
    if (release.draft || release.prerelease) continue;
    const skip = (why: string): void => warn(`${where}: skipped release ${release.tag_name}: ${why}`);
    const manifestAsset = release.assets.find((a) => a.name === MANIFEST_ASSET);
    const archives = release.assets.filter((a) => a.name.endsWith('.tgz'));
    if (!manifestAsset) {
      skip(`it has no ${MANIFEST_ASSET} asset`);
      continue;
    }
    if (archives.length !== 1) {
      skip(archives.length === 0 ? 'it has no .tgz asset' : `it has ${archives.length} .tgz assets (${archives.map((a) => a.name).join(', ')}); expected one`);
      continue;
    }
    const archive = archives[0] as ReleaseAsset;
    if (manifestAsset.size > MAX_MANIFEST_BYTES) {
      skip(`its ${MANIFEST_ASSET} is ${manifestAsset.size} bytes (at most ${MAX_MANIFEST_BYTES})`);
      continue;
    }

    let manifest: unknown;
    try {
      const { data } = await octokit.rest.repos.getReleaseAsset({ owner, repo, asset_id: manifestAsset.id, headers: { accept: 'application/octet-stream' } });
      manifest = manifestFromBody(data);
    } catch (error) {
      skip(`its ${MANIFEST_ASSET} could not be read (${describeError(error)})`);
      continue;
    }
    const problems = describeSchemaErrors(schemaErrors('template-manifest', manifest));
    if (problems.length > 0) {
      const shown = problems.slice(0, 3).map((p) => `${p.pointer || '/'} ${p.message}`);
      skip(`its ${MANIFEST_ASSET} is invalid: ${shown.join('; ')}${problems.length > 3 ? `; and ${problems.length - 3} more` : ''}`);
      continue;
    }
    const valid = manifest as TemplateManifest;
    const tagVersion = release.tag_name.replace(/^v/, '');
    if (valid.version !== tagVersion) {
      skip(`${MANIFEST_ASSET} says version ${valid.version}, the tag says ${tagVersion}`);
      continue;
    }

    const version: SourceVersion = {
      manifest: valid,
      downloadUrl: archive.browser_download_url,
      size: archive.size,
      createdAt: release.published_at ?? release.created_at,
      repositoryUrl: repository.html_url,
      documentationUrl,
      stats: {
        downloads: archive.download_count,
        stars: repository.stargazers_count,
        forks: repository.forks_count,
        issues: repository.open_issues_count,
      },
    };
    // One stranger's release must never fail the whole build: check the entry it becomes, too.
    const entryProblems = entryViolations(toEntry(version));
    if (entryProblems.length > 0) {
      skip(`its registry entry would be invalid: ${entryProblems.slice(0, 3).map((p) => `${p.pointer || '/'} ${p.message}`).join('; ')}`);
      continue;
    }
    versions.push(version);
  }
  return versions;
}

/**
 * The template versions published as GitHub releases of the configured repositories. When two
 * repositories publish the same name and version, the first in the config wins (with a warning).
 */
export function githubReleasesSource(config: GithubSourceConfig, deps: GithubSourceDependencies): RegistrySource {
  const { octokit, onWarning = () => undefined, concurrency = 4 } = deps;
  return {
    async versions() {
      const outcomes = await mapLimit(config.repositories, concurrency, async (repository) => {
        const warnings: string[] = [];
        try {
          return { ok: true as const, versions: await repositoryVersions(octokit, repository, (m) => warnings.push(m)), warnings };
        } catch (error) {
          warnings.push(`${repository.owner}/${repository.repo}: skipped the repository: ${describeError(error)}`);
          return { ok: false as const, versions: [], warnings };
        }
      });
      // Warnings are reported in config order, whatever order the requests finished in.
      for (const outcome of outcomes) for (const warning of outcome.warnings) onWarning(warning);
      if (outcomes.length > 0 && outcomes.every((o) => !o.ok)) {
        throw new GithubSourceError(`none of the ${outcomes.length} configured repositories could be read; check the token and the config (see the warnings)`);
      }

      const owners = new Map<string, string>();
      const versions: SourceVersion[] = [];
      outcomes.forEach((outcome, index) => {
        const repository = config.repositories[index] as GithubRepositoryConfig;
        const from = `${repository.owner}/${repository.repo}`;
        for (const version of outcome.versions) {
          const key = `${version.manifest.name}@${version.manifest.version}`;
          const first = owners.get(key);
          if (first !== undefined) {
            onWarning(`${from}: skipped ${key}: ${first} already publishes it`);
            continue;
          }
          owners.set(key, from);
          versions.push(version);
        }
      });
      return versions;
    },
  };
}
