/** Temp SQLite stores and event builders for the store tests. */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Sqlite from 'better-sqlite3';
import { afterEach } from 'vitest';
import {
  type CallEvent,
  type OpenStoreOptions,
  openStore,
  type ResultsEvent,
  type Store,
  type TaskEvent,
} from '../../../src/store/index.ts';

/**
 * Returns a function that opens a store on a fresh temp file; every store it opened is closed
 * and its folder deleted after each test.
 */
export function useTempStores(): {
  open(options?: OpenStoreOptions): Store;
  reopen(store: Store, options?: OpenStoreOptions): Store;
  dir(): string;
} {
  const dirs: string[] = [];
  const stores: Store[] = [];
  afterEach(() => {
    for (const s of stores.splice(0)) s.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  const dir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'harvest-store-'));
    dirs.push(d);
    return d;
  };
  const track = (s: Store) => {
    stores.push(s);
    return s;
  };
  return {
    open: (options) => track(openStore(path.join(dir(), 'nested', 'harvest.db'), options)),
    reopen: (store, options) => track(openStore(store.path, options)),
    dir,
  };
}

/** Every row of every harvest table, for comparing whole database states. */
export function dumpTables(file: string): Record<string, unknown[]> {
  const db = new Sqlite(file, { readonly: true });
  try {
    const tables = ['pipelines', 'runs', 'tasks', 'calls', 'results', 'seen_urls'];
    return Object.fromEntries(
      tables.map((t) => [t, db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2, 3`).all()]),
    );
  } finally {
    db.close();
  }
}

/** A pipeline, a running run and `taskCount` tasks named t0, t1, ... */
export function seedRun(
  store: Store,
  options: { runId?: string; pipeline?: string; taskCount?: number; maxCredits?: number } = {},
): { runId: string; pipelineId: number; keys: string[] } {
  const runId = options.runId ?? `run-${randomUUID().slice(0, 8)}`;
  const pipelineId = store.pipelines.upsert({
    name: options.pipeline ?? 'news-watch',
    hash: 'h1',
    yamlText: 'name: news-watch\n',
  });
  const taskCount = options.taskCount ?? 3;
  const keys = Array.from({ length: taskCount }, (_, i) => `t${i}`);
  store.runs.create({
    id: runId,
    pipelineId,
    trigger: 'manual',
    maxCredits: options.maxCredits ?? null,
    taskCount,
  });
  store.tasks.insertMany(
    runId,
    keys.map((key) => ({ key, request: { query: `q ${key}`, limit: 2 } })),
  );
  store.runs.setStatus(runId, 'running');
  return { runId, pipelineId, keys };
}

export function callEvent(
  runId: string,
  taskKey: string,
  over: Partial<CallEvent> = {},
): CallEvent {
  return {
    type: 'call',
    callId: randomUUID(),
    runId,
    taskKey,
    attempt: 1,
    startedAt: Date.UTC(2025, 0, 2, 10),
    durationMs: 120.4,
    status: 200,
    outcome: 'ok',
    searchId: 'search-1',
    creditsUsed: 2,
    ...over,
  };
}

export function webItem(n: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    url: `https://example.com/page-${n}`,
    title: `Page ${n}`,
    description: `About page ${n}`,
    ...over,
  };
}

export function resultsEvent(
  runId: string,
  taskKey: string,
  items: Record<string, unknown>[],
  over: Partial<ResultsEvent> = {},
): ResultsEvent {
  return {
    type: 'results',
    runId,
    taskKey,
    callId: randomUUID(),
    searchId: 'search-1',
    fetchedAt: Date.UTC(2025, 0, 2, 10, 0, 1),
    items: items.map((item, position) => ({ source: 'web' as const, position, item })),
    ...over,
  };
}

export function taskEvent(
  runId: string,
  taskKey: string,
  status: TaskEvent['status'],
  at: number,
  over: Partial<TaskEvent> = {},
): TaskEvent {
  return { type: 'task', runId, taskKey, status, attempts: 1, at, ...over };
}

/**
 * Makes the database refuse (abort the transaction of) any call of `taskKey`, as a broken file
 * or a full disk would, through a connection of its own.
 */
export function refuseCallsOf(file: string, taskKey: string): void {
  const db = new Sqlite(file);
  db.exec(
    `CREATE TRIGGER refuse BEFORE INSERT ON calls WHEN NEW.task_key = '${taskKey}'
     BEGIN SELECT RAISE(ABORT, 'refused'); END`,
  );
  db.close();
}
