/**
 * What `generate` and `create` print once the project is written: the template's `nextSteps`
 * (Liquid rendered with the answers) or a short default, and the same message as a field with
 * `--json`. A hostile `nextSteps` can neither read files nor drive the terminal.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { packTemplate } from '../../src/pack/index.js';
import { publishTemplate } from '../../src/publish/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir, validManifest, writeTemplate, isolateConsumerEnvironment } from '../helpers/fixtures.js';
import { startRegistryServer } from '../helpers/registry-server.js';

const NEXT_STEPS = [
  'Your project {{ projectName }} ({{ packageName }}) is ready.',
  '{% if features contains "api" %}Start the API with: make serve{% endif %}',
  '{% for feature in features %}- {{ feature | upcase }}',
  '{% endfor %}',
].join('\n');

function templateWith(nextSteps: string | undefined): Promise<string> {
  return writeTemplate({ 'template.json': { ...validManifest, ...(nextSteps === undefined ? {} : { nextSteps }) } });
}

/** A file outside the template that a hostile message would like to print. */
async function secretFile(): Promise<string> {
  const file = path.join(await tempDir(), 'secret.txt');
  await writeFile(file, 'TOP-SECRET-VALUE\n');
  return file;
}

describe('generate prints what to do next', () => {
  it("prints the template's nextSteps rendered with the answers and computed values", async () => {
    const out = path.join(await tempDir(), 'shop');
    const result = await cli('generate', await templateWith(NEXT_STEPS), '--defaults', '--out', out, '--set', 'projectName=shop-api', '--set', 'features=api,testing');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `generated demo-template@1.0.0 into ${out} (1 files)\n\n` +
        'Your project shop-api (shop-api) is ready.\nStart the API with: make serve\n- API\n- TESTING\n',
    );
  });

  it('prints a short default without nextSteps: where the project is and how to update it later', async () => {
    const out = path.join(await tempDir(), 'plain project');
    const result = await cli('generate', await templateWith(undefined), '--defaults', '--out', out);
    expect(result.code, result.stderr).toBe(0);
    const [summary, blank, ...steps] = result.stdout.trimEnd().split('\n');
    expect(summary).toBe(`generated demo-template@1.0.0 into ${out} (1 files)`);
    expect(blank).toBe('');
    expect(steps[0]).toBe('Next steps:');
    // Outside the current folder: the full path, quoted for a shell because of the space.
    expect(steps[1]).toBe(`  cd '${out}'`);
    expect(steps.join('\n')).toContain('.template-lock.json');
    expect(steps.join('\n')).toContain(`template-registry migrate --project '${out}'`);
  });

  it('with --json prints one JSON document holding the message (null without one)', async () => {
    const withSteps = await cli('generate', await templateWith(NEXT_STEPS), '--defaults', '--json', '--out', path.join(await tempDir(), 'a'));
    expect(withSteps.code, withSteps.stderr).toBe(0);
    const parsed = JSON.parse(withSteps.stdout) as { nextSteps: string | null; template: { name: string } };
    expect(parsed.template.name).toBe('demo-template');
    expect(parsed.nextSteps).toBe('Your project my-app (my-app) is ready.\nStart the API with: make serve\n- API');

    const without = await cli('generate', await templateWith(undefined), '--defaults', '--json', '--out', path.join(await tempDir(), 'b'));
    expect(without.code, without.stderr).toBe(0);
    expect((JSON.parse(without.stdout) as { nextSteps: unknown }).nextSteps).toBeNull();
    expect(without.stdout).not.toContain('Next steps');
  });
});

describe('a hostile nextSteps', () => {
  it.each([
    ['an include of an absolute path', (secret: string) => `{% include "${secret}" %}`],
    ['a render of a file beside the content', () => '{% render "README.md" %}'],
    ['a layout', (secret: string) => `{% layout "${secret}" %}x`],
    ['an unknown tag', () => '{% exec "cat /etc/passwd" %}'],
    ['an unknown filter', () => '{{ projectName | read_file }}'],
  ])('reads no file and fails no generation: %s (a warning, then the default)', async (_what, source) => {
    const secret = await secretFile();
    const template = await writeTemplate({ 'template.json': { ...validManifest, nextSteps: source(secret) }, 'template/README.md': 'README-CONTENT {{ projectName }}\n' });
    const out = path.join(await tempDir(), 'p');
    const result = await cli('generate', template, '--defaults', '--out', out);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^warning: template\.json: nextSteps cannot be rendered: /);
    expect(result.stdout).toContain('Next steps:');
    expect(result.stdout + result.stderr).not.toContain('TOP-SECRET-VALUE');
    expect(result.stdout + result.stderr).not.toContain('README-CONTENT');
  });

  it('prints answers as text, never as Liquid, and strips terminal escape sequences and controls', async () => {
    const secret = await secretFile();
    const template = await templateWith('\u001b[2J\u001b]0;owned\u0007Done: {{ description }}\u009b31m!\r\nbye');
    const out = path.join(await tempDir(), 'p');
    const result = await cli('generate', template, '--defaults', '--out', out, '--set', `description={% include "${secret}" %}\u001b[31mred`);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Done: {% include "${secret}" %}red!\nbye\n`);
    expect(result.stdout).not.toContain('TOP-SECRET-VALUE');
    // Control characters are what must be absent.
    // eslint-disable-next-line no-control-regex
    expect(result.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });

  it('cannot flood the terminal: a huge loop passes the memory budget, a long message is cut at 16 KiB', async () => {
    const huge = await cli('generate', await templateWith('{% for i in (1..10000000) %}0123456789{% endfor %}'), '--defaults', '--out', path.join(await tempDir(), 'p'));
    expect(huge.code).toBe(0);
    expect(huge.stderr).toMatch(/nextSteps cannot be rendered: memory alloc limit exceeded/);
    expect(huge.stdout).toContain('Next steps:');

    const long = await cli('generate', await templateWith('{% for i in (1..3000) %}0123456789{% endfor %}'), '--defaults', '--out', path.join(await tempDir(), 'p'));
    expect(long.code, long.stderr).toBe(0);
    expect(long.stdout).toMatch(/^0123456789.*\n\[the template's message was cut off at 16384 characters\]\n$/m);
    expect(long.stdout.length).toBeLessThan(16_384 + 200);
  });

  it('reaches no property of the JavaScript objects behind the answers', async () => {
    const result = await cli('generate', await templateWith('[{{ constructor }}{{ projectName.constructor.name }}{{ features.__proto__ }}]'), '--defaults', '--out', path.join(await tempDir(), 'p'));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/\n\n\[\]\n$/);
  });

  it('over 4096 characters is refused as the manifest schema says', async () => {
    const template = await templateWith('x'.repeat(4097));
    const result = await cli('validate', template);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/\/nextSteps: must be at most 4096 characters long/);
  });
});

describe('create prints what to do next', () => {
  isolateConsumerEnvironment();

  it("prints the template's message, or the default naming migrate, and the message as a JSON field", async () => {
    const server = await startRegistryServer();
    const publish = async (name: string, nextSteps: string | undefined): Promise<void> => {
      const dir = await writeTemplate({ 'template.json': { ...validManifest, name, ...(nextSteps === undefined ? {} : { nextSteps }) } });
      const pack = await packTemplate(dir, { outDir: await tempDir() });
      await publishTemplate({ registryUrl: server.url, token: server.token, archive: pack.file, manifest: pack.manifest });
    };
    await publish('with-steps', 'Next: cd into {{ projectName }} and run make.');
    await publish('without-steps', undefined);
    const registry = `${server.url}/registry.json`;

    const project = path.join(await tempDir(), 'one');
    const created = await cli('create', 'with-steps', project, '--registry', registry, '--defaults', '--set', 'projectName=shop-api');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^created .*one from with-steps@1\.0\.0 \(1 files, integrity verified\)\n\nNext: cd into shop-api and run make\.\n$/);

    const other = path.join(await tempDir(), 'two');
    const plain = await cli('create', 'without-steps', other, '--registry', registry, '--defaults');
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toContain(`  cd ${other}\n`);
    expect(plain.stdout).toContain(`template-registry migrate --project ${other}`);

    const json = await cli('create', 'with-steps', path.join(await tempDir(), 'three'), '--registry', registry, '--defaults', '--json');
    expect(json.code, json.stderr).toBe(0);
    // projectName not given: the folder's name answers it, as npm create does.
    expect((JSON.parse(json.stdout) as { nextSteps: string }).nextSteps).toBe('Next: cd into three and run make.');
  }, 60_000);
});
