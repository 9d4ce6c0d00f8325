/** `nextSteps` is Liquid rendered after generation: validate checks it like a content file, at its place in template.json. */
import { describe, expect, it } from 'vitest';

import { validateTemplate } from '../../src/template/index.js';
import { validManifest, writeTemplate } from '../helpers/fixtures.js';

async function problemsOf(nextSteps: string) {
  const dir = await writeTemplate({ 'template.json': { ...validManifest, nextSteps } });
  return (await validateTemplate(dir)).errors.filter((e) => e.pointer === '/nextSteps');
}

describe("the manifest's nextSteps", () => {
  it('passes when it names declared variables', async () => {
    expect(await problemsOf('cd {{ projectName }} and run the tests')).toEqual([]);
  });

  it('is refused with an unknown variable, a Liquid syntax error or an unknown filter, at its line in template.json', async () => {
    const [unknown] = await problemsOf('cd {{ projcetName }}');
    expect(unknown).toMatchObject({ file: 'template.json', code: 'UNKNOWN_CONTENT_VARIABLE', message: expect.stringContaining('projectName') });
    expect(unknown?.line).toBeGreaterThan(1);
    expect((await problemsOf('{% if projectName %}unclosed'))[0]).toMatchObject({ code: 'LIQUID_SYNTAX' });
    expect((await problemsOf('{{ projectName | shout }}'))[0]).toMatchObject({ code: 'UNKNOWN_FILTER' });
  });
});
