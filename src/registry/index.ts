/**
 * The registry generator and its sources: `buildRegistry` writes the static files of a registry
 * from any `RegistrySource` (the server's store, or GitHub releases through `githubReleasesSource`).
 */
export type { RegistrySource, SourceVersion, SourceStats } from './source.js';
export {
  buildRegistry,
  RegistryBuilder,
  REGISTRY_FILE,
  CATALOG_FILE,
  TEMPLATES_DIR,
  type BuildOptions,
  type BuildResult,
  failedTemplateMessage,
  type FailedTemplate,
} from './build.js';
export { buildDocument, toEntry, entryViolations, strongEtag, RegistryBuildError, DEFAULT_CATEGORIES, type SkippedVersion, type DocumentOptions } from './document.js';
export { FolderOutput, BUILD_STATE_FILE } from './folder-output.js';
export { loadSigningKeys, planSigning, KeyFileError, KEY_EXPIRY_WARNING_MS, type SigningKey, type SigningPlan } from './signing.js';
export { mirrorRegistry, MirrorError, MIRROR_STATE_FILE, DEFAULT_MIRROR_ARCHIVE_BYTES, DEFAULT_MIRROR_DOCUMENT_BYTES, type MirrorOptions, type MirrorResult } from './mirror.js';
export {
  aggregateAnalytics,
  analyticsRecords,
  AnalyticsAccumulator,
  recordWindow,
  downloadUsage,
  TREND_DEAD_BAND_PERCENT,
  type AggregateOptions,
  type AnalyticsAggregates,
  type AggregateRows,
  type VersionAggregates,
  type AnalyticsInput,
  type AnalyticsEventData,
  type AnalyticsEventRecord,
  type DownloadUsage,
} from './analytics.js';
export {
  S3Output,
  S3OutputError,
  S3UrlError,
  createS3Client,
  s3ClientConfig,
  parseS3Url,
  parseOutputTarget,
  isS3Url,
  s3UrlOf,
  md5OfEtag,
  S3_ARCHIVE_LIMIT,
  S3_READ_LIMIT,
  type S3Location,
  type S3OutputOptions,
  type S3ClientSettings,
  type OutputTarget,
} from './s3-output.js';
export { CACHE_CONTROL, contentTypeOf, md5Of, type RegistryOutput, type OutputFile, type OutputArchive, type HeldFile } from './output.js';
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
// CDN purges after a change (build-registry --purge, serve --purge).
export * from './purge/index.js';
export { cacheControlOf, hostHeadersFile, HOST_HEADERS_FILE } from './output.js';
