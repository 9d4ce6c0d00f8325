/**
 * A new template folder (`template-registry init`): the five files every template has, a content
 * folder showing the features authors reach for first (a variable in a file, a conditional file,
 * a multiselect whose values are the manifest's `features`, a `nextSteps` message), a change log
 * with the first version and the workflow that publishes it with this project's action on a `v*`
 * tag. It passes `validate`, `lint` and `test` as written, in any language: nothing in it assumes
 * Node, Python or a build step.
 */
import path from 'node:path';

import manifestSchema from '../../schemas/template-manifest.schema.json' with { type: 'json' };
import { describeSchemaErrors } from '../core/messages.js';
import type { TemplateManifest } from '../core/schema-types.js';
import { schemaErrors } from '../core/schemas.js';
import { MANIFEST_FILE, PROMPTS_FILE, VARIABLES_FILE } from './validate.js';
import { FolderConflictError, FolderNotEmptyError, folderEntries, writeFolderAtomically } from './write-folder.js';

/** The categories a manifest may name, in the manifest schema's order. */
export const TEMPLATE_CATEGORIES: readonly string[] = manifestSchema.properties.category.enum;

/** The first version of a new template. */
export const FIRST_VERSION = '0.1.0';

/** The reference to this project's publish action that the new workflow uses (as docs/publishing.md does). */
export const PUBLISH_ACTION = 'template-registry/template-registry@v1';

/** What `scaffoldTemplate` asks for; each becomes the manifest field of the same name. */
export interface ScaffoldValues {
  name: string;
  category: string;
  description: string;
  /** Default FIRST_VERSION. */
  version?: string;
}

export interface ScaffoldOptions extends ScaffoldValues {
  /** Write into a folder that already has files (files of the same name are replaced). */
  force?: boolean;
  /** The clock, for the date of the change log's first section. */
  now?: () => Date;
}

export interface ScaffoldResult {
  /** Absolute path of the template folder. */
  dir: string;
  /** The files written, relative to `dir`, `/`-separated, sorted. */
  files: string[];
}

/** A value `scaffoldTemplate` cannot use; `field` is the manifest field (and the CLI flag) it came from. */
export class ScaffoldError extends Error {
  override readonly name = 'ScaffoldError';

  constructor(
    readonly field: keyof ScaffoldValues | 'dir',
    message: string,
  ) {
    super(message);
  }
}

/** The folder exists and has files, and `force` was not given. */
export class ScaffoldTargetNotEmptyError extends ScaffoldError {
  constructor(readonly dir: string) {
    super('dir', `${dir} is not empty; choose an empty or new folder, or use --force to write into it`);
  }
}

const FIELDS = ['name', 'category', 'description', 'version'] as const;

/** A value the manifest schema refuses: its field, and the rule broken in plain words (`must be one of ...`). */
export interface ScaffoldProblem {
  field: keyof ScaffoldValues;
  rule: string;
}

/**
 * What is wrong with the values, by field, in the manifest schema's own words (the rules live in
 * the schema only): empty when `scaffoldTemplate` can use them.
 */
export function scaffoldProblems(values: Partial<ScaffoldValues>): ScaffoldProblem[] {
  const manifest = { name: values.name, version: values.version ?? FIRST_VERSION, description: values.description, category: values.category };
  const problems: ScaffoldProblem[] = [];
  for (const violation of describeSchemaErrors(schemaErrors('template-manifest', manifest))) {
    const field = FIELDS.find((candidate) => violation.pointer === `/${candidate}`);
    if (field && !problems.some((problem) => problem.field === field)) problems.push({ field, rule: violation.message });
  }
  return problems;
}

/** What is wrong with one value alone (for a prompt's validate), in the schema's words, or undefined when it is fine. */
export function scaffoldFieldProblem(field: keyof ScaffoldValues, value: string): string | undefined {
  const valid: ScaffoldValues = { name: 'template', category: TEMPLATE_CATEGORIES[0] ?? 'backend', description: 'A valid description.', version: FIRST_VERSION };
  return scaffoldProblems({ ...valid, [field]: value }).find((problem) => problem.field === field)?.rule;
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** The features the new template offers: the values of its `features` variable and of the manifest's `features`. */
const FEATURES = [
  { value: 'docs', label: 'A docs/ folder', file: 'docs/index.md', glob: 'docs/**' },
  { value: 'changelog', label: 'A change log', file: 'CHANGELOG.md', glob: 'CHANGELOG.md' },
] as const;

const NAME_RULE = '^[a-z][a-z0-9-]*$';
const NAME_HINT = 'Use lower-case letters, digits and hyphens, starting with a letter (for example my-project).';

function manifestOf(values: Required<ScaffoldValues>): TemplateManifest {
  return {
    name: values.name,
    version: values.version,
    description: values.description,
    category: values.category as TemplateManifest['category'],
    stability: 'experimental',
    keywords: [],
    features: FEATURES.map((feature) => feature.value),
    changelog: 'CHANGELOG.md',
    customization: { variables: VARIABLES_FILE, prompts: PROMPTS_FILE },
    content: 'template',
    files: FEATURES.map((feature) => ({ path: feature.glob, when: `features contains "${feature.value}"` })),
    nextSteps: [
      'Your project {{ projectName }} is ready.',
      '',
      'Next steps:',
      '- read README.md{% if features contains "docs" %} and docs/index.md{% endif %};',
      '- commit the project with its .template-lock.json: it records the template version and your answers.',
    ].join('\n'),
  };
}

const variables = {
  variables: {
    projectName: {
      type: 'string',
      description: 'Name of the project: lower-case letters, digits and hyphens, starting with a letter.',
      default: 'my-project',
      validation: NAME_RULE,
      invalidMessage: NAME_HINT,
      required: true,
    },
    description: {
      type: 'string',
      description: 'One line saying what the project is, used in its README.',
      default: 'A new project.',
    },
    features: {
      type: 'array',
      description: 'Optional parts of the project.',
      items: { type: 'string' },
      enum: FEATURES.map((feature) => feature.value),
      default: ['docs'],
    },
  },
};

const prompts = {
  prompts: [
    { name: 'projectName', message: 'Project name', type: 'input', validate: NAME_RULE, invalidMessage: NAME_HINT },
    { name: 'description', message: 'Short description', type: 'input' },
    {
      name: 'features',
      message: 'Which optional parts do you want?',
      type: 'multiselect',
      choices: FEATURES.map((feature) => ({ name: feature.label, value: feature.value })),
    },
  ],
};

function templateReadme(values: Required<ScaffoldValues>): string {
  return `# ${values.name}

${values.description}

This is a template for [template-registry](https://github.com/template-registry/template-registry): people
create projects from it with \`template-registry create ${values.name}\`. Replace this text with what the
template generates and who it is for.

## Variables

| Variable | Type | Default | Notes |
|---|---|---|---|
| \`projectName\` | string | \`my-project\` | lower-case letters, digits and hyphens, starting with a letter |
| \`description\` | string | \`A new project.\` | one line, used in the project's README |
| \`features\` | array | \`["docs"]\` | any of \`docs\` (a \`docs/\` folder) and \`changelog\` (a \`CHANGELOG.md\`) |

The project also gets the computed values \`packageName\` and \`className\`, which every template with a
\`projectName\` has without declaring them.

## What you get

| File | Included | Purpose |
|---|---|---|
| \`README.md\` | always | the project's name and description |
| \`.gitignore\` | always | files the project's repository leaves out |
| \`docs/index.md\` | feature \`docs\` | the start of the project's documentation |
| \`CHANGELOG.md\` | feature \`changelog\` | the project's change log |

## Working on this template

- \`template.json\` is the manifest, \`template.vars.json\` the variables, \`template.prompts.json\` the
  questions; \`template/\` is the content folder, rendered with Liquid into the project. \`nextSteps\` in the
  manifest is the message printed after a project is created.
- Check every change: \`template-registry validate && template-registry lint && template-registry test\`.
- Record each version in \`CHANGELOG.md\` (a \`## [x.y.z] - YYYY-MM-DD\` section), set it as \`version\` in
  \`template.json\`, and push the tag \`vx.y.z\`: \`.github/workflows/publish.yml\` checks, packs and publishes
  it to the registry and creates the GitHub release. It needs the repository variable
  \`TEMPLATE_REGISTRY_URL\` (the registry's base URL) and the secret \`TEMPLATE_REGISTRY_TOKEN\` (a publisher
  token: \`template-registry token create --role publisher --templates ${values.name}\`).
`;
}

function changelog(values: Required<ScaffoldValues>, date: string): string {
  return `# Changelog

All notable changes to the \`${values.name}\` template are documented in this file.
The format is based on [Keep a Changelog](https://keepachangelog.com/en/1.1.0/),
and this template adheres to [Semantic Versioning](https://semver.org/spec/v2.0.0.html).

## [Unreleased]

## [${values.version}] - ${date}

### Added

- First version: a project with a README, a \`.gitignore\`, and optional \`docs/\` folder and change log.
`;
}

const PUBLISH_WORKFLOW = `name: Publish template

on:
  push:
    tags: ['v*']

permissions:
  contents: write   # create the GitHub release and attach the archive to it

concurrency:
  group: publish-\${{ github.ref }}
  cancel-in-progress: false   # never cancel a publish half-way

jobs:
  publish:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: publish
        uses: ${PUBLISH_ACTION}
        with:
          registry-url: \${{ vars.TEMPLATE_REGISTRY_URL }}
          registry-token: \${{ secrets.TEMPLATE_REGISTRY_TOKEN }}
          # test-command: make test   # run inside every test-generated project (set up its toolchain in a step above)
      - run: echo "Published \${{ steps.publish.outputs.version }} to \${{ steps.publish.outputs.download-url }}"
`;

/** The content folder: rendered with Liquid into the project. The template's name is a plain word, safe inside it. */
function contentFiles(values: Required<ScaffoldValues>): Record<string, string> {
  return {
    'template/README.md': `# {{ projectName }}

{{ description }}

## Getting started

Write here how to install, run and test {{ projectName }}.
{%- if features contains "docs" %}

More documentation is in [docs/index.md](docs/index.md).
{%- endif %}
`,
    'template/.gitignore': `# Files the repository leaves out; add what your language and tools need.
.env
*.log
.DS_Store
`,
    'template/docs/index.md': `# {{ projectName }}

{{ description }}

Start the documentation of {{ projectName }} here.
`,
    'template/CHANGELOG.md': `# Changelog

All notable changes to {{ projectName }} are documented in this file.

## [Unreleased]

- Created from the ${values.name} template.
`,
  };
}

/** Every file of a new template, by its path relative to the template folder. */
export function scaffoldFiles(values: ScaffoldValues, now: Date = new Date()): Record<string, string> {
  const complete: Required<ScaffoldValues> = { ...values, version: values.version ?? FIRST_VERSION };
  return {
    [MANIFEST_FILE]: json(manifestOf(complete)),
    [VARIABLES_FILE]: json(variables),
    [PROMPTS_FILE]: json(prompts),
    'README.md': templateReadme(complete),
    'CHANGELOG.md': changelog(complete, now.toISOString().slice(0, 10)),
    '.github/workflows/publish.yml': PUBLISH_WORKFLOW,
    ...contentFiles(complete),
  };
}

/** The entries of `dir`, undefined when it does not exist; a ScaffoldError of `dir` when it is not a folder. */
async function entriesOf(dir: string): Promise<string[] | undefined> {
  try {
    return await folderEntries(dir);
  } catch (error) {
    if (error instanceof FolderConflictError) throw new ScaffoldError('dir', `${error.dir} ${error.problem}`);
    throw error;
  }
}

/**
 * Writes a new template into `dir` (created when missing). Refuses values the manifest schema
 * refuses (ScaffoldError naming the field) and a folder with files in it unless `force`
 * (ScaffoldTargetNotEmptyError). The files are written into a staging folder beside `dir` and
 * moved into place at the end, so a failure leaves `dir` as it was.
 */
export async function scaffoldTemplate(dir: string, options: ScaffoldOptions): Promise<ScaffoldResult> {
  const values: ScaffoldValues = { name: options.name, category: options.category, description: options.description, ...(options.version ? { version: options.version } : {}) };
  const [problem] = scaffoldProblems(values);
  if (problem) throw new ScaffoldError(problem.field, `${problem.field} ${problem.rule}`);

  const target = path.resolve(dir);
  const existing = await entriesOf(target);
  if (existing && existing.length > 0 && !options.force) throw new ScaffoldTargetNotEmptyError(dir);

  const files = scaffoldFiles(values, options.now?.() ?? new Date());
  const paths = Object.keys(files).sort();
  try {
    await writeFolderAtomically(target, paths.map((file) => ({ path: file, content: files[file] ?? '' })), { force: options.force ?? false });
  } catch (error) {
    if (error instanceof FolderNotEmptyError) throw new ScaffoldTargetNotEmptyError(dir);
    if (error instanceof FolderConflictError) throw new ScaffoldError('dir', `${dir}: ${error.problem}`);
    throw error;
  }
  return { dir: target, files: paths };
}
