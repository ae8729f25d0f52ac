/** Text for people of `harvest crawls active` and `harvest crawls preview`. Pure. */
import type { ActiveCrawls, CrawlPreview } from './index.ts';

/** One line per crawl under a header; columns padded to their widest cell. */
export function formatActiveCrawls(result: ActiveCrawls): string {
  const { crawls, apiVersion } = result;
  const source = apiVersion === 'v1' ? 'API v1, shown in v2 names' : 'API v2';
  if (crawls.length === 0) return `no active crawls (${source})`;
  const teams = [...new Set(crawls.map((crawl) => crawl.teamId))].join(', ');
  const rows = crawls.map((crawl) => {
    const options = crawl.options as Record<string, unknown>;
    const scrape = (crawl.options.scrapeOptions ?? {}) as Record<string, unknown>;
    return [
      crawl.id,
      crawl.created_at ? shortTime(crawl.created_at) : '-',
      cell(options.limit),
      cell(options.maxDiscoveryDepth),
      formatNames(scrape.formats),
      crawl.url,
    ];
  });
  const title = `${crawls.length} active crawl${crawls.length === 1 ? '' : 's'} of team ${teams} (${source})`;
  return [title, ...table([['ID', 'STARTED', 'LIMIT', 'DEPTH', 'FORMATS', 'URL'], ...rows])].join(
    '\n',
  );
}

/** The suggested options, one per line, the url first. */
export function formatPreview(preview: CrawlPreview): string {
  const { url, ...options } = preview.suggested;
  const entries = Object.entries(options).filter(([, value]) => value !== undefined);
  const lines = [`suggested crawl of ${url}`];
  if (entries.length === 0) lines.push('  (no options: the service suggests a plain crawl)');
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  for (const [key, value] of entries) lines.push(`  ${key.padEnd(width)}  ${cell(value)}`);
  return lines.join('\n');
}

/** `markdown, links, json`: format names whether strings or `{type}` objects. */
function formatNames(formats: unknown): string {
  if (!Array.isArray(formats) || formats.length === 0) return '-';
  return formats
    .map((format) =>
      typeof format === 'object' && format !== null && 'type' in format
        ? String((format as { type: unknown }).type)
        : String(format),
    )
    .join(',');
}

function cell(value: unknown): string {
  if (value === undefined || value === null) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '(none)' : value.map(String).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** `2026-01-05 10:00` (UTC) from an ISO time; other text as it came. */
function shortTime(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? '').length)),
  );
  return rows.map((row) =>
    row
      .map((text, column) => (column === row.length - 1 ? text : text.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd(),
  );
}
