/**
 * Independent readers of harvest's export files, for round-trip tests: JSON.parse for JSONL,
 * csv-parse for CSV (harvest writes it with Papa Parse), parquet-wasm (the Rust `parquet` crate
 * compiled to WebAssembly) with apache-arrow for Parquet (harvest writes it with hyparquet-writer). Each returns plain rows (timestamps in ms, JSON parsed, null kept) and
 * checks the file's own typing on the way (JSONL value kinds, the CSV header, Parquet types).
 */
import fs from 'node:fs';
import { tableFromIPC } from 'apache-arrow';
import { parse as parseCsv } from 'csv-parse/sync';
import { readParquet as readParquetWasm } from 'parquet-wasm';
import { expect } from 'vitest';
import type { ExportFormat } from '../../src/report/export/formats.ts';
import {
  buildExportQuery,
  type ExportColumn,
  type ExportFilter,
  type Store,
} from '../../src/store/index.ts';

export type Plain = Record<string, unknown>;

/** The store's rows as plain values: timestamps in ms, JSON parsed, null kept. */
export function expected(
  store: Store,
  filter: ExportFilter,
  columns: readonly ExportColumn[],
): Plain[] {
  const rows = [...store.exports.iterate(buildExportQuery(columns, filter))];
  return rows.map((row) =>
    Object.fromEntries(
      columns.map((c, i) => {
        const v = row[i] ?? null;
        return [c.name, c.type === 'json' && v !== null ? JSON.parse(String(v)) : v];
      }),
    ),
  );
}

function fromText(column: ExportColumn, v: unknown): unknown {
  if (v === null || v === '') return null;
  if (column.type === 'timestamp') return Date.parse(String(v));
  if (column.type === 'integer') return Number(v);
  if (column.type === 'json') return JSON.parse(String(v));
  return v;
}

function readJsonl(file: string, columns: readonly ExportColumn[]): Plain[] {
  const text = fs.readFileSync(file, 'utf8');
  if (text === '') return [];
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      const o = JSON.parse(line) as Plain;
      expect(Object.keys(o)).toEqual(columns.map((c) => c.name));
      for (const c of columns) {
        const v = o[c.name];
        if (v === null) continue;
        if (c.type === 'integer') expect(Number.isInteger(v)).toBe(true);
        if (c.type === 'string') expect(typeof v).toBe('string');
        if (c.type === 'timestamp') expect(v).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      }
      return Object.fromEntries(
        columns.map((c) => [c.name, c.type === 'timestamp' ? fromText(c, o[c.name]) : o[c.name]]),
      );
    });
}

function readCsv(file: string, columns: readonly ExportColumn[]): Plain[] {
  const text = fs.readFileSync(file, 'utf8');
  const records = parseCsv(text, { relax_column_count: false }) as string[][];
  expect(records[0]).toEqual(columns.map((c) => c.name));
  expect(text.startsWith(`${columns.map((c) => c.name).join(',')}\r\n`)).toBe(true);
  return records
    .slice(1)
    .map((r) => Object.fromEntries(columns.map((c, i) => [c.name, fromText(c, r[i])])));
}

/** Arrow's names of the types each column must read back as. */
const ARROW_TYPES = {
  string: /^Utf8$/,
  integer: /^Int64$/,
  timestamp: /^Timestamp<MILLISECOND, UTC>$/,
  json: /^Utf8$/,
} as const;

function readParquet(file: string, columns: readonly ExportColumn[]): Plain[] {
  const table = tableFromIPC(readParquetWasm(fs.readFileSync(file)).intoIPCStream());
  expect(table.schema.fields.map((f) => f.name)).toEqual(columns.map((c) => c.name));
  for (const [i, c] of columns.entries()) {
    expect(String(table.schema.fields[i]?.type)).toMatch(ARROW_TYPES[c.type]);
    expect(table.schema.fields[i]?.nullable).toBe(true);
  }
  return table.toArray().map((r: Record<string, unknown>) =>
    Object.fromEntries(
      columns.map((c) => {
        const v = r[c.name];
        if (v === null || v === undefined) return [c.name, null];
        if (c.type === 'integer') return [c.name, Number(v)];
        if (c.type === 'timestamp') return [c.name, Number(v)];
        if (c.type === 'json') return [c.name, JSON.parse(String(v))];
        return [c.name, v];
      }),
    ),
  );
}

export async function readBack(
  format: ExportFormat,
  file: string,
  columns: readonly ExportColumn[],
): Promise<Plain[]> {
  if (format === 'jsonl') return readJsonl(file, columns);
  if (format === 'csv') return readCsv(file, columns);
  return readParquet(file, columns);
}
