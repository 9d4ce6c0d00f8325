/** Publishing a template to a registry: the streamed upload client (operation 2 of the spec). */
export {
  publishTemplate,
  PublishError,
  DEFAULT_PUBLISH_USER_AGENT,
  type PublishOptions,
  type PublishResult,
  type PublishRetryInfo,
  type PublishErrorInit,
} from './upload.js';
