/**
 * What a trusted publisher's fields may be, for the server that stores one and the CLI that asks for
 * one alike (the CLI checks its flags before it sends them; the server checks every request).
 */

/** The issuer of GitHub Actions' ID tokens on github.com, always trusted. */
export const GITHUB_ACTIONS_ISSUER = 'https://token.actions.githubusercontent.com';

/** A workflow file below `.github/workflows/`: a plain file name ending in .yml or .yaml. */
export const WORKFLOW_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}\.ya?ml$/;

/** `owner/name` as GitHub allows them. */
export const REPOSITORY_PATTERN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;

/** A ref pattern: a git ref, `*` standing for any characters. */
export const REF_PATTERN = /^refs\/[^\s\\]{1,250}$/;
