// The import rules between the folders of src/ (one folder a layer), checked by `npm run lint`.
// src/index.ts, the package root, may import every layer.
import boundaries from 'eslint-plugin-boundaries';

/** The layers of src/ and what each may import (see ARCHITECTURE.md). */
export const LAYERS = {
  core: [],
  archive: ['core'],
  template: ['core'],
  pack: ['core', 'archive', 'template'],
  catalog: ['core'],
  registry: ['core', 'archive', 'catalog'],
  store: ['core', 'registry'],
  client: ['core', 'archive'],
  compat: ['core'],
  migrate: ['core', 'template'],
  github: ['core'],
  publish: ['core', 'archive', 'template', 'pack'],
  project: ['core', 'archive', 'template', 'client', 'compat', 'migrate'],
  server: ['core', 'archive', 'template', 'registry', 'store'],
  action: ['core', 'template', 'pack', 'publish', 'github'],
  'registry-action': ['core', 'registry', 'github'],
  'sync-action': ['core', 'client', 'project', 'github', 'template'],
  cli: ['core', 'archive', 'template', 'pack', 'registry', 'store', 'client', 'compat', 'migrate', 'github', 'publish', 'project', 'server'],
  types: [],
};

export const boundariesConfig = {
  files: ['src/**/*.ts'],
  plugins: { boundaries },
  settings: {
    'import/resolver': { typescript: { alwaysTryTypes: true, project: './tsconfig.json' } },
    'boundaries/elements': [
      ...Object.keys(LAYERS).map((type) => ({ type, pattern: `src/${type}` })),
    ],
  },
  rules: {
    'boundaries/dependencies': [
      2,
      {
        default: 'disallow',
        message: 'src/{{from.element.type}} may not import src/{{to.element.type}}: see the layers in ARCHITECTURE.md',
        policies: [
          ...Object.entries(LAYERS).map(([type, allowed]) => ({ from: { element: { type } }, allow: allowed.map((to) => ({ to: { element: { type: to } } })) })),
        ],
      },
    ],
  },
};
