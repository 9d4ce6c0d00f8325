import { describe, expect, it } from 'vitest';

import { camelCase, className, kebabCase, packageName, pascalCase, snakeCase, templateFilters } from '../../src/template/index.js';

describe('template filters', () => {
  it('package_name follows the spec: lower case, anything outside a-z 0-9 - becomes -', () => {
    expect(packageName('My_App 2')).toBe('my-app-2');
    expect(packageName('my-service')).toBe('my-service');
    expect(packageName('Über.App')).toBe('-ber-app');
  });

  it('class_name follows the spec: hyphen+letter becomes the upper-case letter, first letter upper-cased', () => {
    expect(className('my-cool-app')).toBe('MyCoolApp');
    expect(className('service')).toBe('Service');
    expect(className('app-2')).toBe('App-2');
  });

  it('converts between the common cases', () => {
    expect(kebabCase('My Cool_app')).toBe('my-cool-app');
    expect(kebabCase('myCoolApp')).toBe('my-cool-app');
    expect(snakeCase('my-cool-app')).toBe('my_cool_app');
    expect(camelCase('my-cool-app')).toBe('myCoolApp');
    expect(pascalCase('my_cool app')).toBe('MyCoolApp');
    expect(templateFilters.upper?.('abc')).toBe('ABC');
    expect(templateFilters.lower?.('ABC')).toBe('abc');
  });

  it('turns missing values into empty text instead of failing', () => {
    expect(packageName(undefined)).toBe('');
    expect(className(null)).toBe('');
  });
});
