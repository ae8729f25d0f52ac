/** The changes of a run as an aligned text table with lists (stdout), as CSV, and as JSON. */
import Papa from 'papaparse';
import { FORMULA_START } from '../export/csv.ts';
import type { ChangeReport, CostPerChange, ListedChange } from './build.ts';

/** Control characters (a page title may carry any), shown as spaces on a terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it replaces.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
/** Text from the web made one plain line for a terminal. */
export const clean = (text: string | null) => (text ?? '').replace(CONTROL, ' ');

const fixed = (n: number | null) => (n === null ? '-' : n.toFixed(2));

const COUNT_COLUMNS = [
  ['results', 'results'],
  ['new', 'new'],
  ['same', 'same'],
  ['changed', 'changed'],
  ['dropped', 'dropped'],
  ['up', 'movedUp'],
  ['down', 'movedDown'],
  ['credits', 'credits'],
] as const;

type CountRow = Record<(typeof COUNT_COLUMNS)[number][1], number> & CostPerChange;

function countTable(report: ChangeReport): string[] {
  const head = ['search', ...COUNT_COLUMNS.map(([h]) => h), 'cr/new', 'cr/changed'];
  const row = (name: string, r: CountRow) => [
    clean(name),
    ...COUNT_COLUMNS.map(([, k]) => String(r[k])),
    fixed(r.creditsPerNew),
    fixed(r.creditsPerChanged),
  ];
  const body = report.searches.map((s) => row(s.label, s));
  const total = row('total', { ...report.totals, credits: report.credits });
  const cells = [head, ...body, total];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(head), rule, ...body.map(line), rule, line(total)];
}

/** `#3 (was #5, ↑2)`: the rank, and where it was. */
export function rankText(r: ListedChange): string {
  if (r.rank === null) return `was #${r.previousRank}`;
  if (r.previousRank === null) return `#${r.rank}`;
  const move =
    r.moved === 0 || r.moved === null ? '' : r.moved > 0 ? `, ↑${r.moved}` : `, ↓${-r.moved}`;
  return `#${r.rank} (was #${r.previousRank}${move})`;
}

const LISTS = [
  ['new', (r: ListedChange) => r.status === 'new'],
  ['changed', (r: ListedChange) => r.status === 'changed'],
  ['dropped', (r: ListedChange) => r.status === 'dropped'],
  ['moved', (r: ListedChange) => r.status === 'same' && r.moved !== 0],
] as const;

function lists(report: ChangeReport): string[] {
  const lines: string[] = [];
  for (const [name, member] of LISTS) {
    const rows = report.results.filter(member);
    if (rows.length === 0) continue;
    lines.push('', `${name} (${rows.length})`);
    for (const r of rows) {
      lines.push(`  [${clean(r.search)}] ${rankText(r)}  ${clean(r.title)}  ${clean(r.url)}`);
      if (r.diff !== undefined)
        lines.push(
          ...r.diff
            .trimEnd()
            .split('\n')
            .map((l) => `    ${l}`),
        );
    }
  }
  return lines;
}

export function renderTable(report: ChangeReport): string {
  const { run, baseline, totals } = report;
  const since = baseline
    ? `since run ${baseline.id} (${baseline.status}, ${baseline.createdAt})`
    : 'the first finished run of its pipeline: every result is new';
  const notes: string[] = [];
  if (report.unknownCostCalls > 0) {
    notes.push(`note: ${report.unknownCostCalls} call(s) of unknown cost are not in the credits`);
  }
  return `${[
    `changes in run ${run.id} (${run.pipeline}, ${run.status}, ${run.createdAt}), ${since}`,
    `credits ${report.credits} · per new result ${fixed(totals.creditsPerNew)} · per changed result ${fixed(totals.creditsPerChanged)}`,
    '',
    ...countTable(report),
    ...notes,
    ...lists(report),
  ].join('\n')}\n`;
}

const CSV_COLUMNS = [
  'run_id',
  'baseline_run_id',
  'search',
  'search_key',
  'source',
  'status',
  'rank',
  'previous_rank',
  'moved',
  'url',
  'title',
  'content_hash',
  'previous_hash',
] as const;

/** One line per listed result; a cell a spreadsheet would run as a formula gets a leading `'`. */
export function renderCsv(report: ChangeReport, { csvRaw = false } = {}): string {
  const data = [
    [...CSV_COLUMNS],
    ...report.results.map((r) => [
      report.run.id,
      report.baseline?.id ?? '',
      r.search,
      r.searchKey,
      r.source,
      r.status,
      r.rank,
      r.previousRank,
      r.moved,
      r.url,
      r.title,
      r.contentHash,
      r.previousHash,
    ]),
  ];
  const escapeFormulae = csvRaw ? false : FORMULA_START;
  return `${Papa.unparse(data, { newline: '\r\n', escapeFormulae })}\r\n`;
}

export function renderJson(report: ChangeReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
