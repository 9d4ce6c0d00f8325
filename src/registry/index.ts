/**
 * The registry generator and its sources: `buildRegistry` writes the static files of a registry
 * from any `RegistrySource` (the server's store, or GitHub releases through `githubReleasesSource`).
 */
export type { RegistrySource, SourceVersion, SourceStats } from './source.js';
export {
  buildRegistry,
  REGISTRY_FILE,
  CATALOG_FILE,
  TEMPLATES_DIR,
  type BuildOptions,
  type BuildResult,
} from './build.js';
export { buildDocument, toEntry, entryViolations, strongEtag, RegistryBuildError, DEFAULT_CATEGORIES, type SkippedVersion, type DocumentOptions } from './document.js';
export { renderCatalog, escapeHtml, safeUrl, type CatalogOptions } from './catalog.js';
export {
  githubReleasesSource,
  loadGithubSourceConfig,
  parseGithubSourceConfig,
  GithubSourceConfigError,
  GithubSourceError,
  MANIFEST_ASSET,
  type GithubSourceConfig,
  type GithubRepositoryConfig,
  type GithubSourceDependencies,
} from './github-source.js';
