/**
 * A GitHub Actions job's OIDC ID token, asked for the way @actions/core's getIDToken asks: a GET of
 * `ACTIONS_ID_TOKEN_REQUEST_URL` with `audience` added to its query, the bearer
 * `ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answered `{ "value": "<JWT>" }`. The runner sets both variables
 * only for a job with `permissions: id-token: write`. Read from the action's environment (not
 * `process.env` directly), so that a run with an injected environment asks where it says.
 */
import type { ActionEnv } from './inputs.js';

const ID_TOKEN_REQUEST_URL = 'ACTIONS_ID_TOKEN_REQUEST_URL';
const ID_TOKEN_REQUEST_TOKEN = 'ACTIONS_ID_TOKEN_REQUEST_TOKEN';

const ID_TOKEN_TIMEOUT_MS = 30_000;
const MAX_ID_TOKEN_ANSWER_BYTES = 64 * 1024;

/** The ID token could not be had (no permission, the endpoint refused or could not be reached). */
export class IdTokenRequestError extends Error {
  override readonly name = 'IdTokenRequestError';
}

/** Whether the job may ask for an ID token (`permissions: id-token: write` gives it both variables). */
export function canRequestIdToken(env: ActionEnv): boolean {
  return (env[ID_TOKEN_REQUEST_URL] ?? '') !== '' && (env[ID_TOKEN_REQUEST_TOKEN] ?? '') !== '';
}

/** The job's ID token for `audience`. */
export async function requestIdToken(env: ActionEnv, audience: string): Promise<string> {
  const base = env[ID_TOKEN_REQUEST_URL] ?? '';
  const bearer = env[ID_TOKEN_REQUEST_TOKEN] ?? '';
  if (base === '' || bearer === '') {
    throw new IdTokenRequestError(`${ID_TOKEN_REQUEST_URL} and ${ID_TOKEN_REQUEST_TOKEN} are not set: give the job \`permissions: id-token: write\``);
  }
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new IdTokenRequestError(`${ID_TOKEN_REQUEST_URL} is not a URL`);
  }
  url.searchParams.set('audience', audience);
  let response: Response;
  try {
    response = await fetch(url, { headers: { authorization: `Bearer ${bearer}`, accept: 'application/json; api-version=2.0' }, signal: AbortSignal.timeout(ID_TOKEN_TIMEOUT_MS) });
  } catch (error) {
    throw new IdTokenRequestError(`could not ask for an OIDC ID token: ${(error as Error).message}`);
  }
  const text = await response.text();
  if (text.length > MAX_ID_TOKEN_ANSWER_BYTES) throw new IdTokenRequestError('the OIDC ID token answer is too large');
  if (!response.ok) throw new IdTokenRequestError(`the runner refused the OIDC ID token request: HTTP ${response.status}`);
  let value: unknown;
  try {
    value = (JSON.parse(text) as { value?: unknown } | null)?.value;
  } catch {
    value = undefined;
  }
  if (typeof value !== 'string' || value === '') throw new IdTokenRequestError('the runner answered the OIDC ID token request without a token');
  return value;
}
