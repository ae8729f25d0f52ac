/** Cost reports as an aligned text table (stdout), as CSV, and as JSON. */
import Papa from 'papaparse';
import { FORMULA_START } from '../export/csv.ts';
import type { CostReport } from './build.ts';
import { anomalyNote, costColumns, creditsText, csvExtras } from './columns.ts';

export function renderTable(report: CostReport): string {
  const columns = costColumns(report);
  const body = [...report.rows, report.totals];
  const cells = [columns.map((c) => c.heading), ...body.map((r) => columns.map((c) => c.text(r)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (columns[i]!.numeric ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const lines = [line(cells[0]!), rule, ...cells.slice(1, -1).map(line), rule, line(cells.at(-1)!)];
  const t = report.totals;
  const notes: string[] = [];
  if (report.rows.length === 0) notes.push('no calls recorded for this selection');
  if (t.unknownCostCalls > 0) {
    notes.push(
      `${t.unknownCostCalls} call(s) of unknown cost (${t.lostCalls} LOST with their worker): not counted in credits, not guessed`,
    );
  }
  const anomalies = anomalyNote(t);
  if (anomalies) notes.push(anomalies);
  const scope = [
    report.filters.runId ? `run ${report.filters.runId}` : 'all runs',
    report.filters.since ? `since ${report.filters.since}` : null,
  ]
    .filter(Boolean)
    .join(', ');
  return [
    `credits by ${report.by} (${scope}): ${creditsText(t)} over ${t.calls} calls`,
    '',
    ...lines,
    ...notes.map((n) => `note: ${n}`),
  ].join('\n');
}

/** CSV; a text cell a spreadsheet would run as a formula gets a leading `'`, unless `csvRaw`. */
export function renderCsv(report: CostReport, { csvRaw = false } = {}): string {
  const columns = [...costColumns(report), ...csvExtras(report)];
  const data = [
    columns.map((c) => c.name),
    ...report.rows.map((r) => columns.map((c) => c.value(r))),
  ];
  const escapeFormulae = csvRaw ? false : FORMULA_START;
  return `${Papa.unparse(data, { newline: '\r\n', escapeFormulae })}\r\n`;
}

export function renderJson(report: CostReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
