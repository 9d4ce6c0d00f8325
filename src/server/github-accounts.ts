/**
 * The numeric id of a GitHub account (user or organization), read when a trusted publisher is saved
 * without one: `GET <api>/users/<login>` (the REST API answers it for both kinds), bounded in time
 * and size. The id is what gets pinned: a login can change hands, an id never does.
 */
import { readBounded } from './oidc.js';

/** The GitHub REST API the server asks (`--github-api-url`, `GITHUB_API_URL`). */
export const DEFAULT_GITHUB_API_URL = 'https://api.github.com';

export const OWNER_LOOKUP_TIMEOUT_MS = 5000;
const MAX_ACCOUNT_BYTES = 64 * 1024;

/** The API could not be asked, or answered something else than the account or 404. */
export class OwnerLookupError extends Error {
  override readonly name = 'OwnerLookupError';
}

/** The id of account `login` as text; undefined when GitHub has no such account (404). */
export async function githubAccountId(apiUrl: string, login: string): Promise<string | undefined> {
  const url = `${apiUrl.replace(/\/+$/, '')}/users/${encodeURIComponent(login)}`;
  let response: Response;
  try {
    response = await fetch(url, {
      redirect: 'manual',
      signal: AbortSignal.timeout(OWNER_LOOKUP_TIMEOUT_MS),
      headers: { accept: 'application/vnd.github+json', 'user-agent': 'template-registry', 'x-github-api-version': '2022-11-28' },
    });
  } catch (error) {
    throw new OwnerLookupError(`could not ask ${url}: ${(error as Error).message}`);
  }
  if (response.status === 404) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new OwnerLookupError(`${url} answered ${response.status}`);
  }
  let account: unknown;
  try {
    account = JSON.parse(await readBounded(response, MAX_ACCOUNT_BYTES, url)) as unknown;
  } catch (error) {
    throw new OwnerLookupError(`could not read ${url}: ${(error as Error).message}`);
  }
  const id = (account as { id?: unknown } | null)?.id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) throw new OwnerLookupError(`${url} gave no account id`);
  return String(id);
}
