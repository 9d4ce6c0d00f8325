/**
 * Generated from schemas/*.schema.json by scripts/generate-types.ts. Do not edit by hand.
 * To regenerate after changing a schema: npm run gen:types
 */

/**
 * Any analytics event: download, generation or feedback, told apart by type.
 */
export type AnalyticsEvent = DownloadEvent | GenerationEvent | FeedbackEvent;

/**
 * The TypeScript type of each schema in schemas/, by short name (the file name without .schema.json).
 */
export interface SchemaTypes {
  'template-manifest': TemplateManifest;
  'template-variables': TemplateVariables;
  'template-prompts': TemplatePrompts;
  'registry-document': RegistryDocument;
  'template-entry': TemplateEntry;
  'registry-index': SparseIndex;
  category: Category;
  'compatibility-matrix': CompatibilityMatrix;
  'compatibility-environment': CompatibilityEnvironment;
  'compatibility-result': CompatibilityResult;
  'migration-step': MigrationStep;
  'migration-context': MigrationContext;
  'migration-result': MigrationResult;
  'file-change': FileChange;
  'analytics-download-event': DownloadEvent;
  'analytics-generation-event': GenerationEvent;
  'analytics-feedback-event': FeedbackEvent;
  'analytics-event': AnalyticsEvent;
  'analytics-event-submission': AnalyticsEvent;
  'analytics-record': AnalyticsRecord;
  'success-envelope': SuccessEnvelope;
  'error-envelope': ErrorEnvelope;
  'offset-pagination': OffsetPaginatedResponse;
  'cursor-pagination': CursorPaginatedResponse;
  'webhook-registration': WebhookRegistration;
}
/**
 * The template manifest, file template.json. Unknown top-level fields are rejected; $schema, content, include, files, test, nextSteps and tasks are this project's documented extension fields.
 */
export interface TemplateManifest {
  /**
   * Extension: the JSON Schema this file follows, for editors.
   */
  $schema?: string;
  name: string;
  version: string;
  description: string;
  category: 'frontend' | 'backend' | 'fullstack' | 'mobile' | 'desktop';
  stability?: 'experimental' | 'beta' | 'stable' | 'deprecated';
  methodologyVersion?: string;
  author?: {
    name: string;
    email?: string;
    url?: string;
    organization?: string;
    [k: string]: unknown;
  };
  repository?: {
    type?: string;
    url?: string;
    [k: string]: unknown;
  };
  license?: string;
  keywords?: string[];
  /**
   * Runtime name to version range, e.g. {"node": ">=20"}.
   */
  dependencies?: {
    [k: string]: string;
  };
  features?: string[];
  /**
   * Path of the change log file, inside the template.
   */
  changelog?: string;
  /**
   * The spec's migration field: versions a project can be migrated from, and the guide.
   */
  migration?: {
    from?: string[];
    guide?: string;
    [k: string]: unknown;
  };
  compatibility?: {
    breaking?: boolean;
    deprecated?: string[];
    removed?: string[];
    [k: string]: unknown;
  };
  customization?: {
    variables?: string;
    prompts?: string;
    [k: string]: unknown;
  };
  /**
   * Extension: the folder, relative to the template root, whose files become the generated project. Default "template".
   */
  content?: string;
  /**
   * Extension: globs, relative to the template folder, of files that pack packs although its rules would leave them out (.env files, what a .gitignore ignores).
   *
   * @maxItems 100
   */
  include?: string[];
  /**
   * Extension: conditional files. A path of the content folder matching `path` (a glob) is generated only when `when` is true.
   */
  files?: {
    path: string;
    when: string;
  }[];
  /**
   * Extension: a command run inside each test-generated project.
   */
  test?: {
    command: string;
    timeoutSeconds?: number;
  };
  /**
   * Extension: globs, relative to the content folder, of files copied byte for byte and never parsed as Liquid (their paths are still rendered).
   *
   * @maxItems 100
   */
  verbatim?: string[];
  /**
   * Extension: globs, matched against paths in the generated project, of .json files that test's JSON check reads as JSON with comments and trailing commas, as the tools reading them do (editor settings kept outside .vscode, Zed's settings). tsconfig*, jsconfig*, .vscode/*.json, dev container files and *.jsonc are JSONC without being listed.
   *
   * @maxItems 100
   */
  jsonc?: string[];
  /**
   * Extension: a folder, relative to the template root and outside the content folder, that {% render %} and {% include %} read from. Never part of the generated project. Default: none.
   */
  partials?: string;
  /**
   * Extension: how {%- -%} {{- -}} trim. "liquid" (default): as stock Liquid and Jinja, all whitespace up to the next text, line breaks included. "line": only the tag's own line (blanks before it; blanks and one line break after it).
   */
  whitespace?: 'liquid' | 'line';
  /**
   * Extension: the message create and generate print after writing the project (e.g. its next steps). Liquid, rendered with the answers and computed values; it cannot include files.
   */
  nextSteps?: string;
  /**
   * Extension: what `update` (and `migrate`) does to the generated files matching each glob `path` (a path in the generated project; the first matching rule wins, a file no rule matches is merged). `merge`: the template's change is merged into the project's file (three-way); `once`: written when the project is created, never written, created or removed by an update (README, source files the project owns); `replace`: always the template's bytes (generated code, vendored files). A project's own `update --skip` globs come first.
   *
   * @maxItems 200
   */
  updatePolicy?: {
    /**
     * A glob matched against the file's path in the generated project: `*` and `?` within a segment, `**` for any number of segments, `[...]` sets, `{a,b}` alternatives; dotfiles included.
     */
    path: string;
    policy: 'merge' | 'once' | 'replace';
  }[];
  /**
   * Extension: commands run in the new project after create (git init, npm install), each a program and its arguments, never through a shell, and only with the user's consent (asked on a terminal, or --run-tasks).
   *
   * @maxItems 50
   */
  tasks?: {
    /**
     * The program and its arguments, e.g. ["git", "init"]; taken literally (not rendered, no shell).
     *
     * @minItems 1
     * @maxItems 100
     */
    run: string[];
    description: string;
    /**
     * An expression; the task runs only when it is true.
     */
    when?: string;
  }[];
}
/**
 * The variables file, template.vars.json: variables keyed by name and computed values (name to expression).
 */
export interface TemplateVariables {
  $schema?: string;
  /**
   * Variables keyed by name, each with any type, enum and default. The spec's table (projectName, description, author, features, database) describes the standard variables of a web template, not a rule for every template; lint warns when a template gives a standard name another shape.
   */
  variables: {
    [k: string]: TemplateVariable;
  };
  computed?: {
    [k: string]: string;
  };
}
export interface TemplateVariable {
  type?: 'string' | 'number' | 'integer' | 'boolean' | 'array' | 'object';
  description?: string;
  /**
   * The value when the variable is not answered. A string holding {{ }} is a computed default: rendered with the answers of the variables before it (for string, number, integer and boolean variables).
   */
  default?: unknown;
  validation?: string;
  invalidMessage?: string;
  /**
   * @minItems 1
   */
  enum?: unknown[];
  items?: TemplateVariable;
  properties?: {
    [k: string]: TemplateVariable;
  };
  required?: boolean;
  condition?: string;
  /**
   * Extension: the answer is a secret (a token, a password): asked without echo, never written to the lock file, the command's output or analytics; update asks for it again only when a file that uses it must be rendered again.
   */
  secret?: boolean;
  /**
   * Extension: the environment variable create and update read the answer from when --set and --answers do not give it (e.g. "MY_TOKEN"); meant for secrets.
   */
  env?: string;
}
/**
 * The prompts file, template.prompts.json: the questions asked when a project is generated.
 */
export interface TemplatePrompts {
  $schema?: string;
  prompts: TemplatePrompt[];
}
export interface TemplatePrompt {
  /**
   * The variable this prompt answers.
   */
  name: string;
  message: string;
  /**
   * input (text), select (one choice), multiselect (any number of choices), confirm (yes or no, for a boolean variable).
   */
  type: 'input' | 'select' | 'multiselect' | 'confirm';
  validate?: string;
  invalidMessage?: string;
  /**
   * @minItems 1
   */
  choices?: TemplatePromptChoice[];
  when?: string;
}
export interface TemplatePromptChoice {
  name: string;
  value: string;
}
/**
 * The registry document a registry publishes and clients cache: template entries (one per template version), categories, tags and the last-updated timestamp. Fields not listed here are accepted (interoperability).
 */
export interface RegistryDocument {
  templates: TemplateEntry[];
  categories: Category[];
  tags: string[];
  lastUpdated: string;
  [k: string]: unknown;
}
/**
 * One version of one template in the registry document; the same id appears once per version. Fields not listed here are accepted, so that a document from another registry following the spec validates. This project's additions, all optional: integrity, sha256 and size of the archive at downloadUrl; deprecationMessage and yanked (the version lifecycle); attestations and publisher (the archive's verified build provenance).
 */
export interface TemplateEntry {
  /**
   * Template id, shared by all versions of one template; at most 214 characters (a name becomes a file name).
   */
  id: string;
  name: string;
  version: string;
  description: string;
  /**
   * Id of a category of the registry document.
   */
  category: string;
  stability: 'experimental' | 'beta' | 'stable' | 'deprecated';
  /**
   * Where the template archive (gzip-compressed tar) is downloaded from.
   */
  downloadUrl: string;
  documentationUrl?: string;
  repositoryUrl?: string;
  author?: TemplateEntryAuthor;
  license?: string;
  tags?: string[];
  features?: string[];
  dependencies?: TemplateEntryDependencies;
  compatibility?: TemplateEntryCompatibility;
  stats?: TemplateEntryStats;
  createdAt?: string;
  updatedAt?: string;
  /**
   * Extension: Subresource Integrity string (sha512, base64) of the archive at downloadUrl.
   */
  integrity?: string;
  /**
   * Extension: SHA-256 of the archive at downloadUrl, 64 lower-case hex digits.
   */
  sha256?: string;
  /**
   * Extension: size of the archive at downloadUrl, in bytes.
   */
  size?: number;
  /**
   * Extension: why this version is deprecated and what to use instead; present only when stability is deprecated (set by PATCH /templates/{id}/versions/{version}).
   */
  deprecationMessage?: string;
  /**
   * Extension: true when the version was yanked (DELETE /templates/{id}/versions/{version}): still downloadable by its exact version, never selected as the latest, left out of default listings.
   */
  yanked?: boolean;
  attestations?: TemplateEntryAttestations;
  publisher?: TemplateEntryPublisher;
  [k: string]: unknown;
}
export interface TemplateEntryAuthor {
  name: string;
  email?: string;
  url?: string;
  organization?: string;
  [k: string]: unknown;
}
/**
 * Tool name to version range. methodology is required; node, npm and docker are the well-known optional keys; further keys are free strings.
 */
export interface TemplateEntryDependencies {
  methodology: string;
  node?: string;
  npm?: string;
  docker?: string;
  [k: string]: string | undefined;
}
/**
 * What the template works with. platforms is read in both shapes: plain names, or objects with name and supported.
 */
export interface TemplateEntryCompatibility {
  methodologyVersions?: string[];
  nodeVersions?: string[];
  platforms?: string[] | PlatformSupport[];
  breaking?: boolean;
  deprecated?: string[];
  removed?: string[];
  [k: string]: unknown;
}
export interface PlatformSupport {
  name: string;
  supported: boolean;
  notes?: string;
}
export interface TemplateEntryStats {
  downloads?: number;
  stars?: number;
  forks?: number;
  issues?: number;
  lastDownload?: string;
  [k: string]: unknown;
}
/**
 * Extension: the build provenance of the archive, verified by the registry when the version was published: where its Sigstore bundle (a DSSE-signed in-toto statement about the archive's sha256) is served, immutably, and the statement's predicate type.
 */
export interface TemplateEntryAttestations {
  url: string;
  /**
   * https://slsa.dev/provenance/v1 for the publish action's provenance.
   */
  predicateType: string;
  [k: string]: unknown;
}
/**
 * Extension: who built the archive, as its verified provenance's signing certificate names it: the source repository (owner/name) and the workflow file that ran; runUrl is the run, when the certificate names it. Present with attestations.
 */
export interface TemplateEntryPublisher {
  repository: string;
  workflow: string;
  runUrl?: string;
  [k: string]: unknown;
}
/**
 * A category of the registry document. Fields not listed here are accepted (interoperability).
 */
export interface Category {
  id: string;
  name: string;
  description?: string;
  icon?: string;
  /**
   * Ids of the templates in this category.
   */
  templates?: string[];
  [k: string]: unknown;
}
/**
 * Extension: the small index a static registry publishes beside registry.json (index.json): one line per template (its latest version, as the spec's get rule selects it), so that a client needing one template reads this file and templates/<id>.json instead of the whole document. Two layouts: formatVersion 1 lists the lines in `templates`; formatVersion 2 (what this generator writes) gives the same lines as `columns`, one array per field (about a quarter smaller once compressed). Fields not listed here are accepted.
 */
export interface SparseIndex {
  /**
   * 1: the lines in `templates`; 2: the same lines as `columns`. A client refuses a format it does not know and falls back to registry.json.
   */
  formatVersion: 1 | 2;
  /**
   * formatVersion 2: the lines of `templates`, one array per field, all of the same length (line i is made of the i-th item of each array), null where a line has no such field; a field no line has has no array.
   */
  columns?: {
    id: string[];
    version: string[];
    stability: string[];
    category: string[];
    description: string[];
    /**
     * Any other field of the lines: its value in each line, null where a line has none.
     */
    [k: string]: unknown[] | string[];
  };
  /**
   * The lastUpdated of the registry.json built with it.
   */
  lastUpdated: string;
  /**
   * Where one template's file is, relative to index.json, with {id} for the template id. Default templates/{id}.json.
   */
  templatePath?: string;
  templates?: {
    id: string;
    /**
     * The latest version: the highest stable one, else the highest.
     */
    version: string;
    stability: string;
    category: string;
    description: string;
    tags?: string[];
    features?: string[];
    /**
     * Downloads of all its versions.
     */
    downloads?: number;
    /**
     * When its latest version was published or updated.
     */
    updatedAt?: string;
    attestations?: TemplateEntryAttestations1;
    publisher?: TemplateEntryPublisher1;
    [k: string]: unknown;
  }[];
  [k: string]: unknown;
}
/**
 * Extension: the build provenance of the archive, verified by the registry when the version was published: where its Sigstore bundle (a DSSE-signed in-toto statement about the archive's sha256) is served, immutably, and the statement's predicate type.
 */
export interface TemplateEntryAttestations1 {
  url: string;
  /**
   * https://slsa.dev/provenance/v1 for the publish action's provenance.
   */
  predicateType: string;
  [k: string]: unknown;
}
/**
 * Extension: who built the archive, as its verified provenance's signing certificate names it: the source repository (owner/name) and the workflow file that ran; runUrl is the run, when the certificate names it. Present with attestations.
 */
export interface TemplateEntryPublisher1 {
  repository: string;
  workflow: string;
  runUrl?: string;
  [k: string]: unknown;
}
/**
 * What a template works with: version ranges of the methodology, of the runtime (node) and of the package manager (npm), platforms and frameworks.
 */
export interface CompatibilityMatrix {
  methodologyVersions: VersionRange[];
  nodeVersions: VersionRange[];
  npmVersions: VersionRange[];
  platforms: PlatformSupport[];
  frameworks: FrameworkCompatibility[];
}
/**
 * Versions from min up to max (open-ended without max).
 */
export interface VersionRange {
  /**
   * A version compared segment by segment; a missing MINOR or PATCH counts as 0.
   */
  min: string;
  /**
   * A version compared segment by segment; a missing MINOR or PATCH counts as 0.
   */
  max?: string;
  supported: boolean;
  notes?: string;
}
export interface FrameworkCompatibility {
  name: string;
  versions: VersionRange[];
  optional: boolean;
}
/**
 * The environment a compatibility check compares a template against.
 */
export interface CompatibilityEnvironment {
  /**
   * An installed version: MAJOR[.MINOR[.PATCH]], optionally with a leading v (as process.version prints it) and a pre-release suffix.
   */
  methodologyVersion: string;
  /**
   * An installed version: MAJOR[.MINOR[.PATCH]], optionally with a leading v (as process.version prints it) and a pre-release suffix.
   */
  nodeVersion: string;
  /**
   * An installed version: MAJOR[.MINOR[.PATCH]], optionally with a leading v (as process.version prints it) and a pre-release suffix.
   */
  npmVersion: string;
  /**
   * Platform name, e.g. linux, darwin, win32.
   */
  platform: string;
}
/**
 * Outcome of a compatibility check. compatible is true exactly when issues is empty; warnings (deprecated features) do not affect it.
 */
export interface CompatibilityResult {
  compatible: boolean;
  issues: string[];
  warnings: string[];
}
/**
 * The declarative (JSON) form of a migration step: it moves a project from fromVersion to toVersion by applying changes. The spec's execute operation is code, not data, and is not part of this schema.
 */
export interface MigrationStep {
  id: string;
  description: string;
  fromVersion: string;
  toVersion: string;
  /**
   * True when the step needs a manual review (a MAJOR version change).
   */
  breaking: boolean;
  /**
   * True when the step runs without user action.
   */
  automatic: boolean;
  changes: FileChange[];
}
/**
 * One change a migration step makes (or, in a dry run, would make) to a project file. newPath is required when type is rename.
 */
export interface FileChange {
  type: 'create' | 'update' | 'delete' | 'rename';
  /**
   * Path of the file, relative to the project root.
   */
  path: string;
  /**
   * Path after the change; rename only.
   */
  newPath?: string;
  /**
   * New content of the file (create, update).
   */
  content?: string;
  /**
   * Keep a backup of the file before changing it.
   */
  backup?: boolean;
}
/**
 * What a migration run is given: the project, its current and target template versions, the template id, the project's configuration (any value) and whether to only report changes (dryRun).
 */
export interface MigrationContext {
  projectPath: string;
  currentVersion: string;
  targetVersion: string;
  templateId: string;
  /**
   * The project's configuration; any JSON value.
   */
  config?: unknown;
  dryRun: boolean;
}
/**
 * Outcome of a migration run (or of one step): the file changes, warnings and errors. When success is false, errors says why.
 */
export interface MigrationResult {
  success: boolean;
  changes: FileChange[];
  warnings: string[];
  errors: string[];
}
/**
 * Analytics event: a template version was downloaded.
 */
export interface DownloadEvent {
  type: 'download';
  templateId: string;
  version: string;
  userId?: string;
  timestamp: string;
  userAgent: string;
  platform: string;
}
/**
 * Analytics event: a project was generated from a template version, successfully or not, taking duration.
 */
export interface GenerationEvent {
  type: 'generation';
  templateId: string;
  version: string;
  success: boolean;
  /**
   * How long the generation took; the spec does not fix the unit.
   */
  duration: number;
  userId?: string;
  timestamp: string;
}
/**
 * Analytics event: a user rated a template version. The spec lists userId and comment without marking them optional, and leaves further fields of this event unspecified, so unknown fields are accepted.
 */
export interface FeedbackEvent {
  type: 'feedback';
  templateId: string;
  version: string;
  rating: number;
  comment: string;
  userId: string;
  timestamp?: string;
  [k: string]: unknown;
}
/**
 * Aggregated analytics of one template version: metrics, trends and feedback.
 */
export interface AnalyticsRecord {
  templateId: string;
  version: string;
  metrics: AnalyticsMetrics;
  trends: AnalyticsTrends;
  feedback: AnalyticsFeedback;
}
export interface AnalyticsMetrics {
  downloads: DownloadMetrics;
  usage: UsageMetrics;
  adoption: AdoptionMetrics;
}
export interface DownloadMetrics {
  total: number;
  lastMonth: number;
  lastWeek: number;
  /**
   * Downloads per day.
   */
  daily: number[];
}
export interface UsageMetrics {
  activeProjects: number;
  successfulGenerations: number;
  failedGenerations: number;
  averageGenerationTime: number;
}
export interface AdoptionMetrics {
  newUsers: number;
  returningUsers: number;
  retentionRate: number;
}
export interface AnalyticsTrends {
  downloadTrend: 'increasing' | 'decreasing' | 'stable';
  /**
   * Position among all templates, 1 is the most popular.
   */
  popularityRank: number;
  /**
   * Position within its category, 1 is the most popular.
   */
  categoryRank: number;
  /**
   * May be negative.
   */
  growthRate: number;
}
export interface AnalyticsFeedback {
  /**
   * 0 when there are no ratings yet, else between 1 and 5.
   */
  averageRating: number;
  totalRatings: number;
  reviews: Review[];
  commonIssues: string[];
  featureRequests: string[];
}
export interface Review {
  id: string;
  userId: string;
  rating: number;
  comment: string;
  /**
   * How many users found the review helpful.
   */
  helpful: number;
  version: string;
  createdAt: string;
}
/**
 * Body of a successful response: the resource or list in data, and meta. A page of a list also carries pagination (offset or cursor, as offset-pagination and cursor-pagination describe it).
 */
export interface SuccessEnvelope {
  /**
   * The resource, or a list of resources.
   */
  data: unknown;
  meta: ResponseMeta;
  /**
   * On a page of a list: offset pagination (page, limit) or cursor pagination (cursor).
   */
  pagination?: OffsetPagination | CursorPagination;
}
export interface ResponseMeta {
  timestamp: string;
  requestId: string;
  /**
   * Version of the interface that answered.
   */
  version: string;
  /**
   * On the answer to an upload (201): whether registry.json lists the version. false: the version is stored, but the registry could not be rebuilt yet (a full disk); data is the entry it will have, and the server rebuilds until it lists it.
   */
  listed?: boolean;
  /**
   * With listed false: why the version is not listed yet, for the publisher.
   */
  warning?: string;
}
export interface OffsetPagination {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
  hasNext: boolean;
  hasPrevious: boolean;
}
export interface CursorPagination {
  limit: number;
  hasNext: boolean;
  nextCursor: string | null;
  prevCursor: string | null;
}
/**
 * Body of an error response. VALIDATION_ERROR lists the offending fields in details; RATE_LIMIT_EXCEEDED carries retryAfter (seconds), as the Retry-After header does.
 */
export interface ErrorEnvelope {
  error: ApiError;
}
export interface ApiError {
  /**
   * e.g. VALIDATION_ERROR, EMAIL_EXISTS, UNAUTHORIZED, RATE_LIMIT_EXCEEDED.
   */
  code: string;
  message: string;
  details?: ApiErrorDetail[];
  requestId: string;
  timestamp: string;
  /**
   * Seconds to wait before retrying; with RATE_LIMIT_EXCEEDED.
   */
  retryAfter?: number;
}
export interface ApiErrorDetail {
  field: string;
  message: string;
  /**
   * e.g. REQUIRED, MIN_LENGTH.
   */
  code: string;
}
/**
 * A page of a list, addressed by page number. hasPrevious is true exactly when page is above 1. The server's answers also carry the success envelope's meta.
 */
export interface OffsetPaginatedResponse {
  data: unknown[];
  meta?: ResponseMeta;
  pagination: OffsetPagination;
}
/**
 * A page of a list, addressed by opaque cursors. When hasNext is true, nextCursor is a string. The server's answers also carry the success envelope's meta.
 */
export interface CursorPaginatedResponse {
  data: unknown[];
  meta?: ResponseMeta;
  pagination: CursorPagination;
}
/**
 * Body of POST /webhooks: where to deliver, which events, the signing secret (deliveries carry X-Webhook-Signature: sha256=...) and whether deliveries are on.
 */
export interface WebhookRegistration {
  url: string;
  /**
   * @minItems 1
   */
  events: string[];
  secret: string;
  active: boolean;
}
