/**
 * Random but reproducible histories of analytics events (a seed gives the same events), for the
 * tests that compare the aggregate-based records with the oracle (analytics-oracle.ts): downloads
 * by a few clients over 90 days around `now` (some after it), generations with and without users,
 * feedback with valid and invalid ratings, comments that repeat, events without a receipt time,
 * with an unreadable time, and of versions the registry does not list.
 */
import type { RegistryDocument, TemplateEntry } from '../../src/core/schema-types.js';
import type { AnalyticsEventRecord } from '../../src/registry/analytics.js';
import { templateEntry } from '../helpers/builders.js';

export const HISTORY_NOW = new Date('2026-03-31T12:00:00.000Z');
const DAY = 24 * 60 * 60 * 1000;

/** A small seeded generator (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const entry = (id: string, version: string, category: string): TemplateEntry => templateEntry(id, { version, category });

/** The registry the histories are aggregated against (web-app@0.9.0 is not listed). */
export const historyRegistry: Pick<RegistryDocument, 'templates'> = {
  templates: [entry('web-app', '1.0.0', 'frontend'), entry('web-app', '1.1.0', 'frontend'), entry('api', '2.0.0', 'backend'), entry('worker', '1.0.0', 'backend'), entry('site', '1.0.0', 'frontend')],
};

const VERSIONS = [['web-app', '1.0.0'], ['web-app', '1.1.0'], ['web-app', '0.9.0'], ['api', '2.0.0'], ['worker', '1.0.0']] as const;
const COMMENTS = ['Great template', 'great  template!', 'It crashes on start', 'please add Docker support', 'Missing a README', 'would be nice to have tests', 'fine', '   ', 'It crashes on start.'];

/**
 * `count` events as a server records them (`{ id, event, client, receivedAt }`), ids in order.
 * With `stored`, only what the server's submission schema lets through (a timestamp always, a
 * receipt time always): what a store can hold.
 */
export function history(seed: number, count: number, options: { stored?: boolean } = {}): AnalyticsEventRecord[] {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const events: AnalyticsEventRecord[] = [];
  for (let i = 0; i < count; i++) {
    const [templateId, version] = pick(VERSIONS);
    // Mostly in the 90 days before now, a few after it.
    const at = new Date(HISTORY_NOW.getTime() - Math.floor(next() * 90 * DAY) + (next() < 0.03 ? 2 * DAY : 0));
    const sent = new Date(at.getTime() - Math.floor(next() * 3 * DAY));
    const client = next() < 0.15 ? undefined : `client-${Math.floor(next() * 6)}`;
    const userId = next() < 0.5 ? undefined : pick(['ada', 'bob', 'cy', 'dee', 'eve', 'fay', '']);
    const type = pick(['download', 'download', 'download', 'generation', 'feedback', 'other']);
    const timestamp = !options.stored && next() < 0.03 ? 'not a time' : sent.toISOString();
    const event: AnalyticsEventRecord['event'] = { type, templateId, version, timestamp, ...(userId !== undefined ? { userId } : {}) };
    if (type === 'generation') {
      const success = pick([true, true, false, undefined]);
      if (success !== undefined) event.success = success;
      if (next() < 0.9) event.duration = pick([120, 95.5, 0, -3, 1e3, 33.333]);
    } else if (type === 'feedback') {
      event.rating = pick([1, 2, 3, 4, 5, 5, 0, 6, 4.5]);
      if (next() < 0.8) event.comment = pick(COMMENTS);
      if (next() < 0.2) event.helpful = pick([0, 3, -1, 1.5]);
    }
    const receivedAt = !options.stored && next() < 0.1 ? undefined : at.toISOString();
    events.push({ id: String(i + 1), event, ...(client !== undefined ? { client } : {}), ...(receivedAt !== undefined ? { receivedAt } : {}) });
  }
  return events;
}
