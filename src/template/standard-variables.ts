/**
 * The spec's variables table describes the standard variables of a web template (`projectName`,
 * `description`, `author`, `features`, `database`) and the computed `packageName` and
 * `className`. A template may declare any variables with any types, enums and defaults; these
 * rules say what a standard name is expected to look like (lint warns, never errors, when a
 * template gives one another shape) and which computed values every template with a
 * `projectName` gets.
 */

import { isRecord } from '../core/is-record.js';

/** The shape of a standard variable: its type, and for an object the types of its properties. */
export interface StandardShape {
  type: 'string' | 'array' | 'object';
  /** For an array: the type of its items. */
  items?: 'string';
  /** For an object: the type of each known property. */
  properties?: Readonly<Record<string, 'string'>>;
  /** How the spec describes it, for messages. */
  described: string;
}

export const STANDARD_VARIABLES: Readonly<Record<string, StandardShape>> = {
  projectName: { type: 'string', described: 'a string (the project name)' },
  description: { type: 'string', described: 'a string' },
  author: { type: 'object', properties: { name: 'string', email: 'string' }, described: 'an object with string properties name and email' },
  features: { type: 'array', items: 'string', described: 'an array of strings (the features chosen)' },
  database: { type: 'string', described: 'a string (the database chosen)' },
};

/** The variable the standard computed values are worked out from. */
export const PROJECT_NAME = 'projectName';

/**
 * The spec's computed values, as expressions over `projectName`: `packageName` (lower case, every
 * character outside a-z, 0-9 and - replaced by -) and `className` (hyphen + letter upper-cased,
 * first letter upper-cased). See filters.ts for the two rules.
 */
export const STANDARD_COMPUTED: Readonly<Record<string, string>> = {
  packageName: `${PROJECT_NAME} | package_name`,
  className: `${PROJECT_NAME} | class_name`,
};

/**
 * The standard computed values a template gets without declaring them: `packageName` and
 * `className` whenever it has a `projectName` variable, unless it declares a variable or a
 * computed value of that name itself (the template's own definition wins).
 */
export function implicitComputed(variableNames: Iterable<string>, computedNames: Iterable<string>): Record<string, string> {
  const variables = new Set(variableNames);
  const computed = new Set(computedNames);
  if (!variables.has(PROJECT_NAME)) return {};
  const implicit: Record<string, string> = {};
  for (const [name, expression] of Object.entries(STANDARD_COMPUTED)) {
    if (!variables.has(name) && !computed.has(name)) implicit[name] = expression;
  }
  return implicit;
}


/** One way a declared variable differs from the standard shape of its name. */
export interface ShapeMismatch {
  /** JSON pointer inside the variables file, relative to `/variables/<name>`: `/type`, `/items/type`, `/properties/email/type`. */
  at: string;
  message: string;
}

/**
 * How a template's definition of a standard name differs from the standard shape; empty for a
 * name that is not standard, or a definition that leaves the type open.
 */
export function standardShapeMismatches(name: string, definition: unknown): ShapeMismatch[] {
  const shape = Object.hasOwn(STANDARD_VARIABLES, name) ? STANDARD_VARIABLES[name] : undefined;
  if (!shape || !isRecord(definition)) return [];
  const standard = `the standard variable "${name}" is ${shape.described}`;
  const type = definition.type;
  if (typeof type === 'string' && type !== shape.type) {
    return [{ at: '/type', message: `variable "${name}" has type ${type}; ${standard}. Rename it if it means something else, so tools and readers that know the standard name are not misled` }];
  }
  const found: ShapeMismatch[] = [];
  const items = definition.items;
  if (shape.items && isRecord(items) && typeof items.type === 'string' && items.type !== shape.items) {
    found.push({ at: '/items/type', message: `items of variable "${name}" have type ${items.type}; ${standard}` });
  }
  const properties = definition.properties;
  for (const [key, expected] of Object.entries(shape.properties ?? {})) {
    const property = isRecord(properties) && Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (isRecord(property) && typeof property.type === 'string' && property.type !== expected) {
      found.push({ at: `/properties/${key}/type`, message: `property "${key}" of variable "${name}" has type ${property.type}; ${standard}` });
    }
  }
  return found;
}
