/**
 * A template with a secret answer, for the tests of secrets: an API token (`"secret": true`, read
 * from DEMO_API_TOKEN), a computed value that reads it, and a content file that holds both.
 */
import { validVariables } from './fixtures.js';

export const SECRET_ENV = 'DEMO_API_TOKEN';

export const secretVariablesFile = {
  variables: {
    projectName: validVariables.variables.projectName,
    apiToken: { type: 'string', secret: true, env: SECRET_ENV, required: true, validation: '^tok_[a-z0-9]+$', invalidMessage: 'An API token starts with tok_.' },
  },
  computed: { authHeader: '"Bearer " | append: apiToken', packageName: 'projectName | package_name' },
};

export const secretPrompts = {
  prompts: [
    { name: 'projectName', message: 'Project name?', type: 'input' },
    { name: 'apiToken', message: 'API token?', type: 'input' },
  ],
};

/** The template's files (merged over the fixtures' defaults by writeTemplate). */
export const secretFiles = {
  'template.vars.json': secretVariablesFile,
  'template.prompts.json': secretPrompts,
  'template/README.md': '# {{ projectName }}\n',
  'template/config/api.txt': 'token={{ apiToken }}\nheader={{ authHeader }}\n',
};
