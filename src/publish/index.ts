/** Publishing a template to a registry: the publish pipeline and the streamed upload client (operation 2 of the spec). */
export {
  runPublishPipeline,
  PublishPipelineError,
  PUBLISH_STEPS,
  PUBLISH_STEP_TITLES,
  DEFAULT_CHANGELOG_FILE,
  type PublishStep,
  type PublishFinding,
  type PublishHooks,
  type PublishPipelineOptions,
  type PublishPipelineResult,
} from './pipeline.js';
export {
  publishProgressPrinter,
  uploadProgressLine,
  uploadProgressText,
  type ProgressStream,
  type UploadProgressLine,
  type UploadProgressOptions,
  type PublishPrinterOptions,
} from './progress.js';
export {
  publishTemplate,
  exchangeIdToken,
  revokeExchangedToken,
  registryAudienceOf,
  PublishError,
  DEFAULT_PUBLISH_USER_AGENT,
  DEFAULT_LARGE_UPLOAD_THRESHOLD,
  type PublishOptions,
  type PublishResult,
  type PublishRetryInfo,
  type PublishErrorInit,
  type IdTokenExchangeOptions,
  type ExchangedToken,
} from './upload.js';
export {
  waitUntilVisible,
  notVisibleWarning,
  templateFileUrl,
  DEFAULT_VISIBLE_TIMEOUT_MS,
  type WaitUntilVisibleOptions,
  type VisibleResult,
} from './visible.js';
export {
  attestProvenance,
  provenancePredicate,
  provenanceStatement,
  AttestationError,
  PUBLIC_GOOD_ENDPOINTS,
  SIGSTORE_AUDIENCE,
  GITHUB_WORKFLOW_BUILD_TYPE,
  type AttestOptions,
  type Attestation,
  type SigstoreEndpoints,
} from './attest.js';
