/** `harvest report costs`: builds the report and writes it in the chosen format. */
import type { Store } from '../../store/index.ts';
import { databaseFiles, openFileOutput } from '../export/file-output.ts';
import { stdoutOutput } from '../export/output.ts';
import { buildCostReport, type CostReport, type CostReportOptions } from './build.ts';
import { buildCostCharts, type CostCharts } from './charts.ts';
import { renderHtml } from './html.ts';
import { renderCsv, renderJson, renderTable } from './text.ts';

export const COST_FORMATS = ['table', 'json', 'csv', 'html'] as const;
export type CostFormat = (typeof COST_FORMATS)[number];

export interface RunCostReportOptions extends CostReportOptions {
  format: CostFormat;
  /** Output file (written whole or not at all); stdout when absent. */
  out?: string;
  /** CSV: text cells as they are, even those a spreadsheet would run as a formula. */
  csvRaw?: boolean;
}

/** A report and, for HTML, its charts. */
export interface CostReportData {
  report: CostReport;
  charts: CostCharts | undefined;
}

/**
 * The report and, for HTML, its charts, from one read transaction: the charts add up to the
 * table although a run writes meanwhile.
 */
export function costReportData(
  store: Store,
  options: CostReportOptions & { format: CostFormat },
): CostReportData {
  return store.snapshot(() => {
    const report = buildCostReport(store, options);
    const charts =
      options.format === 'html'
        ? buildCostCharts(store, {
            runId: report.filters.runId ?? undefined,
            sinceMs: report.filters.since === null ? undefined : Date.parse(report.filters.since),
          })
        : undefined;
    return { report, charts };
  });
}

export function renderCostReport(
  { report, charts }: CostReportData,
  format: CostFormat,
  { csvRaw = false }: { csvRaw?: boolean | undefined } = {},
): string {
  if (format === 'json') return renderJson(report);
  if (format === 'csv') return renderCsv(report, { csvRaw });
  if (format === 'html' && charts) return renderHtml(report, charts);
  return `${renderTable(report)}\n`;
}

export async function runCostReport(
  store: Store,
  options: RunCostReportOptions,
  io: { stdout: NodeJS.WritableStream },
): Promise<CostReport> {
  const data = costReportData(store, options);
  const output =
    options.out === undefined
      ? stdoutOutput(io.stdout)
      : await openFileOutput(options.out, databaseFiles(store.path));
  try {
    await output.write(renderCostReport(data, options.format, options));
    await output.commit();
  } catch (error) {
    output.abort();
    throw error;
  }
  return data.report;
}
