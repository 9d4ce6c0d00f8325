export {
  RegistryClient,
  DEFAULT_MAX_DOCUMENT_BYTES,
  RegistryUnavailableError,
  DEFAULT_CACHE_TTL_MS,
  DEFAULT_FAILURE_BACKOFF_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type RegistryClientOptions,
  type RegistryStatus,
  type StaleNotice,
  type TemplateFilters,
  type FallbackNotice,
} from './registry-client.js';
export { RegistryTrustError, pinFileFor, type SignatureOptions } from './trust.js';
export {
  downloadTemplate,
  checkArchive,
  checkDownloadUrl,
  DownloadError,
  IntegrityError,
  UnsafeArchiveError,
  DEFAULT_MAX_DOWNLOAD_BYTES,
  type ArchivePlan,
  type DownloadableEntry,
  type DownloadLimits,
  type DownloadOptions,
  type DownloadResult,
} from './download.js';
export {
  checkProvenance,
  nextPinnedSigner,
  ProvenanceCheckError,
  SignerChangedError,
  PROVENANCE_MODES,
  type AttestedEntry,
  type ProvenanceMode,
  type ProvenanceOutcome,
  type ProvenancePolicy,
} from './provenance.js';
export { describeSigner, loadSigstoreTrust, publicGoodTrust, verifyProvenance, ProvenanceError, type ProvenanceSigner, type SigstoreTrust } from '../archive/provenance.js';
export {
  sendAnalyticsEvent,
  eventsUrl,
  doNotTrackFrom,
  DEFAULT_EVENT_TIMEOUT_MS,
  type EventDelivery,
  type SendEventOptions,
} from './events.js';
