/**
 * The schema version that stores scraped content once (./contents.ts), and the conversion of
 * the result rows written before it: each row's item is split as the writer splits it now, its
 * content moved to `contents` (once per distinct value), its old content columns emptied. Runs
 * inside `openStore`'s migration transaction, so a half-converted database never exists.
 *
 * The old columns (`markdown`, `html`, `raw_html`, `links_json`, `metadata_json`) are emptied
 * here, guarded by triggers, and dropped with the triggers by migration 16: a harvest of a
 * previous version still running against the file (a pool started before the upgrade) has its
 * writes of results refused, so its records stay queued until it is restarted.
 */
import type { Database } from 'better-sqlite3';
import { CONTENT_COLUMNS, createContentWriter } from './contents.ts';
import { resultColumns } from './results.ts';

const OLD_LAYOUT = `NEW.markdown IS NOT NULL OR NEW.html IS NOT NULL OR NEW.raw_html IS NOT NULL
    OR NEW.links_json IS NOT NULL OR NEW.metadata_json IS NOT NULL`;
const REFUSAL =
  'this database stores scraped content once, in contents: a harvest of an older version is ' +
  'writing to it; stop that worker and start the current harvest';

export const CONTENTS_MIGRATION = `
  CREATE TABLE contents (
    hash  BLOB    PRIMARY KEY,
    codec INTEGER NOT NULL,
    size  INTEGER NOT NULL,
    data  BLOB    NOT NULL
  );
  ${Object.values(CONTENT_COLUMNS)
    .map((column) => `ALTER TABLE results ADD COLUMN ${column} BLOB;`)
    .join('\n  ')}

  CREATE TRIGGER results_old_layout_insert BEFORE INSERT ON results
  WHEN ${OLD_LAYOUT} BEGIN
    SELECT RAISE(ABORT, '${REFUSAL}');
  END;
  CREATE TRIGGER results_old_layout_update
  BEFORE UPDATE OF markdown, html, raw_html, links_json, metadata_json ON results
  WHEN ${OLD_LAYOUT} BEGIN
    SELECT RAISE(ABORT, '${REFUSAL}');
  END;
`;

/** Told while converting, and once with what it saved. */
export type ConversionNote = (line: string) => void;

/** Rows read at a time: an item holds all its content, up to megabytes each. */
const BATCH_ROWS = 100;
const NOTE_EVERY_MS = 2000;

interface OldRow {
  id: number;
  item: string;
  bytes: number;
}

/** Converts every result row to the contents layout; says how far it is, then what it saved. */
export function convertContents(db: Database, note: ConversionNote): void {
  const total = db.prepare<[], number>('SELECT COUNT(*) FROM results').pluck().get() ?? 0;
  if (total === 0) return;
  const page = db.prepare<[number, number], OldRow>(
    `SELECT rowid AS id, item_json AS item,
       length(CAST(item_json AS BLOB)) + IFNULL(length(CAST(markdown AS BLOB)), 0)
       + IFNULL(length(CAST(html AS BLOB)), 0) + IFNULL(length(CAST(raw_html AS BLOB)), 0)
       + IFNULL(length(CAST(links_json AS BLOB)), 0)
       + IFNULL(length(CAST(metadata_json AS BLOB)), 0) AS bytes
     FROM results WHERE rowid > ? ORDER BY rowid LIMIT ?`,
  );
  const hashes = Object.values(CONTENT_COLUMNS);
  const updated = [...hashes, 'changeHash'];
  const update = db.prepare(
    `UPDATE results SET markdown = NULL, html = NULL, raw_html = NULL, links_json = NULL,
       metadata_json = NULL, item_json = @itemJson, change_hash = @changeHash,
       ${hashes.map((c) => `${c} = @${c}`).join(', ')}
     WHERE rowid = @id`,
  );
  const contentBytes = db
    .prepare<[], number>('SELECT IFNULL(SUM(length(data)), 0) FROM contents')
    .pluck();
  const writer = createContentWriter(db);
  const contentsBefore = contentBytes.get() ?? 0;
  let before = 0;
  let itemsAfter = 0;
  let done = 0;
  let lastId = 0;
  let notedAt = performance.now();
  for (;;) {
    const rows = page.all(lastId, BATCH_ROWS);
    if (rows.length === 0) break;
    for (const row of rows) {
      const item = JSON.parse(row.item) as Record<string, unknown>;
      const columns = resultColumns(item, writer);
      const itemJson = columns.itemJson as string;
      update.run({
        id: row.id,
        itemJson,
        ...Object.fromEntries(updated.map((c) => [c, columns[c]])),
      });
      before += row.bytes;
      itemsAfter += Buffer.byteLength(itemJson);
      lastId = row.id;
    }
    done += rows.length;
    if (performance.now() - notedAt >= NOTE_EVERY_MS) {
      notedAt = performance.now();
      note(
        `storing content once: ${done.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} results`,
      );
    }
  }
  const after = itemsAfter + (contentBytes.get() ?? 0) - contentsBefore;
  note(savedLine(total, before, after));
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** What the conversion saved, in one line. */
export function savedLine(rows: number, before: number, after: number): string {
  const ratio = before > 0 ? after / before : 1;
  return (
    `stored the content of ${rows.toLocaleString('en-US')} results once, compressed: ` +
    `${mb(before)} → ${mb(after)} (${(ratio * 100).toFixed(0)}%, ${mb(before - after)} saved; ` +
    'the file keeps its size and reuses the freed pages, `VACUUM` returns them to the disk)'
  );
}
