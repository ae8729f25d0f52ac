/**
 * A read-only connection for an export's reader threads (src/report/export/page-worker.ts):
 * the export reader alone, without the rest of the store. A thread that opened the whole store
 * would load every table's module and event schema it never uses, some MB of heap per thread.
 * The calling process has opened the store already, so the schema is known to be current.
 */
import Sqlite from 'better-sqlite3';
import { registerContentFunctions } from '../contents.ts';
import { createExportReader, type ExportReader } from './export.ts';

export interface ExportConnection {
  exports: ExportReader;
  close(): void;
}

export function openExportConnection(file: string, busyTimeoutMs = 5000): ExportConnection {
  // `timeout` is SQLite's busy timeout: how long a read waits for a checkpoint's lock.
  const db = new Sqlite(file, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
  registerContentFunctions(db);
  return { exports: createExportReader(db), close: () => db.close() };
}
