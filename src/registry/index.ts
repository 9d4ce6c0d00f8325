/**
 * The registry generator and its sources: `buildRegistry` writes the static files of a registry
 * from any `RegistrySource` (the server's store, or GitHub releases through `githubReleasesSource`).
 */
export * from './source.js';
export {
  buildRegistry,
  buildDocument,
  toEntry,
  selectLatest,
  sortEntries,
  latestEntries,
  strongEtag,
  writeFileAtomic,
  RegistryBuildError,
  DEFAULT_CATEGORIES,
  STABILITY_ORDER,
  REGISTRY_FILE,
  CATALOG_FILE,
  TEMPLATES_DIR,
  type BuildOptions,
  type BuildResult,
} from './build.js';
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
