/**
 * Validation problems in one shape and their two renderings: a line of text for people
 * (`template.json /version: must be MAJOR.MINOR.PATCH (got "1.0")`) and the `details` of the
 * spec's error envelope (`{ field: "version", message, code }`).
 */
import { JsonSyntaxError, nearestPosition, parseJsonWithPositions, pointerSegments, type SourcePosition } from './json-source.js';
import { describeSchemaErrors, type RuleViolation } from './messages.js';
import type { ApiErrorDetail } from './schema-types.js';
import { schemaErrors, type SchemaName } from './schemas.js';

/** One broken rule in one file: which file, where in it, and what. */
export interface ValidationProblem {
  /** The file, relative to the folder checked (`.` for the folder itself). */
  file: string;
  /** JSON pointer inside that file; empty for the whole file. */
  pointer: string;
  message: string;
  code: string;
  line?: number;
  column?: number;
}

/** A `details` item of the spec's error envelope. */
export type ErrorDetail = ApiErrorDetail;

function formatProblem(problem: ValidationProblem, withPosition: boolean): string {
  const where = withPosition && problem.line !== undefined ? `:${problem.line}:${problem.column ?? 1}` : '';
  return problem.pointer === '' ? `${problem.file}${where}: ${problem.message}` : `${problem.file}${where} ${problem.pointer}: ${problem.message}`;
}

/** One line per problem: `file /pointer: message`. */
export function formatValidationError(problem: ValidationProblem): string {
  return formatProblem(problem, false);
}

/** One line per problem, with its position when known: `file:line:col /pointer: message`. */
export function formatValidationErrorAt(problem: ValidationProblem): string {
  return formatProblem(problem, true);
}

/** The violations of one file as problems, each at the position of its value (or closest parent). */
export function locateViolations(file: string, violations: readonly RuleViolation[], positions?: ReadonlyMap<string, SourcePosition>): ValidationProblem[] {
  return violations.map((violation) => ({ file, ...violation, ...nearestPosition(positions, violation.pointer) }));
}

/** A JSON pointer as an envelope detail's field: `/author/email` -> `author.email`; `fallback` for the root. */
function fieldOfPointer(pointer: string, fallback: string): string {
  return pointerSegments(pointer).join('.') || fallback;
}

/** Violations as the envelope's `details`; `fallback` names the field of a violation at the root. */
export function errorDetails(violations: readonly RuleViolation[], fallback: string): ErrorDetail[] {
  return violations.map((violation) => ({ field: fieldOfPointer(violation.pointer, fallback), message: violation.message, code: violation.code }));
}

/** A JSON document checked against its schema: its value and positions when it parses, and every problem. */
export interface CheckedJson {
  /** Undefined when the text is not JSON. */
  value?: unknown;
  positions?: ReadonlyMap<string, SourcePosition>;
  /** Syntax error (with its position) or every schema violation (at its value's position). */
  problems: ValidationProblem[];
}

/**
 * Parses `text` (the content of `file`) and checks it against `schema`: a syntax error is one
 * INVALID_JSON problem at its line and column, schema violations point at their values.
 */
export function checkJsonText(file: string, text: string, schema: SchemaName): CheckedJson {
  let parsed;
  try {
    parsed = parseJsonWithPositions(text);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    return { problems: [{ file, pointer: '', message: `invalid JSON: ${error.message}`, code: 'INVALID_JSON', ...error.position }] };
  }
  const problems = locateViolations(file, describeSchemaErrors(schemaErrors(schema, parsed.value)), parsed.positions);
  return { value: parsed.value, positions: parsed.positions, problems };
}
