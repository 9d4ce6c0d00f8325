/**
 * Generates `src/core/schema-types.ts` from the JSON Schemas in `schemas/`.
 *
 * json-schema-to-typescript compiles one schema at a time and would fetch absolute `$ref`s over the
 * network. Instead, every schema is folded into one local document first: each schema (and each of
 * its `$defs` that has a `title`) becomes an entry of the document's `$defs`, named by its title,
 * every `$ref` is rewritten to point there, and untitled `$defs` (small shared rules such as a count)
 * are inlined. Keywords that TypeScript cannot express (`if`/`then`/`else`, `x-messages`) are dropped.
 * Nothing is resolved outside that document.
 *
 * Used by test/schemas/schema-types.test.ts, which compares the output with the committed file and
 * rewrites it when UPDATE_SCHEMA_TYPES=1 (`npm run gen:types`).
 */
import { compile, type JSONSchema } from 'json-schema-to-typescript';

import { SCHEMA_BASE, schemas, type SchemaName } from '../src/core/schemas.js';

type SchemaNode = Record<string, unknown>;

export const SCHEMA_TYPES_PATH = 'src/core/schema-types.ts';

const BANNER = `/**
 * Generated from schemas/*.schema.json by scripts/generate-types.ts. Do not edit by hand.
 * To regenerate after changing a schema: npm run gen:types
 */`;

/** Keywords whose value is one subschema. */
const SCHEMA_KEYWORDS = new Set([
  'items',
  'additionalProperties',
  'propertyNames',
  'contains',
  'not',
  'unevaluatedItems',
  'unevaluatedProperties',
]);
/** Keywords whose value maps names to subschemas. */
const SCHEMA_MAP_KEYWORDS = new Set(['properties', 'patternProperties', 'dependentSchemas']);
/** Keywords whose value is a list of subschemas. */
const SCHEMA_LIST_KEYWORDS = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** Keywords that say nothing about the shape of a value. */
const ANNOTATION_KEYWORDS = new Set(['title', 'description', 'default', 'examples', '$comment', 'deprecated']);
/** Keywords left out of the TypeScript view: conditionals, ajv-only metadata, and identifiers that no longer apply. */
const DROPPED_KEYWORDS = new Set(['if', 'then', 'else', 'x-messages', '$id', '$schema', '$defs']);

function isNode(value: unknown): value is SchemaNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when the schema accepts any value (it holds annotations only). */
function isUnconstrained(node: SchemaNode): boolean {
  return Object.keys(node).every((key) => ANNOTATION_KEYWORDS.has(key) || (key === 'tsType' && node[key] === 'unknown'));
}

function title(node: SchemaNode, where: string): string {
  if (typeof node.title !== 'string' || node.title === '') throw new Error(`${where} has no title`);
  return node.title;
}

class SchemaFolder {
  /** The folded document's `$defs`: titled schemas by title, in the order they were first met. */
  readonly defs: Record<string, SchemaNode> = {};
  private readonly byId = new Map<string, SchemaNode>();
  private readonly origin = new Map<string, string>();

  constructor() {
    for (const schema of Object.values(schemas) as SchemaNode[]) this.byId.set(schema.$id as string, schema);
  }

  /** Adds a schema (a whole file, or one of its titled `$defs`) under its title; returns the title. */
  hoist(schema: SchemaNode, docId: string, where: string): string {
    const name = title(schema, where);
    const known = this.origin.get(name);
    if (known === undefined) {
      this.origin.set(name, where);
      this.defs[name] = {}; // reserved first, so that a schema referring to itself terminates
      this.defs[name] = this.convert(schema, docId);
      const defs = schema.$defs;
      if (isNode(defs)) {
        for (const [key, def] of Object.entries(defs)) {
          if (isNode(def) && typeof def.title === 'string') this.hoist(def, docId, `${docId}#/$defs/${key}`);
        }
      }
    } else if (known !== where) {
      throw new Error(`title "${name}" is used by both ${known} and ${where}`);
    }
    return name;
  }

  private resolveRef(ref: string, docId: string): { target: SchemaNode; targetDoc: string; where: string } {
    const hash = ref.indexOf('#');
    const base = hash === -1 ? ref : ref.slice(0, hash);
    const pointer = hash === -1 ? '' : ref.slice(hash + 1);
    const targetDoc = base === '' ? docId : base;
    if (!targetDoc.startsWith(SCHEMA_BASE)) throw new Error(`$ref "${ref}" points outside ${SCHEMA_BASE}`);
    const doc = this.byId.get(targetDoc);
    if (!doc) throw new Error(`$ref "${ref}": no schema has $id ${targetDoc}`);
    let target: unknown = doc;
    for (const segment of pointer.split('/').slice(1)) {
      const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
      target = isNode(target) ? target[key] : undefined;
    }
    if (!isNode(target)) throw new Error(`$ref "${ref}" does not point to a schema`);
    return { target, targetDoc, where: pointer === '' ? targetDoc : `${targetDoc}#${pointer}` };
  }

  convert(node: SchemaNode, docId: string): SchemaNode {
    if (typeof node.$ref === 'string') {
      const { target, targetDoc, where } = this.resolveRef(node.$ref, docId);
      if (typeof target.title === 'string') {
        // A named type: refer to it. Sibling keywords only narrow it further, which TypeScript does not need.
        return { $ref: `#/$defs/${this.hoist(target, targetDoc, where)}` };
      }
      const { $ref: _ref, ...siblings } = node;
      return this.convert({ ...target, ...siblings }, targetDoc);
    }
    const out: SchemaNode = {};
    for (const [key, value] of Object.entries(node)) {
      if (DROPPED_KEYWORDS.has(key)) continue;
      if (SCHEMA_KEYWORDS.has(key) && isNode(value)) {
        out[key] = this.convert(value, docId);
      } else if (SCHEMA_MAP_KEYWORDS.has(key) && isNode(value)) {
        out[key] = Object.fromEntries(
          Object.entries(value).map(([name, sub]) => [name, isNode(sub) ? this.convert(sub, docId) : sub]),
        );
      } else if (SCHEMA_LIST_KEYWORDS.has(key) && Array.isArray(value)) {
        const list = (value as unknown[])
          .map((sub) => (isNode(sub) ? this.convert(sub, docId) : sub))
          // In allOf, a member left without constraints (it held only if/then) adds nothing.
          .filter((sub) => key !== 'allOf' || !isNode(sub) || !isUnconstrained(sub));
        if (list.length > 0) out[key] = list;
      } else {
        out[key] = value;
      }
    }
    // A schema with annotations only accepts any value: say so, or the generator would make it an object.
    if (isUnconstrained(out)) out.tsType = 'unknown';
    return out;
  }
}

/** The whole content of `src/core/schema-types.ts`. */
export async function generateSchemaTypes(): Promise<string> {
  const folder = new SchemaFolder();
  const properties: Record<string, SchemaNode> = {};
  for (const [name, schema] of Object.entries(schemas) as [SchemaName, SchemaNode][]) {
    properties[name] = { $ref: `#/$defs/${folder.hoist(schema, schema.$id as string, schema.$id as string)}` };
  }
  const root = {
    title: 'SchemaTypes',
    description: 'The TypeScript type of each schema in schemas/, by short name (the file name without .schema.json).',
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties),
    properties,
    $defs: folder.defs,
  };
  return compile(root as JSONSchema, 'SchemaTypes', {
    bannerComment: BANNER,
    additionalProperties: true,
    declareExternallyReferenced: true,
    unknownAny: true,
    strictIndexSignatures: false,
    unreachableDefinitions: false,
    format: true,
    // Plain arrays: a `minItems: 1` tuple type would be exact but makes arrays built with map() unassignable.
    ignoreMinAndMaxItems: true,
    style: { singleQuote: true, printWidth: 120, trailingComma: 'all', bracketSpacing: true, semi: true, tabWidth: 2 },
    // Everything is local to the folded document: never read files or the network.
    $refOptions: { resolve: { external: false } },
  });
}
