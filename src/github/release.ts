/**
 * The GitHub release of a published template version: a client with retries and rate-limit
 * handling, a small `ReleaseApi` (so the action can be tested with fakes) with its Octokit
 * implementation, and `publishRelease`, which is safe to re-run.
 *
 * `publishRelease` never creates a second release for a tag: it first looks for one (drafts
 * included; GitHub's `/releases/tags/{tag}` endpoint does not return drafts, and GitHub lets
 * several drafts share a tag name, so it lists the releases). A new release is created as a draft
 * and only published once its assets are uploaded, so a run that crashes half-way leaves at most a
 * draft, which the next run finds and completes.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';

import type { Octokit } from '@octokit/rest';

import { errorMessage } from '../core/errors.js';
import { OPEN_BODY } from './client.js';

// ---------------------------------------------------------------------------------------------
// Release API
// ---------------------------------------------------------------------------------------------

export interface GitHubRelease {
  id: number;
  tag_name: string;
  name: string | null;
  body?: string | null;
  draft: boolean;
  html_url: string;
  upload_url: string;
}

export interface GitHubReleaseAsset {
  id: number;
  name: string;
  browser_download_url: string;
}

export interface ReleaseAssetFile {
  name: string;
  path: string;
  contentType: string;
}

export interface ReleaseApi {
  /** The release of `tag`, drafts included; a published release wins over drafts, then the oldest draft. */
  findReleaseByTag(tag: string): Promise<GitHubRelease | undefined>;
  createRelease(input: { tag: string; name: string; body: string; draft: boolean }): Promise<GitHubRelease>;
  updateRelease(id: number, input: { name?: string; body?: string; draft?: boolean }): Promise<GitHubRelease>;
  listAssets(releaseId: number): Promise<GitHubReleaseAsset[]>;
  deleteAsset(assetId: number): Promise<void>;
  uploadAsset(release: GitHubRelease, asset: ReleaseAssetFile): Promise<GitHubReleaseAsset>;
}

/** A failed GitHub API call, with what was being done and a hint for the usual causes. */
export class GitHubApiError extends Error {
  override readonly name = 'GitHubApiError';
  /** The HTTP status; 500 for network errors (as Octokit reports them). */
  readonly status: number | undefined;

  constructor(message: string, status: number | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
  }
}

function statusOf(error: unknown): number | undefined {
  const status = (error as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

/** GitHub's own message (plus validation error codes) from an Octokit RequestError. */
function gitHubMessage(error: unknown): string {
  const data = (error as { response?: { data?: unknown } } | null)?.response?.data;
  if (data && typeof data === 'object' && 'message' in data && typeof data.message === 'string') {
    const errors = 'errors' in data && Array.isArray(data.errors) ? (data.errors as unknown[]) : [];
    const codes = errors
      .map((e) => (e && typeof e === 'object' ? [(e as Record<string, unknown>).field, (e as Record<string, unknown>).code].filter((x) => typeof x === 'string').join(' ') : ''))
      .filter(Boolean);
    return codes.length > 0 ? `${data.message} (${codes.join(', ')})` : data.message;
  }
  return errorMessage(error);
}

function hintFor(status: number | undefined, owner: string, repo: string): string {
  switch (status) {
    case 401:
      return 'the token was rejected; check the token given to the action';
    case 403:
      return 'the token may lack permission: the workflow needs "permissions: contents: write"';
    case 404:
      return `repository ${owner}/${repo} or the release was not found, or the token cannot see it`;
    default:
      return '';
  }
}

async function call<T>(what: string, owner: string, repo: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const status = statusOf(error);
    const hint = hintFor(status, owner, repo);
    const message = `GitHub API: ${what} failed${status === undefined ? '' : ` with ${status}`}: ${gitHubMessage(error)}${hint ? ` (${hint})` : ''}`;
    throw new GitHubApiError(message, status, { cause: error });
  }
}

function toRelease(data: GitHubRelease): GitHubRelease {
  const { id, tag_name, name, body, draft, html_url, upload_url } = data;
  return { id, tag_name, name, body, draft, html_url, upload_url };
}

function toAsset(data: { id: number; name: string; browser_download_url: string }): GitHubReleaseAsset {
  const { id, name, browser_download_url } = data;
  return { id, name, browser_download_url };
}

/** `upload_url` is an RFC 6570 template (`…/assets{?name,label}`): drop the template part, add the name. */
export function assetUploadUrl(uploadUrl: string, name: string): string {
  const base = uploadUrl.replace(/\{[^}]*\}/g, '');
  return `${base}${base.includes('?') ? '&' : '?'}name=${encodeURIComponent(name)}`;
}

export function octokitReleaseApi(octokit: Octokit, owner: string, repo: string): ReleaseApi {
  const where = `${owner}/${repo}`;
  return {
    findReleaseByTag: (tag) =>
      call(`listing the releases of ${where}`, owner, repo, async () => {
        const drafts: GitHubRelease[] = [];
        const pages = octokit.paginate.iterator(octokit.rest.repos.listReleases, { owner, repo, per_page: 100 });
        for await (const { data } of pages) {
          for (const release of data) {
            if (release.tag_name !== tag) continue;
            if (!release.draft) return toRelease(release);
            drafts.push(toRelease(release));
          }
        }
        return drafts.sort((a, b) => a.id - b.id)[0];
      }),

    createRelease: ({ tag, name, body, draft }) =>
      call(`creating the release ${tag} in ${where}`, owner, repo, async () => {
        const { data } = await octokit.rest.repos.createRelease({ owner, repo, tag_name: tag, name, body, draft });
        return toRelease(data);
      }),

    updateRelease: (id, input) =>
      call(`updating release ${id} of ${where}`, owner, repo, async () => {
        const { data } = await octokit.rest.repos.updateRelease({ owner, repo, release_id: id, ...input });
        return toRelease(data);
      }),

    listAssets: (releaseId) =>
      call(`listing the assets of release ${releaseId} of ${where}`, owner, repo, async () => {
        const assets = await octokit.paginate(octokit.rest.repos.listReleaseAssets, {
          owner,
          repo,
          release_id: releaseId,
          per_page: 100,
        });
        return assets.map(toAsset);
      }),

    deleteAsset: (assetId) =>
      call(`deleting release asset ${assetId} of ${where}`, owner, repo, async () => {
        await octokit.rest.repos.deleteReleaseAsset({ owner, repo, asset_id: assetId });
      }),

    uploadAsset: (release, asset) =>
      call(`uploading ${asset.name} to release ${release.tag_name} of ${where}`, owner, repo, async () => {
        const { size } = await stat(asset.path);
        const { data } = await octokit.request<{ id: number; name: string; browser_download_url: string }>({
          method: 'POST',
          url: assetUploadUrl(release.upload_url, asset.name),
          headers: { 'content-type': asset.contentType, 'content-length': size },
          request: { [OPEN_BODY]: () => createReadStream(asset.path) },
        });
        return toAsset(data);
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Publishing
// ---------------------------------------------------------------------------------------------

export interface PublishReleaseOptions {
  tag: string;
  name: string;
  body: string;
  assets: ReleaseAssetFile[];
}

export interface PublishedRelease {
  id: number;
  url: string;
  /** False when an existing release (a draft left by a crashed run, or a published one) was reused. */
  created: boolean;
  /** The uploaded assets, in the order given. */
  assets: GitHubReleaseAsset[];
}

/**
 * Creates or completes the release of `tag`: an existing release (draft or not) gets the new name,
 * body and assets (same-name assets are replaced) and is published; otherwise a draft is created,
 * the assets uploaded, then the draft published.
 */
export async function publishRelease(api: ReleaseApi, options: PublishReleaseOptions): Promise<PublishedRelease> {
  const { tag, name, body, assets } = options;
  const names = assets.map((a) => a.name);
  const duplicate = names.find((n, i) => names.indexOf(n) !== i);
  if (duplicate !== undefined) throw new Error(`Two release assets are named ${duplicate}`);

  const existing = await api.findReleaseByTag(tag);
  const release = existing ?? (await api.createRelease({ tag, name, body, draft: true }));
  let current = existing ? await api.listAssets(release.id) : [];

  const uploaded: GitHubReleaseAsset[] = [];
  for (const asset of assets) {
    const replaceSameName = async (): Promise<void> => {
      for (const old of current.filter((a) => a.name === asset.name)) await api.deleteAsset(old.id);
      current = current.filter((a) => a.name !== asset.name);
    };
    await replaceSameName();
    try {
      uploaded.push(await api.uploadAsset(release, asset));
    } catch (error) {
      // A 422 after a failed attempt may be the partial upload of that attempt, which GitHub keeps
      // under the name: delete it and upload once more.
      if (statusOf(error) !== 422) throw error;
      current = await api.listAssets(release.id);
      if (!current.some((a) => a.name === asset.name)) throw error;
      await replaceSameName();
      uploaded.push(await api.uploadAsset(release, asset));
    }
  }

  const published = await api.updateRelease(release.id, existing ? { name, body, draft: false } : { draft: false });
  return { id: published.id, url: published.html_url, created: !existing, assets: uploaded };
}
