/**
 * `publish --wait` waits until the registry's public URL lists the version and
 * says after how long (its time-out, with a fake clock, is tested in test/publish/visible.test.ts).
 */
import { describe, expect, it } from 'vitest';

import { cli } from '../helpers/cli.js';
import { startRegistryServer } from '../helpers/registry-server.js';
import { withoutEnvironment } from '../helpers/fixtures.js';
import { writePublishableTemplate } from '../publish/publishable-template.js';

withoutEnvironment(['TEMPLATE_REGISTRY_TOKEN', 'TEMPLATE_REGISTRY_URL']);

describe('template-registry publish --wait', () => {
  it('waits until the template file at the registry lists the version, and says so (in --json too)', async () => {
    const server = await startRegistryServer();
    const dir = await writePublishableTemplate();
    const result = await cli('publish', dir, '--registry', server.url, '--token', server.token, '--wait', '--wait-timeout', '30');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`waiting until ${server.url} lists demo-template@1.0.0 (at most 30 s)`);
    expect(result.stdout).toMatch(new RegExp(`^visible at ${server.url}/templates/demo-template\\.json after \\d+ ms$`, 'm'));

    const again = await cli('publish', dir, '--registry', server.url, '--token', server.token, '--wait', '--public-url', `${server.url}/registry.json`, '--json');
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ name: 'demo-template', version: '1.0.0', visible: true, visibleAfterMs: expect.any(Number) as number });
  });

  it('refuses a --wait-timeout that is not a whole number of seconds', async () => {
    const dir = await writePublishableTemplate();
    const result = await cli('publish', dir, '--registry', 'http://127.0.0.1:9', '--token', 't', '--wait', '--wait-timeout', '0');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--wait-timeout must be a whole number of seconds, 1 or more (got "0")');
  });
});
