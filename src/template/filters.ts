/**
 * Pure string filters for computed values and templates. Each takes any value and returns a
 * string, so that a template cannot reach anything but its own answers through them.
 */

/** The text of a value as Liquid would print it: nil is empty, arrays join, objects as JSON. */
export function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(text).join('');
  if (typeof value === 'object') return JSON.stringify(value);
  return typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' ? String(value) : '';
}

function words(value: unknown): string[] {
  return text(value)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((word) => word !== '');
}

const capitalize = (word: string): string => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();

/** The spec's packageName rule: lower case, every character outside a-z, 0-9 and - becomes -. `My_App 2` -> `my-app-2`. */
export function packageName(value: unknown): string {
  return text(value)
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-');
}

/** The spec's className rule: each hyphen+letter becomes the upper-case letter, first letter upper-cased. `my-cool-app` -> `MyCoolApp`. */
export function className(value: unknown): string {
  const joined = text(value).replace(/-([a-zA-Z])/g, (_, letter: string) => letter.toUpperCase());
  return joined.charAt(0).toUpperCase() + joined.slice(1);
}

/** `My Cool_app` -> `my-cool-app` */
export function kebabCase(value: unknown): string {
  return words(value).map((w) => w.toLowerCase()).join('-');
}

/** `my-cool-app` -> `my_cool_app` */
export function snakeCase(value: unknown): string {
  return words(value).map((w) => w.toLowerCase()).join('_');
}

/** `my-cool-app` -> `myCoolApp` */
export function camelCase(value: unknown): string {
  const [first = '', ...rest] = words(value);
  return first.toLowerCase() + rest.map(capitalize).join('');
}

/** `my-cool-app` -> `MyCoolApp` */
export function pascalCase(value: unknown): string {
  return words(value).map(capitalize).join('');
}

function upper(value: unknown): string {
  return text(value).toUpperCase();
}

function lower(value: unknown): string {
  return text(value).toLowerCase();
}

/** The filters a template may use besides Liquid's standard ones, by the name templates use. */
export const templateFilters: Readonly<Record<string, (value: unknown) => string>> = {
  package_name: packageName,
  // `slug` is the name the issue tracker's examples use for the same rule.
  slug: packageName,
  class_name: className,
  kebab_case: kebabCase,
  snake_case: snakeCase,
  camel_case: camelCase,
  pascal_case: pascalCase,
  upper,
  lower,
};
