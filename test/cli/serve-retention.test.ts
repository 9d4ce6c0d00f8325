/** `serve --event-retention-days`: a whole number of days from 0 (keep every event) to 36,500, named when it is not. */
import { describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/fixtures.js';
import { cli } from '../helpers/cli.js';

describe('serve --event-retention-days', () => {
  it.each(['-1', '1.5', 'a year', '36501'])('refuses %s, naming the flag, before opening any store', async (value) => {
    const store = await tempDir('tr-serve-flags-');
    const run = await cli('serve', '--store', store, '--event-retention-days', value);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/--event-retention-days must be/);
  });
});
