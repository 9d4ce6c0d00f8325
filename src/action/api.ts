// The publish action's library face (src/action/index.ts is the bundle's entry and only calls run()).
export { run, type ActionCore, type ActionDependencies, type ActionOutcome } from './main.js';
export { parseInputs, InputError, type ActionInputs } from './inputs.js';
export {
  createGitHubClient,
  octokitReleaseApi,
  publishRelease,
  GitHubApiError,
  type ReleaseApi,
  type GitHubRelease,
  type GitHubReleaseAsset,
} from '../github/index.js';
