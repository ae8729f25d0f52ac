/** `harvest history`: a URL's, or a query's top results', positions and content over runs. */
import { UsageError } from '../../errors.ts';
import type { HistoryPoint, Store } from '../../store/index.ts';
import { clean } from './text.ts';

export interface HistoryOptions {
  url?: string;
  query?: string;
  pipelineName?: string;
  /** With `query`: the top results per run (default 10). */
  top?: number;
}

/** The points, oldest run first; the runs they come from recorded first when they are not. */
export function buildHistory(store: Store, options: HistoryOptions): HistoryPoint[] {
  if ((options.url === undefined) === (options.query === undefined)) {
    throw new UsageError('give --url URL or --query TEXT (one of them)');
  }
  const read = () =>
    options.url !== undefined
      ? store.changes.byUrl(options.url, { pipelineName: options.pipelineName })
      : store.changes.byQuery(options.query!, {
          pipelineName: options.pipelineName,
          top: options.top,
        });
  const first = read();
  const unrecorded = new Set(first.filter((p) => p.contentHash === null).map((p) => p.runId));
  let recordedNow = false;
  for (const runId of unrecorded)
    recordedNow = store.changes.ensure(runId) !== undefined || recordedNow;
  return recordedNow ? read() : first;
}

export function renderHistoryTable(points: readonly HistoryPoint[]): string {
  if (points.length === 0) return 'no stored result matches\n';
  const head = ['run', 'created', 'search', 'source', 'rank', 'status', 'content', 'url'];
  const rows = points.map((p) => [
    p.runId,
    new Date(p.runCreatedAt).toISOString().slice(0, 16).replace('T', ' '),
    clean(p.search),
    p.source,
    `#${p.position + 1}`,
    p.status ?? '-',
    p.contentHash ?? '-',
    clean(p.url),
  ]);
  const cells = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')}\n`;
}

export function renderHistoryJson(points: readonly HistoryPoint[]): string {
  return `${JSON.stringify(
    points.map((p) => ({
      ...p,
      runCreatedAt: new Date(p.runCreatedAt).toISOString(),
      rank: p.position + 1,
    })),
    null,
    2,
  )}\n`;
}
