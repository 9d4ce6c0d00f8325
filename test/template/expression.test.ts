import { describe, expect, it } from 'vitest';

import { ExpressionError, ExpressionEvaluator } from '../../src/template/index.js';

const evaluator = new ExpressionEvaluator();

describe('template expressions', () => {
  it('evaluates a condition on an array answer', () => {
    expect(evaluator.condition('features contains "database"', { features: ['api', 'database'] })).toBe(true);
    expect(evaluator.condition('features contains "database"', { features: ['api'] })).toBe(false);
  });

  it('treats a missing variable as false', () => {
    expect(evaluator.condition('database', {})).toBe(false);
    expect(evaluator.condition('database == "mysql"', { database: 'mysql' })).toBe(true);
  });

  it('evaluates computed values with filters', () => {
    expect(evaluator.value('projectName | package_name', { projectName: 'My_App 2' })).toBe('my-app-2');
    expect(evaluator.value('projectName | class_name', { projectName: 'my-cool-app' })).toBe('MyCoolApp');
  });

  it('lists the names an expression reads', () => {
    expect(evaluator.references('features contains "api" and useDocker', 'condition').sort()).toEqual(['features', 'useDocker']);
    expect(evaluator.references('author.name | upcase', 'value')).toEqual(['author']);
  });

  it('rejects an unknown filter', () => {
    expect(() => evaluator.value('projectName | shell_exec', { projectName: 'x' })).toThrow(/undefined filter: shell_exec/);
  });

  it('refuses delimiters that would break out of the expression', () => {
    expect(() => evaluator.condition('true %}{% include "x" %}{% if true', {})).toThrow(ExpressionError);
    expect(() => evaluator.value('x }}{{ y', {})).toThrow(/must not contain/);
  });

  it('never reaches prototype members', () => {
    expect(evaluator.value('name.constructor', { name: 'x' })).toBe('');
    expect(evaluator.value('obj.__proto__', { obj: {} })).toBe('');
    expect(evaluator.value('name.constructor.constructor', { name: 'x' })).toBe('');
  });
});
