/**
 * The frame of harvest's HTML reports (`report costs`, `changes`): one self-contained, offline
 * page. Chart.js (its UMD build, read from node_modules when the page is written) and the data
 * are inlined, and a Content-Security-Policy forbids every network fetch, so the page shows the
 * same thing anywhere, without a network.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

let chartJs: string | undefined;

/** Chart.js's UMD build (it defines `window.Chart`), read once. */
export function chartJsSource(): string {
  if (chartJs === undefined) {
    const entry = createRequire(import.meta.url).resolve('chart.js');
    const source = readFileSync(path.join(path.dirname(entry), 'chart.umd.min.js'), 'utf8');
    chartJs = source.replaceAll('</script', '<\\/script');
  }
  return chartJs;
}

export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;');
}

/** JSON safe inside a <script> element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

export interface ChartPage {
  /** Plain text: the page's title and its heading. */
  title: string;
  style: string;
  /** HTML after the heading. */
  body: string;
  /** What the page's script reads from `#report-data`. */
  data: unknown;
  /** The page's own script, run after Chart.js. */
  script: string;
}

/** A whole report page, with Chart.js, its data and its script inlined. */
export function chartPage(page: ChartPage): string {
  const title = escapeHtml(page.title);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>${page.style}</style>
</head>
<body>
<h1>${title}</h1>
${page.body}
<script id="report-data" type="application/json">${scriptJson(page.data)}</script>
<script>${chartJsSource()}</script>
<script>${page.script}</script>
</body>
</html>
`;
}
