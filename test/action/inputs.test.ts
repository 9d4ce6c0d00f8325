import { describe, expect, it } from 'vitest';

import { InputError, parseInputs } from '../../src/action/inputs.js';

const base = {
  GITHUB_REF: 'refs/tags/v1.2.3',
  GITHUB_REPOSITORY: 'acme/node-service',
  'INPUT_REGISTRY-URL': 'https://registry.example.com',
  'INPUT_REGISTRY-TOKEN': 'tr_secret',
  'INPUT_GITHUB-TOKEN': 'ghs_secret',
};

describe('parseInputs', () => {
  it('takes the version from the tag without its v', () => {
    const inputs = parseInputs({ ...base, GITHUB_WORKSPACE: '/ws' });
    expect(inputs).toMatchObject({
      version: '1.2.3',
      tag: 'v1.2.3',
      templatePath: '/ws',
      workspace: '/ws',
      createRelease: true,
      dryRun: false,
      repository: { owner: 'acme', repo: 'node-service' },
      exclude: [],
    });
  });

  it('refuses a pre-release tag that the manifest pattern does not allow', () => {
    expect(() => parseInputs({ ...base, GITHUB_REF: 'refs/tags/v1.2.0-beta.1' })).toThrow(
      /version must be MAJOR.MINOR.PATCH.*"1.2.0-beta.1"/,
    );
  });

  it('refuses a run that is not on a tag when no version is given', () => {
    expect(() => parseInputs({ ...base, GITHUB_REF: 'refs/heads/main' })).toThrow(InputError);
    expect(() => parseInputs({ ...base, GITHUB_REF: 'refs/heads/main' })).toThrow(/not on a tag/);
  });

  it('prefers the version input over the tag', () => {
    expect(parseInputs({ ...base, GITHUB_REF: 'refs/heads/main', INPUT_VERSION: 'v2.0.1' })).toMatchObject({ version: '2.0.1', tag: 'v2.0.1' });
    expect(() => parseInputs({ ...base, INPUT_VERSION: '2.0' })).toThrow(/got "2.0" from the version input/);
  });

  it('reads hyphenated input names, lists and booleans as the runner passes them', () => {
    const inputs = parseInputs({
      ...base,
      GITHUB_WORKSPACE: '/ws',
      'INPUT_TEMPLATE-PATH': 'templates/api',
      INPUT_EXCLUDE: 'docs/**\n*.log, tmp/**',
      'INPUT_TEST-COMMAND': 'npm test',
      'INPUT_CREATE-RELEASE': 'False',
      'INPUT_DRY-RUN': 'TRUE',
    });
    expect(inputs).toMatchObject({
      templatePath: '/ws/templates/api',
      exclude: ['docs/**', '*.log', 'tmp/**'],
      testCommand: 'npm test',
      createRelease: false,
      dryRun: true,
    });
  });

  it('resolves template-path against GITHUB_WORKSPACE, itself against the working directory', () => {
    expect(parseInputs({ ...base, GITHUB_WORKSPACE: 'repo', 'INPUT_TEMPLATE-PATH': 'templates/api' }, '/runner/work')).toMatchObject({
      workspace: '/runner/work/repo',
      templatePath: '/runner/work/repo/templates/api',
    });
    expect(parseInputs({ ...base, 'INPUT_TEMPLATE-PATH': 'api' }, '/runner/work')).toMatchObject({ workspace: '/runner/work', templatePath: '/runner/work/api' });
    expect(parseInputs({ ...base, GITHUB_WORKSPACE: '/ws', 'INPUT_TEMPLATE-PATH': '/elsewhere/api' }).templatePath).toBe('/elsewhere/api');
  });

  it('rejects a boolean input that is not true or false', () => {
    expect(() => parseInputs({ ...base, 'INPUT_DRY-RUN': 'yes' })).toThrow(/input dry-run must be true or false/);
  });

  it('needs the registry and its token unless it is a dry run', () => {
    expect(() => parseInputs({ ...base, 'INPUT_REGISTRY-TOKEN': '' })).toThrow(/registry-token is empty and the job cannot ask for an OIDC ID token .*permissions: id-token: write/);
    expect(() => parseInputs({ ...base, 'INPUT_REGISTRY-URL': '' })).toThrow(/registry-url is required/);
    expect(() => parseInputs({ ...base, 'INPUT_REGISTRY-URL': 'ftp://x' })).toThrow(/must be an http\(s\) URL/);
    expect(parseInputs({ GITHUB_REF: 'refs/tags/v1.0.0', 'INPUT_DRY-RUN': 'true' }).dryRun).toBe(true);
  });

  it('publishes through a trusted publisher without registry-token when the job may ask for an OIDC ID token', () => {
    const oidc = { ACTIONS_ID_TOKEN_REQUEST_URL: 'https://runner.example/token?api-version=2.0', ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'req' };
    const inputs = parseInputs({ ...base, 'INPUT_REGISTRY-TOKEN': '', ...oidc });
    expect(inputs.trustedPublishing).toBe(true);
    expect(inputs).not.toHaveProperty('registryToken');
    // A stored token still wins; a dry run needs neither.
    expect(parseInputs({ ...base, ...oidc }).trustedPublishing).toBe(false);
    expect(parseInputs({ ...base, 'INPUT_REGISTRY-TOKEN': '', 'INPUT_DRY-RUN': 'true' }).trustedPublishing).toBe(false);
    // Half of what the runner gives is not enough.
    expect(() => parseInputs({ ...base, 'INPUT_REGISTRY-TOKEN': '', ACTIONS_ID_TOKEN_REQUEST_URL: oidc.ACTIONS_ID_TOKEN_REQUEST_URL })).toThrow(/id-token: write/);
  });

  it('needs the GitHub token and repository to create the release', () => {
    expect(() => parseInputs({ ...base, 'INPUT_GITHUB-TOKEN': '' })).toThrow(/github-token is required/);
    expect(() => parseInputs({ ...base, GITHUB_REPOSITORY: 'nope' })).toThrow(/GITHUB_REPOSITORY must be owner\/repo/);
    expect(parseInputs({ ...base, 'INPUT_GITHUB-TOKEN': '', 'INPUT_CREATE-RELEASE': 'false' }).createRelease).toBe(false);
  });
});
