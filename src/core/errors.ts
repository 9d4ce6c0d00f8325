/** The message of anything thrown: an Error's message, or the value as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The first line of `errorMessage(error)` (parsers put excerpts on the lines after it). */
export function firstLine(error: unknown): string {
  const message = errorMessage(error);
  return message.split('\n')[0] ?? message;
}

/** A full disk or quota (a file write, or SQLite's own): a retry may succeed once room is made. */
export function isStorageFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL';
}
