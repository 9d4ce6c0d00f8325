/**
 * How both stores version their schema: a list of steps, step n taking the schema from version n to
 * n + 1; a database at some version takes the steps it lacks, in order, and one newer than this
 * release is refused. Each backend keeps its version its own way (SQLite's `user_version`,
 * PostgreSQL's `schema_migrations`) and runs the steps in its own transactions.
 */

/** A step of the schema: SQL, or code when rows must be filled with what SQL cannot make. */
export type SchemaStep<Handle, Done> = string | ((handle: Handle) => Done);

/** The steps a schema at `current` lacks; `TooNew` (naming `where`) when it is newer than the steps know. */
export function stepsToRun<S>(steps: readonly S[], current: number, where: string, TooNew: new (message: string) => Error): readonly S[] {
  if (current > steps.length) throw new TooNew(`${where} has schema version ${current}; this release knows up to ${steps.length}: upgrade template-registry`);
  return steps.slice(current);
}

/** Runs one step on `handle`: its SQL through `exec`, or its code. */
export function runStep<Handle, Done>(step: SchemaStep<Handle, Done>, handle: Handle, exec: (sql: string) => Done): Done {
  return typeof step === 'string' ? exec(step) : step(handle);
}
