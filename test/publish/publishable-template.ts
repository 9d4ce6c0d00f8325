import { validManifest, writeTemplate, type FileTree } from '../helpers/fixtures.js';

/** The fixture manifest with every feature its variables and prompts name: lint finds no error in it. */
export const publishableManifest = { ...validManifest, features: ['api', 'testing'] };

/** A template folder that passes every step of the publish pipeline (lint warnings only), with `files` laid over it. */
export function writePublishableTemplate(files: FileTree = {}): Promise<string> {
  return writeTemplate({ 'template.json': publishableManifest, ...files });
}

/** A publishable template with two files whose conditions no valid answer set can meet (test generation refuses it). */
export function writeUncoverableTemplate(): Promise<string> {
  return writePublishableTemplate({
    'template.json': {
      ...publishableManifest,
      files: [
        { path: 'schema.graphql', when: 'features contains "graphql"' },
        { path: 'grpc.proto', when: 'features contains "grpc"' },
      ],
    },
    'template/schema.graphql': 'type Query { name: String }\n',
    'template/grpc.proto': 'syntax = "proto3";\n',
  });
}
