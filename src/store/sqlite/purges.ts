import type Database from 'better-sqlite3';

import { newPurgeJobs } from '../records.js';
import { purgeJobOf as toJob, type PurgeRow } from '../rows.js';
import type { PurgeJob, PurgeJobUpdate, PurgeStore } from '../types.js';

/** `target IN (?, ?, ...)` for `count` targets (none: a condition no row meets). */
const targetsIn = (count: number): string => (count === 0 ? '0' : `target IN (${Array.from({ length: count }, () => '?').join(', ')})`);

/** The purge outbox in SQLite. */
export class SqlitePurgeStore implements PurgeStore {
  constructor(private readonly db: Database.Database) {}

  enqueuePurges(targets: readonly string[], urls: readonly string[], now: Date = new Date()): Promise<PurgeJob[]> {
    const jobs = newPurgeJobs(targets, urls, now);
    const insert = this.db.prepare("INSERT INTO purge_jobs (id, target, urls, state, attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)");
    // Due at `now` (the embedded store keeps due times as milliseconds).
    this.db.transaction(() => jobs.forEach((job) => insert.run(job.id, job.target, JSON.stringify(job.urls), now.getTime(), job.createdAt, job.createdAt))).immediate();
    return Promise.resolve(jobs);
  }

  claimDuePurges(targets: readonly string[], now: Date, limit: number, leaseMs: number): Promise<PurgeJob[]> {
    const claimed = this.db
      .transaction(() => {
        const rows = this.db
          .prepare(`SELECT * FROM purge_jobs WHERE state = 'pending' AND next_attempt_at <= ? AND ${targetsIn(targets.length)} ORDER BY next_attempt_at, rowid LIMIT ?`)
          .all(now.getTime(), ...targets, limit) as PurgeRow[];
        const lease = this.db.prepare('UPDATE purge_jobs SET next_attempt_at = ? WHERE id = ?');
        for (const row of rows) lease.run(now.getTime() + leaseMs, row.id);
        return rows.map(toJob);
      })
      .immediate();
    return Promise.resolve(claimed);
  }

  updatePurge(id: string, update: PurgeJobUpdate, now: Date = new Date()): Promise<void> {
    this.db
      .prepare("UPDATE purge_jobs SET state = ?, attempts = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_error = ?, updated_at = ? WHERE id = ? AND state = 'pending'")
      .run(update.state, update.attempts, update.nextAttemptAt?.getTime() ?? null, update.error, now.toISOString(), id);
    return Promise.resolve();
  }

  nextPurgeDueAt(targets: readonly string[]): Promise<Date | undefined> {
    const row = this.db.prepare(`SELECT MIN(next_attempt_at) AS due FROM purge_jobs WHERE state = 'pending' AND ${targetsIn(targets.length)}`).get(...targets) as { due: number | null };
    return Promise.resolve(row.due === null ? undefined : new Date(row.due));
  }

  countPendingPurges(): Promise<number> {
    return Promise.resolve((this.db.prepare("SELECT COUNT(*) AS n FROM purge_jobs WHERE state = 'pending'").get() as { n: number }).n);
  }

  listPurges(limit = 100): Promise<PurgeJob[]> {
    return Promise.resolve((this.db.prepare('SELECT * FROM purge_jobs ORDER BY rowid DESC LIMIT ?').all(limit) as PurgeRow[]).map(toJob));
  }

  prunePurges(keep: number): Promise<void> {
    this.db
      .prepare("DELETE FROM purge_jobs WHERE state != 'pending' AND rowid NOT IN (SELECT rowid FROM purge_jobs WHERE state != 'pending' ORDER BY rowid DESC LIMIT ?)")
      .run(keep);
    return Promise.resolve();
  }
}
