/**
 * The environment variables the CLI and the actions read about a registry, each named here once:
 * every flag's default, usage error and hint refers to these constants.
 */

/** The registry: its base URL or its registry.json URL (several, comma-separated, for the consumer commands). */
export const REGISTRY_URL_ENV = 'TEMPLATE_REGISTRY_URL';

/** The API token of the registry's write API (publish, deprecate, yank, owner, trust). */
export const REGISTRY_TOKEN_ENV = 'TEMPLATE_REGISTRY_TOKEN';

/** The public key(s) a registry's signed documents are checked against. */
export const REGISTRY_KEY_ENV = 'TEMPLATE_REGISTRY_KEY';

/** The consumer's cache folder (default: the user's cache folder). */
export const REGISTRY_CACHE_ENV = 'TEMPLATE_REGISTRY_CACHE';

/** The largest registry document the client reads, in bytes. */
export const MAX_DOCUMENT_BYTES_ENV = 'TEMPLATE_REGISTRY_MAX_DOCUMENT_BYTES';

/** How the client reads a registry: full, sparse or auto. */
export const REGISTRY_MODE_ENV = 'TEMPLATE_REGISTRY_MODE';

/** The default provenance mode of the consumer commands: off, warn or require. */
export const PROVENANCE_ENV = 'TEMPLATE_REGISTRY_PROVENANCE';

/** The registries (comma-separated) whose default provenance mode is `require`. */
export const PROVENANCE_REQUIRE_ENV = 'TEMPLATE_REGISTRY_PROVENANCE_REQUIRE';

/** The Sigstore trusted root provenance is verified against (default: the public-good one). */
export const SIGSTORE_TRUSTED_ROOT_ENV = 'TEMPLATE_REGISTRY_SIGSTORE_TRUSTED_ROOT';
