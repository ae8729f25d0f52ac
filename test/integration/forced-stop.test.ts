/**
 * A forced stop (a second Ctrl-C) records its calls in flight as LOST at once, and says how
 * many are lost as `harvest status` counts them: an answer that arrives while the pool stops
 * is recorded, replaces its LOST record, and is not counted lost. No call of the pool is left
 * in the journal for a later worker to find. Real Redis, the sandbox behind a loopback server
 * that holds its answers until the test lets them go, a temp SQLite file.
 */
import type { ServerResponse } from 'node:http';
import Sqlite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalPool } from '../../jobs/local.ts';
import { startRun } from '../../src/run/start.ts';
import { runCli } from '../helpers/cli.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { type MediaHost, startMediaHost } from '../helpers/media-host.ts';
import { waitFor } from '../helpers/wait.ts';

let h: Harness | undefined;
let api: MediaHost | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
  await h?.stop();
  h = undefined;
}, 60_000);

interface Held {
  body: string;
  auth: string;
  res: ServerResponse;
  /** Set once the client has read the answer and closed the connection. */
  read: boolean;
}

/** Searches wait here until `answer` sends them on to the sandbox and back. */
async function holdingApi(sandboxUrl: string) {
  const held: Held[] = [];
  const server = await startMediaHost('127.0.0.1', (req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += String(chunk);
    });
    req.on('end', () => {
      const entry = { body, auth: req.headers.authorization ?? '', res, read: false };
      res.socket?.once('close', () => {
        entry.read = true;
      });
      held.push(entry);
    });
  });
  return {
    server,
    held,
    /** Answers the first held search with the sandbox's answer; resolves once it was read. */
    async answer(): Promise<void> {
      const entry = held[0] as Held;
      const r = await fetch(`${sandboxUrl}/v2/search`, {
        method: 'POST',
        headers: { authorization: entry.auth, 'content-type': 'application/json' },
        body: entry.body,
      });
      const text = await r.text();
      entry.res.writeHead(r.status, { 'content-type': 'application/json', connection: 'close' });
      entry.res.end(text);
      await waitFor('the answer read by the worker', () => entry.read);
    },
  };
}

const PIPELINE = `name: forced
searches:
  - query: "forced {n}"
    limit: 1
    matrix:
      n: [1, 2, 3, 4, 5, 6]
`;

/** The `lost` of the pool's line saying how many calls it recorded as lost. */
function loggedLost(logs: string): number[] {
  return logs
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg?: string; lost?: number })
    .filter((line) => line.msg === 'calls in flight recorded as lost')
    .map((line) => line.lost ?? -1);
}

describe('a forced stop', () => {
  it('says as many calls lost as status shows, and leaves none of its calls in the journal', async () => {
    h = await startHarness();
    const proxy = await holdingApi(h.sandbox.url);
    api = proxy.server;
    const { runId } = await startRun(h.runtime, h.writePipeline('forced', PIPELINE), {
      logger: h.logger,
    });
    // Not the harness's pool: a forced pool is not closed again afterwards.
    const pool = await startLocalPool(
      { ...h.settings, apiUrl: proxy.server.url },
      { roles: ['search', 'store'], concurrency: 4, store: h.runtime.store, logger: h.logger },
    );
    await waitFor('4 searches held', () => proxy.held.length, { until: (n) => n === 4 });

    // The database is busy: the answer let go now and the LOST records both wait for it, as
    // a commit that takes a while does.
    const lock = new Sqlite(h.settings.dbPath);
    lock.exec('BEGIN IMMEDIATE');
    let forced: Promise<void>;
    try {
      await proxy.answer();
      forced = pool.forceClose('stopped by the test');
      await waitFor('the calls in flight being recorded as lost', () =>
        h?.logs().includes('recording the calls in flight as lost'),
      );
    } finally {
      lock.exec('COMMIT');
      lock.close();
    }
    await forced;

    const report = h.runtime.store.runStatus(runId);
    // The answered call is recorded with its answer; the three others are lost.
    expect(report?.errors.callsByCode).toEqual({ LOST: 3 });
    expect(report?.calls.byOutcome.ok).toBe(1);
    expect(loggedLost(h.logs())).toEqual([3]);
    const status = await runCli(['status', runId], h.settings);
    expect(status.stdout).toContain('  errors   LOST 3');
    // Nothing of the pool's is left for a later worker to record.
    const journal = await h.runtime.redis.hvals(h.runtime.keys.inflight);
    expect(journal.filter((raw) => raw.includes(pool.workerId))).toEqual([]);
  }, 60_000);
});
