/** GitHub: the API client, the release of a published version, and action inputs. */
export { createGitHubClient, type GitHubClient, type GitHubClientOptions } from './client.js';
export {
  octokitReleaseApi,
  publishRelease,
  assetUploadUrl,
  GitHubApiError,
  type ReleaseApi,
  type GitHubRelease,
  type GitHubReleaseAsset,
  type ReleaseAssetFile,
  type PublishReleaseOptions,
  type PublishedRelease,
} from './release.js';
export { readInput, readBooleanInput, readListInput, checkHttpUrlInput, InputError, type ActionEnv, type ActionCoreBase, type SummaryCell } from './inputs.js';
export { requestIdToken, canRequestIdToken, IdTokenRequestError } from './oidc.js';
