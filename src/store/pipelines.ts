/**
 * `pipelines`: one row per distinct pipeline text (name + content hash), so every run can point
 * at exactly the YAML it was planned from.
 */
import type { Database } from 'better-sqlite3';
import type { Clock } from './clock.ts';

export interface PipelineRow {
  id: number;
  name: string;
  /** Content hash of `yamlText`, as computed by the caller. */
  hash: string;
  yamlText: string;
  /** ms since the epoch. */
  createdAt: number;
}

export interface PipelineInput {
  name: string;
  hash: string;
  yamlText: string;
}

export interface PipelinesTable {
  /** Returns the id of the row with this name and hash, inserting it when new. */
  upsert(input: PipelineInput): number;
  get(id: number): PipelineRow | undefined;
  /** The most recently stored version of the pipeline called `name`. */
  latestByName(name: string): PipelineRow | undefined;
}

const COLUMNS = 'id, name, hash, yaml_text AS yamlText, created_at AS createdAt';

export function createPipelinesTable(db: Database, now: Clock): PipelinesTable {
  const insert = db.prepare<[string, string, string, number]>(
    'INSERT OR IGNORE INTO pipelines (name, hash, yaml_text, created_at) VALUES (?, ?, ?, ?)',
  );
  const idOf = db
    .prepare<[string, string], number>('SELECT id FROM pipelines WHERE name = ? AND hash = ?')
    .pluck();
  const byId = db.prepare<[number], PipelineRow>(`SELECT ${COLUMNS} FROM pipelines WHERE id = ?`);
  const latest = db.prepare<[string], PipelineRow>(
    `SELECT ${COLUMNS} FROM pipelines WHERE name = ? ORDER BY created_at DESC, id DESC LIMIT 1`,
  );

  return {
    upsert({ name, hash, yamlText }) {
      const existing = idOf.get(name, hash);
      if (existing !== undefined) return existing;
      const info = insert.run(name, hash, yamlText, now());
      if (info.changes === 1) return Number(info.lastInsertRowid);
      // Another process inserted the same pipeline between the two statements.
      const id = idOf.get(name, hash);
      if (id === undefined) throw new Error(`pipeline ${name} (${hash}) vanished`);
      return id;
    },
    get: (id) => byId.get(id),
    latestByName: (name) => latest.get(name),
  };
}
