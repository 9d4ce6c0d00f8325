/**
 * process.nextTick builds each tick from an object literal with computed keys, and V8 keeps one
 * record of what that literal met for the whole process. When a server's first few thousand ticks
 * come from its start-up (opening the store, the build thread's messages, timers) while nextTick
 * moves between V8's tiers of code, that record can end up megamorphic, and from then on every
 * tick is built in V8's runtime instead of optimized code. node's own HTTP and stream code takes
 * five ticks per request, so a small answer (a 304) cost 3-4 us more CPU, about a fifth (Node 20,
 * in two thirds of the server processes measured: bench/RESULTS.md, Embedded server). Uniform
 * calls first let V8 optimize nextTick on one shape before anything else runs.
 */

/**
 * Calls of each arity node's code uses (no argument to three): 12,000 in all. Measured: 1,000 left
 * nextTick megamorphic every time, 12,000 in none of the processes tried.
 */
const CALLS_PER_ARITY = 3000;

let settled = false;

/**
 * Calls process.nextTick uniformly, once per process (later calls return at once); the ticks
 * queued (which do nothing) run at the next turn of the event loop.
 */
export function settleTickQueue(): void {
  if (settled) return;
  settled = true;
  const ignore = (): void => undefined;
  for (let i = 0; i < CALLS_PER_ARITY; i++) {
    process.nextTick(ignore);
    process.nextTick(ignore, i);
    process.nextTick(ignore, i, i);
    process.nextTick(ignore, i, i, i);
  }
}
