import { validManifest, writeTemplate, type FileTree } from '../helpers/fixtures.js';

/** The fixture manifest with every feature its variables and prompts name: lint finds no error in it. */
export const publishableManifest = { ...validManifest, features: ['api', 'testing'] };

/** A template folder that passes every step of the publish pipeline (lint warnings only), with `files` laid over it. */
export function writePublishableTemplate(files: FileTree = {}): Promise<string> {
  return writeTemplate({ 'template.json': publishableManifest, ...files });
}
