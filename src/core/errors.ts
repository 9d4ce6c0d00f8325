/**
 * The message of anything thrown: an Error's message, or the value as text. With `withCause`, an
 * Error's own `cause` is added in parentheses with its errno code: `fetch` throws "fetch failed" and
 * keeps the reason (ECONNREFUSED, a TLS failure) only there.
 */
export function errorMessage(error: unknown, options: { withCause?: boolean } = {}): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (options.withCause === true && cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return `${error.message} (${code ? `${code}: ` : ''}${cause.message})`;
  }
  return error.message;
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
