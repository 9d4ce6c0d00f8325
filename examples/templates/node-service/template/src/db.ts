{% case database -%}
{% when "postgresql" -%}
import pg from 'pg';

let pool: pg.Pool | undefined;

/** The shared connection pool, created on first use from DATABASE_URL. */
export function getDatabase(): pg.Pool {
  pool ??= new pg.Pool({ connectionString: databaseUrl(), connectionTimeoutMillis: 5000 });
  return pool;
}

export async function checkDatabase(): Promise<void> {
  await getDatabase().query('SELECT 1');
}

export async function closeDatabase(): Promise<void> {
  await pool?.end();
  pool = undefined;
}
{%- when "mysql" -%}
import mysql from 'mysql2/promise';

let pool: mysql.Pool | undefined;

/** The shared connection pool, created on first use from DATABASE_URL. */
export function getDatabase(): mysql.Pool {
  pool ??= mysql.createPool(databaseUrl());
  return pool;
}

export async function checkDatabase(): Promise<void> {
  await getDatabase().query('SELECT 1');
}

export async function closeDatabase(): Promise<void> {
  await pool?.end();
  pool = undefined;
}
{%- when "sqlite" -%}
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

let db: Database.Database | undefined;

/** The database, opened on first use; DATABASE_URL is a file path (an optional "file:" prefix is ignored). */
export function getDatabase(): Database.Database {
  if (!db) {
    const file = databaseUrl().replace(/^file:/, '');
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    db = new Database(file);
    db.pragma('journal_mode = WAL');
  }
  return db;
}

export async function checkDatabase(): Promise<void> {
  getDatabase().prepare('SELECT 1').get();
}

export async function closeDatabase(): Promise<void> {
  db?.close();
  db = undefined;
}
{%- when "mongodb" -%}
import { MongoClient, type Db } from 'mongodb';

let client: Promise<MongoClient> | undefined;

/** The database named in DATABASE_URL, connected on first use. */
export async function getDatabase(): Promise<Db> {
  client ??= new MongoClient(databaseUrl(), { serverSelectionTimeoutMS: 5000 }).connect();
  try {
    return (await client).db();
  } catch (error) {
    client = undefined;
    throw error;
  }
}

export async function checkDatabase(): Promise<void> {
  await (await getDatabase()).command({ ping: 1 });
}

export async function closeDatabase(): Promise<void> {
  const pending = client;
  client = undefined;
  const connected = await pending?.catch(() => undefined);
  await connected?.close();
}
{%- endcase %}

function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set (see .env.example)');
  return url;
}
