/**
 * The name, usage and one-line description of each top-level command, in the order `--help` lists them.
 * Each command module takes its description from here, and `template-registry --help` lists the
 * commands from here without loading them (test/cli/root-help.test.ts checks the usage against the
 * commands themselves).
 */
export const COMMAND_SUMMARIES = {
  init: { term: 'init [options] [dir]', description: 'create a new template folder that passes validate, lint and test, with a publish workflow' },
  validate: { term: 'validate [options] [dir]', description: 'check a template folder: required files, manifest, variables and prompts files, expressions, Liquid and names in content files, migration steps' },
  generate: { term: 'generate [options] [dir]', description: 'generate a project from a template folder' },
  test: { term: 'test [options] [dir]', description: 'test-generate a template for a matrix of answer sets and check the results' },
  lint: { term: 'lint [options] [dir]', description: 'check a template for mistakes its schemas cannot see: prompts, enums, defaults, regexes, expressions, change log, unused variables' },
  pack: { term: 'pack [options] [dir]', description: 'build the deterministic .tgz archive of a template folder, as publishing uploads it' },
  publish: { term: 'publish [options] [dir]', description: 'validate, test-generate and lint a template folder, check its changelog, then pack and upload it to a registry' },
  deprecate: { term: 'deprecate [options] <target>', description: 'mark versions of a template deprecated on a registry server (their archives stay as published)' },
  yank: { term: 'yank [options] <target>', description: 'yank a version on a registry server: still downloadable by its exact version, never chosen as the latest, never reusable' },
  owner: { term: 'owner', description: 'manage the owners of a template name on a registry server (every owner publishes, deprecates and yanks it)' },
  trust: { term: 'trust', description: 'manage the trusted publishers of a template name: GitHub Actions workflows that publish it with OIDC, without a stored token' },
  serve: { term: 'serve [options]', description: 'run the registry server on an embedded store, or on PostgreSQL (--database) and a bucket (--storage)' },
  token: { term: 'token', description: 'manage publish tokens of a store' },
  list: { term: 'list [options]', description: 'list the templates of the registry (newest stable version of each)' },
  search: { term: 'search [options] <terms...>', description: 'search templates by name, description, tags, features and category' },
  info: { term: 'info [options] <template>', description: 'show a template: its entry, versions, declared dependencies, who built it and the questions it asks' },
  create: { term: 'create [options] <template> [dir]', description: 'create a project from a registry template' },
  migrate: { term: 'migrate [options]', description: "migrate the project in this folder (or --project) to a newer template version: its migration steps, then the version's own files as update merges them" },
  'check-compat': { term: 'check-compat [options] <template>', description: 'check a template against an environment: methodology, node and npm versions, platform (exit 1 when incompatible)' },
  user: { term: 'user', description: 'manage the accounts of a store (people log in with POST /api/auth/login)' },
  update: { term: 'update [options]', description: "update the project to a newer template version, merging the template's changes with yours (exit 3 when conflicts remain)" },
  'check-update': { term: 'check-update [options]', description: 'say whether the template of the project has a newer version, whether it is breaking, who built it, and what changed' },
  'build-registry': { term: 'build-registry [options]', description: 'build the static registry files (registry.json, per-template files, catalog page) from a store or GitHub releases' },
  mirror: { term: 'mirror [options] <registry-url>', description: 'copy a registry (documents, archives, signatures) into a folder or a bucket, to serve it from any static host; run again to copy only what changed' },
  store: { term: 'store', description: 'work on a whole store: copy it to another backend' },
  db: { term: 'db', description: 'manage the PostgreSQL database of a scaled-out registry' },
} as const satisfies Record<string, { term: string; description: string }>;

export type CommandName = keyof typeof COMMAND_SUMMARIES;
