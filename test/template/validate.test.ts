import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { formatValidationError, validateTemplate } from '../../src/template/index.js';
import { tempDir, validManifest, validVariables, writeTemplate } from '../helpers/fixtures.js';

describe('validateTemplate', () => {
  it('accepts a complete template', async () => {
    const dir = await writeTemplate();
    expect(await validateTemplate(dir)).toEqual({ valid: true, errors: [] });
  });

  it('accepts the example template', async () => {
    const result = await validateTemplate(path.resolve('examples/templates/node-service'));
    expect(result.errors).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('reports every broken rule and every missing file, not just the first', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, version: '1.0', description: 'short' },
      'CHANGELOG.md': null,
    });
    const result = await validateTemplate(dir);
    expect(result.valid).toBe(false);
    const lines = result.errors.map(formatValidationError);
    expect(lines).toContain('template.json /version: must be MAJOR.MINOR.PATCH without leading zeros, each number at most 15 digits (got "1.0")');
    expect(lines).toContain('template.json /description: must be at least 10 characters long (got "short")');
    expect(lines).toContain('CHANGELOG.md: required file is missing');
  });

  it('reports each missing required file by name', async () => {
    const dir = await writeTemplate({ 'README.md': null, 'template.vars.json': null, 'template.prompts.json': null });
    const missing = (await validateTemplate(dir)).errors.filter((e) => e.code === 'MISSING_FILE').map((e) => e.file);
    expect(missing.sort()).toEqual(['README.md', 'template.prompts.json', 'template.vars.json']);
  });

  it('reports a missing manifest as one clear error', async () => {
    const dir = await writeTemplate({ 'template.json': null });
    const result = await validateTemplate(dir);
    expect(result.errors).toEqual([
      { file: 'template.json', pointer: '', message: 'the template manifest is missing', code: 'MISSING_FILE' },
    ]);
  });

  it('reports a folder that does not exist', async () => {
    const result = await validateTemplate(path.join(await tempDir(), 'nope'));
    expect(result.valid).toBe(false);
    expect(result.errors[0]?.code).toBe('NOT_A_DIRECTORY');
  });

  it('reports invalid JSON with its line and column', async () => {
    const dir = await writeTemplate({ 'template.json': '{\n  "name": "x",\n  "version": 1.0.0\n}\n' });
    const [error] = (await validateTemplate(dir)).errors;
    expect(error).toMatchObject({ file: 'template.json', code: 'INVALID_JSON', line: 3, column: 17 });
    expect(error?.message).toMatch(/line 3, column 17/);
  });

  it('gives the line of a schema error so annotations can point at it', async () => {
    const dir = await writeTemplate({ 'template.json': JSON.stringify({ ...validManifest, category: 'cli' }, null, 2) });
    const [error] = (await validateTemplate(dir)).errors;
    expect(error).toMatchObject({ file: 'template.json', pointer: '/category', code: 'ENUM', line: 5 });
  });

  it('names an unknown top-level manifest field as a probable typo', async () => {
    const dir = await writeTemplate({ 'template.json': { ...validManifest, licence: 'MIT' } });
    expect((await validateTemplate(dir)).errors).toContainEqual(
      expect.objectContaining({ file: 'template.json', pointer: '/licence', code: 'UNKNOWN_FIELD' }),
    );
  });

  it('reports an invalid version range in methodologyVersion and dependencies', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, methodologyVersion: 'newest', dependencies: { node: '>=>20' } },
    });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ pointer: '/methodologyVersion', code: 'INVALID_RANGE' }));
    expect(errors).toContainEqual(expect.objectContaining({ pointer: '/dependencies/node', code: 'INVALID_RANGE' }));
  });

  it('checks that named paths exist inside the template', async () => {
    const dir = await writeTemplate({
      'template.json': {
        ...validManifest,
        changelog: 'HISTORY.md',
        migration: { from: ['1.x'], guide: '../outside.md' },
        customization: { variables: 'template.vars.json', prompts: 'missing-prompts.json' },
      },
    });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ pointer: '/changelog', code: 'FILE_NOT_FOUND' }));
    expect(errors).toContainEqual(expect.objectContaining({ pointer: '/migration/guide', code: 'PATH_OUTSIDE_TEMPLATE' }));
    expect(errors).toContainEqual(expect.objectContaining({ pointer: '/customization/prompts', code: 'FILE_NOT_FOUND' }));
    expect(errors.some((e) => e.pointer === '/customization/variables')).toBe(false);
  });

  it('refuses a named path that leaves the template through a symbolic link', async () => {
    const outside = await tempDir();
    const dir = await writeTemplate({ 'template.json': { ...validManifest, migration: { guide: 'docs/guide.md' } } });
    await mkdir(path.join(dir, 'docs'));
    await writeFile(path.join(outside, 'guide.md'), '# secret guide\n');
    await symlink(path.join(outside, 'guide.md'), path.join(dir, 'docs', 'guide.md'));
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ pointer: '/migration/guide', code: 'PATH_OUTSIDE_TEMPLATE' }));
  });

  it('validates the variables and prompts files against their schemas', async () => {
    const dir = await writeTemplate({
      'template.vars.json': { variables: { ...validVariables.variables, port: { type: 'number', default: 'eighty' } } },
      'template.prompts.json': { prompts: [{ name: 'port', message: 'Port?', type: 'number' }] },
    });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ file: 'template.vars.json', pointer: '/variables/port/default', code: 'TYPE' }));
    expect(errors).toContainEqual(expect.objectContaining({ file: 'template.prompts.json', pointer: '/prompts/0/type', code: 'ENUM' }));
  });

  it('reads the variables file from the path customization names', async () => {
    const dir = await writeTemplate({
      'template.json': { ...validManifest, customization: { variables: 'config/vars.json' } },
      'config/vars.json': { variables: { x: { type: 'boolean', default: 'yes' } } },
    });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors).toContainEqual(expect.objectContaining({ file: 'config/vars.json', pointer: '/variables/x/default', code: 'TYPE' }));
  });
});

describe('validateTemplate on validation patterns', () => {
  const withPattern = (pattern: string) => ({
    variables: { ...validVariables.variables, projectName: { type: 'string', default: 'my-app', validation: pattern } },
    computed: validVariables.computed,
  });

  it.each(['^(a+)+$', '^(a|a)*$', '^(b|b)*$', '(x+x+)+y'])('refuses %s, which can backtrack catastrophically, naming the file, the variable and the repetition', async (pattern) => {
    const dir = await writeTemplate({ 'template.vars.json': withPattern(pattern) });
    const result = await validateTemplate(dir);
    expect(result.valid).toBe(false);
    expect(result.errors).toEqual([
      expect.objectContaining({
        file: 'template.vars.json',
        pointer: '/variables/projectName/validation',
        code: 'UNSAFE_PATTERN',
        line: expect.any(Number),
        message: expect.stringMatching(new RegExp(`^validation of variable "projectName" ${JSON.stringify(pattern).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is refused: it is prone to catastrophic backtracking: .+ can match the same text in more than one way`)),
      }),
    ]);
  });

  it('accepts linear patterns, an optional group of a linear body included', async () => {
    for (const pattern of ['^([a-z][a-z0-9]+)?$', '^[a-z][a-z0-9-]*$', '^[^@]+@[^@]+\\.[^@]+$']) {
      expect(await validateTemplate(await writeTemplate({ 'template.vars.json': withPattern(pattern) }))).toEqual({ valid: true, errors: [] });
    }
  });

  it("checks a prompt's validate, and the patterns of object properties and array items", async () => {
    const dir = await writeTemplate({
      'template.vars.json': {
        variables: {
          ...validVariables.variables,
          owner: { type: 'object', properties: { handle: { type: 'string', default: 'me', validation: '^(\\w+\\s?)*$' } } },
          tags: { type: 'array', default: [], items: { type: 'string', validation: '^(a|aa)+$' } },
        },
        computed: validVariables.computed,
      },
      'template.prompts.json': { prompts: [{ name: 'projectName', message: 'Name?', type: 'input', validate: '^([a-z]+)+$' }] },
    });
    const found = (await validateTemplate(dir)).errors.map((e) => [e.file, e.pointer, e.code, e.message.slice(0, e.message.indexOf(' is refused'))]);
    expect(found).toEqual(
      expect.arrayContaining([
        ['template.vars.json', '/variables/owner/properties/handle/validation', 'UNSAFE_PATTERN', `validation of variable "owner.handle" ${JSON.stringify('^(\\w+\\s?)*$')}`],
        ['template.vars.json', '/variables/tags/items/validation', 'UNSAFE_PATTERN', 'validation of variable "tags[]" "^(a|aa)+$"'],
        ['template.prompts.json', '/prompts/0/validate', 'UNSAFE_PATTERN', 'validate of prompt "projectName" "^([a-z]+)+$"'],
      ]),
    );
  });

  it('refuses a pattern no linear-time engine runs, naming the construct', async () => {
    const dir = await writeTemplate({ 'template.prompts.json': { prompts: [{ name: 'projectName', message: 'Name?', type: 'input', validate: '^(a)\\1$' }] } });
    expect((await validateTemplate(dir)).errors).toEqual([
      expect.objectContaining({
        file: 'template.prompts.json',
        pointer: '/prompts/0/validate',
        code: 'UNSUPPORTED_PATTERN',
        message: 'validate of prompt "projectName" "^(a)\\\\1$" is refused: it uses a backreference or octal escape (\\1), which validation patterns do not support',
      }),
    ]);
  });
});

describe('validateTemplate on migration steps', () => {
  it('checks each migrations/*.json file against the migration step schema', async () => {
    const good = {
      id: 'add-file',
      description: 'Adds a file',
      fromVersion: '1.0.0',
      toVersion: '1.1.0',
      breaking: false,
      automatic: true,
      changes: [{ type: 'create', path: 'NEW.md', content: 'new' }],
    };
    const dir = await writeTemplate({
      'migrations/1.0.0-to-1.1.0.json': good,
      'migrations/bad.json': { ...good, toVersion: 'next', changes: [{ type: 'rename', path: 'a' }] },
    });
    const errors = (await validateTemplate(dir)).errors;
    expect(errors.every((e) => e.file === 'migrations/bad.json')).toBe(true);
    expect(errors).toContainEqual(expect.objectContaining({ file: 'migrations/bad.json', pointer: '/toVersion', code: 'PATTERN' }));
    expect(errors.length).toBeGreaterThanOrEqual(2);
  });
});
