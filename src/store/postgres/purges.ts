import type pg from 'pg';

import type { PurgeJob, PurgeJobUpdate, PurgeStore } from '../types.js';
import { newPurgeJobs } from '../records.js';
import { purgeJobOf as toJob, type PurgeRow } from '../rows.js';
import { transaction } from './database.js';

const COLUMNS = 'id, target, urls, state, attempts, next_attempt_at, created_at, last_error';

/** The purge outbox in PostgreSQL, shared by every instance. */
export class PostgresPurgeStore implements PurgeStore {
  constructor(private readonly pool: pg.Pool) {}

  async enqueuePurges(targets: readonly string[], urls: readonly string[], now: Date = new Date()): Promise<PurgeJob[]> {
    const jobs = newPurgeJobs(targets, urls, now);
    if (jobs.length === 0) return [];
    await transaction(this.pool, async (client) => {
      for (const job of jobs) {
        await client.query("INSERT INTO purge_jobs (id, target, urls, state, attempts, next_attempt_at, created_at, updated_at) VALUES ($1, $2, $3, 'pending', 0, $4, $4, $4)", [
          job.id,
          job.target,
          JSON.stringify(job.urls),
          now.toISOString(),
        ]);
      }
    });
    return jobs;
  }

  async claimDuePurges(targets: readonly string[], now: Date, limit: number, leaseMs: number): Promise<PurgeJob[]> {
    if (targets.length === 0) return [];
    // SKIP LOCKED: instances claiming at once take different jobs; a job another instance leased
    // since this statement's snapshot is checked again under its lock, found not due, and left out.
    const { rows } = await this.pool.query<PurgeRow & { due_at: Date; seq: string }>(
      `WITH due AS (
         SELECT p.id, p.next_attempt_at AS due_at FROM purge_jobs p
         WHERE p.state = 'pending' AND p.next_attempt_at <= $1 AND p.target = ANY($2::text[])
         ORDER BY p.next_attempt_at, p.seq LIMIT $3
         FOR UPDATE OF p SKIP LOCKED
       )
       UPDATE purge_jobs p SET next_attempt_at = $4 FROM due WHERE p.id = due.id
       RETURNING p.id, p.target, p.urls, p.state, p.attempts, due.due_at, p.created_at, p.last_error, p.seq`,
      [now.toISOString(), [...targets], limit, new Date(now.getTime() + leaseMs).toISOString()],
    );
    return rows.sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || Number(a.seq) - Number(b.seq)).map((row) => toJob({ ...row, next_attempt_at: row.due_at }));
  }

  async updatePurge(id: string, update: PurgeJobUpdate, now: Date = new Date()): Promise<void> {
    await this.pool.query("UPDATE purge_jobs SET state = $1, attempts = $2, next_attempt_at = COALESCE($3, next_attempt_at), last_error = $4, updated_at = $5 WHERE id = $6 AND state = 'pending'", [
      update.state,
      update.attempts,
      update.nextAttemptAt?.toISOString() ?? null,
      update.error,
      now.toISOString(),
      id,
    ]);
  }

  async nextPurgeDueAt(targets: readonly string[]): Promise<Date | undefined> {
    if (targets.length === 0) return undefined;
    const { rows } = await this.pool.query<{ due: Date | null }>("SELECT min(next_attempt_at) AS due FROM purge_jobs WHERE state = 'pending' AND target = ANY($1::text[])", [[...targets]]);
    return rows[0]?.due ?? undefined;
  }

  async countPendingPurges(): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM purge_jobs WHERE state = 'pending'");
    return rows[0]?.n ?? 0;
  }

  async listPurges(limit = 100): Promise<PurgeJob[]> {
    return (await this.pool.query<PurgeRow>(`SELECT ${COLUMNS} FROM purge_jobs ORDER BY seq DESC LIMIT $1`, [limit])).rows.map(toJob);
  }

  async prunePurges(keep: number): Promise<void> {
    await this.pool.query("DELETE FROM purge_jobs WHERE state != 'pending' AND seq NOT IN (SELECT seq FROM purge_jobs WHERE state != 'pending' ORDER BY seq DESC LIMIT $1)", [keep]);
  }
}
