import { describe, expect, it } from 'vitest';

import { schemaErrors } from '../../src/core/schemas.js';
import { expectInvalid, expectValid, without } from './helpers.js';

const rename = { type: 'rename', path: 'src/App.jsx', newPath: 'src/App.tsx', backup: true };
const update = { type: 'update', path: 'package.json', content: '{}\n', backup: false };

describe('file-change schema', () => {
  const S = 'file-change';

  it.each([
    ['create', { type: 'create', path: 'README.md', content: '# x\n' }],
    ['update', update],
    ['delete', { type: 'delete', path: '.babelrc', backup: true }],
    ['rename', rename],
  ])('accepts a %s', (_type, change) => {
    expectValid(S, change);
  });

  it.each(['type', 'path'] as const)('rejects a change without %s', (field) => {
    expectInvalid(S, without(update, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects a type other than create, update, delete, rename', () => {
    expectInvalid(S, { ...update, type: 'move' }, { keyword: 'enum', instancePath: '/type' });
  });

  it('rejects a rename without newPath', () => {
    expectInvalid(S, without(rename, 'newPath'), { keyword: 'required', instancePath: '', params: { missingProperty: 'newPath' } });
    const error = schemaErrors(S, without(rename, 'newPath')).find((e) => e.keyword === 'required');
    expect(error?.parentSchema?.['x-messages']).toEqual({ required: 'a rename needs newPath' });
  });

  it('rejects empty path and newPath', () => {
    expectInvalid(S, { ...update, path: '' }, { keyword: 'minLength', instancePath: '/path' });
    expectInvalid(S, { ...rename, newPath: '' }, { keyword: 'minLength', instancePath: '/newPath' });
  });

  it('rejects content that is not a string, and backup that is not a boolean', () => {
    expectInvalid(S, { ...update, content: { a: 1 } }, { keyword: 'type', instancePath: '/content' });
    expectInvalid(S, { ...update, backup: 'yes' }, { keyword: 'type', instancePath: '/backup' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...update, mode: 0o644 }, { keyword: 'additionalProperties', instancePath: '' });
  });
});

describe('migration-step schema', () => {
  const S = 'migration-step';
  const step = {
    id: 'react-app-1-to-2',
    description: 'Move to TypeScript',
    fromVersion: '1.4.0',
    toVersion: '2.0.0',
    breaking: true,
    automatic: false,
    changes: [rename, update],
  };

  it('accepts a step', () => {
    expectValid(S, step);
  });

  it('accepts a step without changes listed', () => {
    expectValid(S, { ...step, changes: [] });
  });

  it.each(['id', 'description', 'fromVersion', 'toVersion', 'breaking', 'automatic', 'changes'] as const)(
    'rejects a step without %s',
    (field) => {
      expectInvalid(S, without(step, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
    },
  );

  it.each(['fromVersion', 'toVersion'])('rejects a %s without a patch part', (field) => {
    expectInvalid(S, { ...step, [field]: '2.0' }, { keyword: 'pattern', instancePath: `/${field}` });
  });

  it.each(['fromVersion', 'toVersion'])('rejects a %s that is a range', (field) => {
    expectInvalid(S, { ...step, [field]: '^2.0.0' }, { keyword: 'pattern', instancePath: `/${field}` });
  });

  it.each(['id', 'description'])('rejects an empty %s', (field) => {
    expectInvalid(S, { ...step, [field]: '' }, { keyword: 'minLength', instancePath: `/${field}` });
  });

  it.each(['breaking', 'automatic'])('rejects %s that is not a boolean', (field) => {
    expectInvalid(S, { ...step, [field]: 'no' }, { keyword: 'type', instancePath: `/${field}` });
  });

  it('checks each change against the file-change schema', () => {
    expectInvalid(S, { ...step, changes: [without(rename, 'newPath')] }, {
      keyword: 'required',
      instancePath: '/changes/0',
      params: { missingProperty: 'newPath' },
    });
  });

  it('rejects an execute field (steps in JSON are declarative)', () => {
    expectInvalid(S, { ...step, execute: 'rm -rf src' }, {
      keyword: 'additionalProperties',
      instancePath: '',
      params: { additionalProperty: 'execute' },
    });
  });
});

describe('migration-context schema', () => {
  const S = 'migration-context';
  const context = {
    projectPath: '/home/ada/react-app',
    currentVersion: '1.4.0',
    targetVersion: '2.0.0',
    templateId: 'react-app',
    config: { projectName: 'react-app', features: ['api'] },
    dryRun: true,
  };

  it('accepts a context', () => {
    expectValid(S, context);
  });

  it.each([['a string'], [null], [[1, 2]], [42]])('accepts %j as config', (config) => {
    expectValid(S, { ...context, config });
  });

  it('accepts a context without config', () => {
    expectValid(S, without(context, 'config'));
  });

  it.each(['projectPath', 'currentVersion', 'targetVersion', 'templateId', 'dryRun'] as const)(
    'rejects a context without %s',
    (field) => {
      expectInvalid(S, without(context, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
    },
  );

  it.each(['currentVersion', 'targetVersion'])('rejects a %s that is not MAJOR.MINOR.PATCH', (field) => {
    expectInvalid(S, { ...context, [field]: '2' }, { keyword: 'pattern', instancePath: `/${field}` });
  });

  it.each(['projectPath', 'templateId'])('rejects an empty %s', (field) => {
    expectInvalid(S, { ...context, [field]: '' }, { keyword: 'minLength', instancePath: `/${field}` });
  });

  it('rejects dryRun that is not a boolean', () => {
    expectInvalid(S, { ...context, dryRun: 'false' }, { keyword: 'type', instancePath: '/dryRun' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...context, force: true }, { keyword: 'additionalProperties', instancePath: '' });
  });
});

describe('migration-result schema', () => {
  const S = 'migration-result';
  const result = { success: true, changes: [update], warnings: ['1 breaking step: review the guide'], errors: [] };

  it('accepts a successful result', () => {
    expectValid(S, result);
  });

  it('accepts the empty result of a run with no applicable step', () => {
    expectValid(S, { success: true, changes: [], warnings: [], errors: [] });
  });

  it('accepts a failed result that says why', () => {
    expectValid(S, { success: false, changes: [], warnings: [], errors: ['step react-app-1-to-2 failed: ENOENT'] });
  });

  it.each(['success', 'changes', 'warnings', 'errors'] as const)('rejects a result without %s', (field) => {
    expectInvalid(S, without(result, field), { keyword: 'required', instancePath: '', params: { missingProperty: field } });
  });

  it('rejects a failed result without errors', () => {
    expectInvalid(S, { ...result, success: false, errors: [] }, { keyword: 'minItems', instancePath: '/errors' });
  });

  it('rejects success that is not a boolean', () => {
    expectInvalid(S, { ...result, success: 1 }, { keyword: 'type', instancePath: '/success' });
  });

  it('checks each change against the file-change schema', () => {
    expectInvalid(S, { ...result, changes: [{ type: 'chmod', path: 'x' }] }, { keyword: 'enum', instancePath: '/changes/0/type' });
  });

  it('rejects warnings and errors that are not non-empty strings', () => {
    expectInvalid(S, { ...result, warnings: [1] }, { keyword: 'type', instancePath: '/warnings/0' });
    expectInvalid(S, { ...result, warnings: [''] }, { keyword: 'minLength', instancePath: '/warnings/0' });
    expectInvalid(S, { ...result, success: false, errors: [''] }, { keyword: 'minLength', instancePath: '/errors/0' });
  });

  it('rejects an unknown field', () => {
    expectInvalid(S, { ...result, duration: 3 }, { keyword: 'additionalProperties', instancePath: '' });
  });
});
