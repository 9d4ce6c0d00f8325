/** Runs `work` on every item, at most `limit` at a time; results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/**
 * `work` run once at a time: a call while it runs joins that run (one pass of a periodic job, never
 * two at once). `idle()` waits for the run under way, if any, its failure left to its callers.
 */
export function oneAtATime<T>(work: () => Promise<T>): { run: () => Promise<T>; idle: () => Promise<void> } {
  let running: Promise<T> | undefined;
  return {
    run: () =>
      (running ??= work().finally(() => {
        running = undefined;
      })),
    idle: async () => {
      await running?.catch(() => undefined);
    },
  };
}
