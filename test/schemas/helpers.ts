import type { ErrorObject } from 'ajv';
import { expect } from 'vitest';

import { schemaErrors, type SchemaName } from '../../src/core/schemas.js';

/** The parts of an ajv error a test pins down. */
export interface ExpectedError {
  keyword: string;
  instancePath: string;
  params?: Record<string, unknown>;
}

/** Asserts that `data` is valid, showing ajv's errors when it is not. */
export function expectValid(name: SchemaName, data: unknown): void {
  expect(brief(schemaErrors(name, data))).toEqual([]);
}

/** Asserts that `data` is invalid and that one of the errors is the expected keyword at the expected place. */
export function expectInvalid(name: SchemaName, data: unknown, expected: ExpectedError): void {
  const errors = schemaErrors(name, data);
  expect(errors.length, 'expected validation to fail').toBeGreaterThan(0);
  const match: Record<string, unknown> = { keyword: expected.keyword, instancePath: expected.instancePath };
  if (expected.params) match.params = expect.objectContaining(expected.params);
  expect(brief(errors)).toContainEqual(expect.objectContaining(match));
}

function brief(errors: ErrorObject[]): Pick<ErrorObject, 'keyword' | 'instancePath' | 'params' | 'message'>[] {
  return errors.map(({ keyword, instancePath, params, message }) => ({ keyword, instancePath, params, message }));
}

/** A copy of `data` without `key`. */
export function without<T extends object>(data: T, key: keyof T): Omit<T, typeof key> {
  const copy = { ...data };
  delete copy[key];
  return copy;
}

/** A deep copy of a JSON fixture, so that a test can change nested parts. */
export function clone<T>(data: T): T {
  return structuredClone(data);
}
