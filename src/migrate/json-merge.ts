/**
 * Three-way merge of JSON documents by key, for the `.json` files whose line merge conflicts
 * (`package.json` with a dependency added by the template and a script added by the project on
 * neighbouring lines): the template's changes (base -> theirs), property by property down through
 * objects, are laid over the project's text (ours) with `jsonc-parser`'s edits, so the project's
 * formatting, key order and comments stay as they are. A property both sides changed differently
 * (or that one side changed inside an object the other removed) is a conflict: the merge gives up
 * and the caller falls back to conflict markers. Arrays and other values are compared whole.
 */
import type { FormattingOptions, ParseError } from 'jsonc-parser';
import { loadJsonc } from '../core/lazy/jsonc.load.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Largest document merged by key, in characters; a larger one keeps its markers. */
const MAX_JSON_MERGE_CHARS = 2 * 1024 * 1024;
/** Most property changes laid over the project's text (each edit is a pass over the text). */
const MAX_KEY_CHANGES = 1000;

const MISSING = Symbol('missing');
type Slot = Json | typeof MISSING;

const isObject = (value: Slot): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

function equal(a: Slot, b: Slot): boolean {
  if (a === b) return true;
  if (a === MISSING || b === MISSING || typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, index) => equal(item, b[index] as Json));
  }
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && equal(a[key] as Json, b[key] as Json));
}

/** The document as a value (comments and trailing commas allowed, as in tsconfig.json); undefined when it does not parse. */
function parsed(text: string): Json | undefined {
  const errors: ParseError[] = [];
  const value = loadJsonc().parse(text, errors, { allowTrailingComma: true, disallowComments: false }) as Json | undefined;
  return errors.length === 0 ? value : undefined;
}

function at(root: Json, path: readonly string[]): Slot {
  let current: Slot = root;
  for (const key of path) {
    if (!isObject(current) || !Object.hasOwn(current, key)) return MISSING;
    current = current[key] as Json;
  }
  return current;
}

interface KeyChange {
  path: string[];
  /** The new value; MISSING when the property is removed. */
  value: Slot;
  /** The keys of the object the property is in, in the template's order (where to insert a new one). */
  siblings: string[];
}

/** The template's changes from `base` to `theirs`, property by property (objects are descended into). */
function keyChanges(base: JsonObject, theirs: JsonObject, path: string[], out: KeyChange[]): void {
  const siblings = Object.keys(theirs);
  const keys = [...siblings, ...Object.keys(base).filter((key) => !Object.hasOwn(theirs, key))];
  for (const key of keys) {
    const before: Slot = Object.hasOwn(base, key) ? (base[key] as Json) : MISSING;
    const after: Slot = Object.hasOwn(theirs, key) ? (theirs[key] as Json) : MISSING;
    if (equal(before, after)) continue;
    if (isObject(before) && isObject(after)) keyChanges(before, after, [...path, key], out);
    else out.push({ path: [...path, key], value: after, siblings });
  }
}

/** Indentation and line ending of `text`, so inserted properties look like their neighbours. */
function formattingOf(text: string): FormattingOptions {
  const indent = /^([ \t]+)\S/m.exec(text)?.[1] ?? '  ';
  const tabs = indent.startsWith('\t');
  return { insertSpaces: !tabs, tabSize: tabs ? 1 : indent.length, eol: text.includes('\r\n') ? '\r\n' : '\n' };
}

/** Where a new property goes among the project's: after the nearest key that precedes it in the template's object. */
function insertionIndex(key: string, siblings: readonly string[]): (properties: string[]) => number {
  return (properties) => {
    const position = siblings.indexOf(key);
    for (let k = position - 1; k >= 0; k--) {
      const found = properties.indexOf(siblings[k] as string);
      if (found >= 0) return found + 1;
    }
    for (let k = position + 1; k < siblings.length; k++) {
      const found = properties.indexOf(siblings[k] as string);
      if (found >= 0) return found;
    }
    return properties.length;
  };
}

/**
 * The project's JSON text (`ours`) with the template's change from `base` to `theirs` merged in by
 * key, or undefined when the three are not all JSON objects, when a property changed on both sides
 * differently, or when the documents are too large.
 */
export function mergeJsonByKey(base: string, ours: string, theirs: string): string | undefined {
  if (Math.max(base.length, ours.length, theirs.length) > MAX_JSON_MERGE_CHARS) return undefined;
  const [baseValue, oursValue, theirsValue] = [parsed(base), parsed(ours), parsed(theirs)];
  if (baseValue === undefined || oursValue === undefined || theirsValue === undefined) return undefined;
  if (!isObject(baseValue) || !isObject(oursValue) || !isObject(theirsValue)) return undefined;

  const changes: KeyChange[] = [];
  keyChanges(baseValue, theirsValue, [], changes);
  if (changes.length > MAX_KEY_CHANGES) return undefined;
  const formattingOptions = formattingOf(ours);
  let text = ours;
  for (const change of changes) {
    const mine = at(oursValue, change.path);
    if (equal(mine, change.value)) continue; // the project made the same change
    if (!equal(mine, at(baseValue, change.path))) return undefined; // both changed it: a conflict
    if (!isObject(at(oursValue, change.path.slice(0, -1)))) return undefined; // the project removed or replaced the object it is in
    const key = change.path.at(-1) as string;
    const edits = loadJsonc().modify(text, change.path, change.value === MISSING ? undefined : change.value, {
      formattingOptions,
      getInsertionIndex: insertionIndex(key, change.siblings),
    });
    text = loadJsonc().applyEdits(text, edits);
  }
  // What was written must read back as the merge it stands for.
  return parsed(text) === undefined ? undefined : text;
}
