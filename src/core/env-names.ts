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
