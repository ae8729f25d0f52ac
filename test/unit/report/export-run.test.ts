/** runExport's checks and its all-or-nothing output. */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import Sqlite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { parseSince } from '../../../src/cli/flags.ts';
import { createParquetEncoder } from '../../../src/report/export/parquet.ts';
import { type ExportOptions, runExport } from '../../../src/report/export/run-export.ts';
import { type PageBounds, RESULT_COLUMNS, type Store } from '../../../src/store/index.ts';
import { textSink } from '../../helpers/text-sink.ts';
import { resultsEvent, seedRun, useTempStores, webItem } from '../store/helpers.ts';

const T0 = Date.UTC(2025, 0, 2, 9);

describe('runExport', () => {
  const stores = useTempStores();

  function seeded(): Store {
    const store = stores.open({ now: () => T0 });
    const { runId } = seedRun(store, { runId: 'run-1', pipeline: 'news-watch', taskCount: 1 });
    store.applyEvents([resultsEvent(runId, 't0', [webItem(1), webItem(2), webItem(3)])]);
    return store;
  }

  async function rejects(store: Store, options: Partial<ExportOptions>, dir?: string) {
    const error = await runExport(
      store,
      { format: 'jsonl', ...options },
      { stdout: textSink() },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (dir) expect(fs.readdirSync(dir)).toEqual([]);
    return error as { code: string; exitCode: number; message: string } | undefined;
  }

  it('refuses unknown runs, pipelines and fields with exit 2, and writes no file', async () => {
    const store = seeded();
    const dir = stores.dir();
    const out = path.join(dir, 'x.jsonl');
    expect(await rejects(store, { runId: 'nope', out }, dir)).toMatchObject({
      code: 'RUN_NOT_FOUND',
      exitCode: 2,
    });
    expect(await rejects(store, { pipelineName: 'nope', out }, dir)).toMatchObject({
      code: 'PIPELINE_NOT_FOUND',
      exitCode: 2,
    });
    const field = await rejects(store, { fields: ['url', 'titel'], out }, dir);
    expect(field).toMatchObject({ code: 'USAGE', exitCode: 2 });
    expect(field?.message).toContain(
      'unknown field "titel" for --of results; did you mean "title"?',
    );
    expect(await rejects(store, { onlyNew: true, sinceRunId: 'nope', out }, dir)).toMatchObject({
      code: 'RUN_NOT_FOUND',
      exitCode: 2,
    });
  });

  it('refuses --fields that names no column (`--fields ""`), rather than writing them all', async () => {
    const store = seeded();
    const dir = stores.dir();
    const empty = await rejects(store, { fields: [], out: path.join(dir, 'x.csv') }, dir);
    expect(empty).toMatchObject({ code: 'USAGE', exitCode: 2 });
    expect(empty?.message).toMatch(
      /^--fields names no column: list at least one.*\(fields: run_id, /,
    );
  });

  it('refuses flags that do not fit together', async () => {
    const store = seeded();
    const cases: [Partial<ExportOptions>, string][] = [
      [{ runId: 'run-1', pipelineName: 'news-watch' }, '--run and --pipeline cannot be combined'],
      [{ sinceRunId: 'run-1' }, '--since-run goes with --only-new'],
      [{ of: 'calls', source: 'web' }, '--source applies to --of results only'],
      [{ of: 'tasks', onlyNew: true, uniqueUrls: true }, '--only-new, --unique-urls applies'],
    ];
    for (const [options, message] of cases) {
      const error = await rejects(store, options);
      expect(error).toMatchObject({ exitCode: 2 });
      expect(error?.message).toContain(message);
    }
    const empty = stores.open();
    expect(await rejects(empty, { onlyNew: true })).toMatchObject({
      code: 'RUN_NOT_FOUND',
      message: expect.stringContaining('--only-new: no runs'),
    });
  });

  it('refuses an output path that cannot be written, before any work, with exit 2', async () => {
    const store = seeded();
    const dir = stores.dir();
    const missing = await rejects(store, { out: path.join(dir, 'no', 'such', 'x.csv') }, dir);
    expect(missing).toMatchObject({ code: 'OUTPUT_UNWRITABLE', exitCode: 2 });
    expect(missing?.message).toContain('its folder does not exist');
    fs.mkdirSync(path.join(dir, 'folder'));
    expect(await rejects(store, { out: path.join(dir, 'folder') })).toMatchObject({
      code: 'OUTPUT_UNWRITABLE',
      message: expect.stringContaining('it is a folder'),
    });
    expect(fs.readdirSync(dir)).toEqual(['folder']);
  });

  it('leaves no partial file (and keeps an older one) when the export fails half way', async () => {
    const store = seeded();
    const dir = stores.dir();
    const out = path.join(dir, 'results.jsonl');
    fs.writeFileSync(out, 'the previous export\n');
    const failing: Store = {
      ...store,
      exports: {
        ...store.exports,
        *iterate(query) {
          let n = 0;
          for (const row of store.exports.iterate(query)) {
            if (++n === 3) throw new Error('database disk image is malformed');
            yield row;
          }
        },
      },
    };
    await expect(
      runExport(failing, { format: 'jsonl', out, batchRows: 1 }, { stdout: textSink() }),
    ).rejects.toThrow('malformed');
    expect(fs.readdirSync(dir)).toEqual(['results.jsonl']);
    expect(fs.readFileSync(out, 'utf8')).toBe('the previous export\n');
  });

  it('streams to stdout and reports progress', async () => {
    const store = seeded();
    const out = textSink();
    const seen: string[] = [];
    const summary = await runExport(
      store,
      { format: 'csv', fields: ['position', 'url'], batchRows: 2 },
      {
        stdout: out,
        progress: {
          start: (total) => seen.push(`start ${total}`),
          update: (rows) => seen.push(`${rows}`),
          stop: () => seen.push('stop'),
        },
      },
    );
    expect(summary).toMatchObject({
      rows: 3,
      out: null,
      truncated: false,
      columns: ['position', 'url'],
    });
    expect(out.text()).toBe(
      'position,url\r\n0,https://example.com/page-1\r\n1,https://example.com/page-2\r\n2,https://example.com/page-3\r\n',
    );
    expect(seen).toEqual(['start 3', '2', '3', 'stop']);
  });

  it('stops quietly when the reader of stdout goes away', async () => {
    const store = seeded();
    const closed = new Writable({
      write(_chunk, _enc, done) {
        done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
      },
    });
    const summary = await runExport(store, { format: 'jsonl', batchRows: 1 }, { stdout: closed });
    expect(summary.truncated).toBe(true);
    expect(summary.rows).toBeLessThan(3);
  });
});

describe('parquet row groups', () => {
  it('splits rows into row groups of the given size', () => {
    const columns = RESULT_COLUMNS.filter((c) => c.name === 'position' || c.name === 'url');
    const encoder = createParquetEncoder(columns, { rowGroupRows: 2 });
    const chunks = [
      ...encoder.encode([
        [0, 'a'],
        [1, 'b'],
        [2, null],
      ]),
      ...encoder.finish(),
    ] as Uint8Array[];
    const bytes = Buffer.concat(chunks);
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1');
    expect(bytes.subarray(-4).toString()).toBe('PAR1');
    // Two row groups were written before the footer: the first as soon as it was full.
    expect(chunks.length).toBeGreaterThanOrEqual(2);
  });

  it('writes text given as UTF-8 bytes (long text read as a BLOB) as it writes the string', () => {
    const columns = RESULT_COLUMNS.filter((c) =>
      ['position', 'markdown', 'metadata'].includes(c.name),
    );
    const rows = [
      [0, 'plain', '{"a":1}'],
      [1, `café ${'€'.repeat(3)}\nline "two"`, null],
      [2, null, '{"title":"naïve"}'],
      [3, '', '[]'],
    ];
    const encode = (asBytes: boolean) => {
      const encoder = createParquetEncoder(columns, { rowGroupRows: 3 });
      const input = rows.map((row) =>
        row.map((v, j) => (asBytes && j > 0 && typeof v === 'string' ? Buffer.from(v) : v)),
      ) as (string | number | null)[][];
      return Buffer.concat([...encoder.encode(input), ...encoder.finish()] as Uint8Array[]);
    };
    expect(encode(true).equals(encode(false))).toBe(true);
  });
});

describe('--since', () => {
  it('reads dates as UTC and refuses anything else', () => {
    expect(parseSince('2025-01-02')).toBe(Date.UTC(2025, 0, 2));
    expect(parseSince('2025-01-02T10:30')).toBe(Date.UTC(2025, 0, 2, 10, 30));
    expect(parseSince('2025-01-02T10:30:00+02:00')).toBe(Date.UTC(2025, 0, 2, 8, 30));
    expect(() => parseSince('yesterday')).toThrow('expected YYYY-MM-DD');
    expect(() => parseSince('2025-02-30')).toThrow();
  });
});

describe('reader threads', () => {
  const stores = useTempStores();

  /** Two runs of 7 tasks, 9 results each (web and news), with text that needs escaping. */
  function seededLarge(): Store {
    const store = stores.open({ now: () => T0 });
    for (const runId of ['run-a', 'run-b']) {
      const { keys } = seedRun(store, { runId, pipeline: 'news-watch', taskCount: 7 });
      for (const [t, key] of keys.entries()) {
        const web = Array.from({ length: 6 }, (_, i) =>
          webItem(runId === 'run-a' ? t * 10 + i : t * 10 + i + 3, {
            title: `Page "${i}", line\nbreak, café ${'€'.repeat(i)}`,
          }),
        );
        const news = Array.from({ length: 3 }, (_, i) => ({
          ...webItem(100 + t * 10 + i),
          snippet: ` news ${i} `,
          date: '2 days ago',
        }));
        const newsEvent = resultsEvent(runId, key, []);
        newsEvent.items = news.map((item, position) => ({ source: 'news', position, item }));
        store.applyEvents([resultsEvent(runId, key, web), newsEvent]);
      }
    }
    return store;
  }

  /**
   * `store`, counting the pages read on this thread (the reader threads read their own) and the
   * exports read here whole.
   */
  function countingPages(store: Store): Store & { pagesRead: number; scans: number } {
    const counting = {
      ...store,
      pagesRead: 0,
      scans: 0,
      exports: {
        ...store.exports,
        iteratePage(query: Parameters<Store['exports']['iteratePage']>[0], bounds: PageBounds) {
          counting.pagesRead++;
          return store.exports.iteratePage(query, bounds);
        },
        iterate(query: Parameters<Store['exports']['iterate']>[0]) {
          counting.scans++;
          return store.exports.iterate(query);
        },
      },
    };
    return counting;
  }

  it('write the same bytes as one thread, in order, whatever the filter', async () => {
    const store = seededLarge();
    const counting = countingPages(store);
    const dir = stores.dir();
    // Each export starts its own reader threads (about a second each from the sources).
    const cases: Partial<ExportOptions>[] = [
      { format: 'jsonl' },
      { format: 'csv' },
      { format: 'jsonl', runId: 'run-b' },
      { format: 'jsonl', pipelineName: 'news-watch', source: 'news' },
      { format: 'jsonl', onlyNew: true },
      { format: 'csv', fields: ['url', 'position', 'fetched_at', 'first_seen_at'] },
    ];
    for (const [i, options] of cases.entries()) {
      const one = path.join(dir, `one-${i}`);
      const paged = path.join(dir, `paged-${i}`);
      const a = await runExport(
        store,
        { format: 'jsonl', ...options, out: one, readerThreads: 0 },
        { stdout: textSink() },
      );
      const b = await runExport(
        counting,
        {
          format: 'jsonl',
          ...options,
          out: paged,
          readerThreads: 2,
          firstPageRows: 7,
          pageRows: 5,
        },
        { stdout: textSink() },
      );
      expect(b.rows).toBe(a.rows);
      expect(a.rows, JSON.stringify(options)).toBeGreaterThan(7);
      expect(fs.readFileSync(paged, 'utf8')).toBe(fs.readFileSync(one, 'utf8'));
    }
    // Only the first page of each export is read on this thread.
    expect(counting.pagesRead).toBe(cases.length);
  }, 60_000);

  /**
   * Overwrites the results table's last leaf page (the last rows in export order) with bytes no
   * page has: a connection that reads those rows fails with SQLITE_CORRUPT. Returns the store
   * opened again; its first rows still read.
   */
  function corruptLastRows(store: Store): Store {
    store.close(); // The last connection checkpoints the WAL: every row is in the file.
    const db = new Sqlite(store.path, { readonly: true });
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const last = db
      .prepare<[], number>(
        "SELECT max(pageno) FROM dbstat WHERE name = 'results' AND pagetype = 'leaf'",
      )
      .pluck()
      .get()!;
    db.close();
    const fd = fs.openSync(store.path, 'r+');
    fs.writeSync(fd, Buffer.alloc(pageSize, 0xff), 0, pageSize, (last - 1) * pageSize);
    fs.closeSync(fd);
    return stores.reopen(store);
  }

  it('fail the export when a reader thread fails: its error, no partial file, the older file kept', async () => {
    const counting = countingPages(corruptLastRows(seededLarge()));
    const dir = stores.dir();
    const out = path.join(dir, 'results.csv');
    fs.writeFileSync(out, 'the previous export\r\n');
    await expect(
      runExport(
        counting,
        { format: 'csv', out, readerThreads: 2, firstPageRows: 7, pageRows: 5 },
        { stdout: textSink() },
      ),
    ).rejects.toThrow('database disk image is malformed');
    // This thread read only the first page: the error came from a reader thread.
    expect(counting.pagesRead).toBe(1);
    expect(fs.readdirSync(dir)).toEqual(['results.csv']);
    expect(fs.readFileSync(out, 'utf8')).toBe('the previous export\r\n');
  }, 30_000);

  it('read Parquet pages on a reader thread into the same file as one thread, long text too', async () => {
    const store = seededLarge();
    // A result with a long markdown (read as a BLOB, never a string on the reader's heap).
    const { keys } = seedRun(store, { runId: 'run-c', pipeline: 'news-watch', taskCount: 1 });
    const long = `# Long\n${'Grüße, "quoted", line\n'.repeat(50_000)}`;
    store.applyEvents([resultsEvent('run-c', keys[0]!, [webItem(900, { markdown: long })])]);
    const counting = countingPages(store);
    const dir = stores.dir();
    const files: Buffer[] = [];
    for (const paged of [false, true]) {
      const out = path.join(dir, `${paged}.parquet`);
      const summary = await runExport(
        paged ? counting : store,
        {
          format: 'parquet',
          out,
          rowGroupRows: 10,
          ...(paged ? { readerThreads: 2, firstPageRows: 7 } : { readerThreads: 0 }),
        },
        { stdout: textSink() },
      );
      expect(summary.rows).toBe(2 * 7 * 9 + 1);
      files.push(fs.readFileSync(out));
    }
    // Every page was read on the reader thread.
    expect(counting.pagesRead).toBe(0);
    expect(counting.scans).toBe(0);
    expect(files[1]!.equals(files[0]!)).toBe(true);
    expect(files[1]!.includes(Buffer.from(long.slice(0, 2000)))).toBe(false); // compressed

    // To stdout, as a pipe takes it (at once, copied): the written buffers are filled again.
    const taken: Buffer[] = [];
    const stdout = Object.assign(
      new Writable({
        write(chunk: Buffer, _enc, done) {
          taken.push(Buffer.from(chunk));
          done();
        },
      }),
      { fd: 1 },
    );
    await runExport(
      counting,
      { format: 'parquet', rowGroupRows: 10, readerThreads: 2, firstPageRows: 7 },
      { stdout },
    );
    expect(Buffer.concat(taken).equals(files[0]!)).toBe(true);
  }, 30_000);

  it('fail a Parquet export when its reader thread fails, leaving no partial file', async () => {
    const counting = countingPages(corruptLastRows(seededLarge()));
    const dir = stores.dir();
    const out = path.join(dir, 'results.parquet');
    await expect(
      runExport(
        counting,
        { format: 'parquet', out, readerThreads: 1, firstPageRows: 7, rowGroupRows: 10 },
        { stdout: textSink() },
      ),
    ).rejects.toThrow('database disk image is malformed');
    expect(counting.pagesRead).toBe(0);
    expect(fs.readdirSync(dir)).toEqual([]);
  }, 30_000);

  it('encode Parquet row groups on a thread of their own into the same file', async () => {
    const store = seededLarge();
    const dir = stores.dir();
    const files: Buffer[] = [];
    for (const parquetThread of [false, true]) {
      const out = path.join(dir, `${parquetThread}.parquet`);
      const summary = await runExport(
        store,
        { format: 'parquet', out, parquetThread, rowGroupRows: 10 },
        { stdout: textSink() },
      );
      expect(summary.rows).toBe(2 * 7 * 9);
      files.push(fs.readFileSync(out));
    }
    expect(files[1]!.equals(files[0]!)).toBe(true);
  }, 30_000);
});
