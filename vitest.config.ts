import { defineConfig } from 'vitest/config';

import { catalogScriptVitePlugin } from './scripts/build-catalog.js';

export default defineConfig({
  // The tests run the sources: the catalog page's script is bundled from its browser entry (see scripts/build-catalog.js).
  plugins: [catalogScriptVitePlugin()],
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
