/** `harvest changes`: builds the report and writes it in the chosen format. */
import type { Store } from '../../store/index.ts';
import { databaseFiles, openFileOutput } from '../export/file-output.ts';
import { stdoutOutput } from '../export/output.ts';
import { buildChangeReport, type ChangeReport, type ChangeReportOptions } from './build.ts';
import { buildChangeCharts, type ChartOptions } from './charts.ts';
import { renderHtml } from './html.ts';
import { renderCsv, renderJson, renderTable } from './text.ts';

export const CHANGE_FORMATS = ['table', 'json', 'csv', 'html'] as const;
export type ChangeFormat = (typeof CHANGE_FORMATS)[number];

export interface RunChangeReportOptions extends ChangeReportOptions {
  format: ChangeFormat;
  /** Output file (written whole or not at all); stdout when absent. */
  out?: string;
  csvRaw?: boolean;
  /** HTML: the charts' runs and top results. */
  charts?: ChartOptions;
}

/** The report in `format` (recording the runs it needs when they are not). */
export function renderChangeReport(store: Store, options: RunChangeReportOptions): string {
  const report = buildChangeReport(store, options);
  switch (options.format) {
    case 'json':
      return renderJson(report);
    case 'csv':
      return renderCsv(report, { csvRaw: options.csvRaw ?? false });
    case 'html':
      return renderHtml(report, buildChangeCharts(store, report, options.charts));
    default:
      return renderTable(report);
  }
}

export async function runChangeReport(
  store: Store,
  options: RunChangeReportOptions,
  io: { stdout: NodeJS.WritableStream },
): Promise<void> {
  const text = renderChangeReport(store, options);
  const output =
    options.out === undefined
      ? stdoutOutput(io.stdout)
      : await openFileOutput(options.out, databaseFiles(store.path));
  try {
    await output.write(text);
    await output.commit();
  } catch (error) {
    output.abort();
    throw error;
  }
}

export type { ChangeReport };
