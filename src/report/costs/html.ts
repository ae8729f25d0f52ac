/**
 * The cost report as one self-contained, offline HTML page (../html-page.ts). Charts: credits per day stacked by pipeline, credits per result by pipeline, calls by outcome;
 * then the table of the report.
 */
import { chartPage, escapeHtml } from '../html-page.ts';
import type { CostReport } from './build.ts';
import type { CostCharts } from './charts.ts';
import { anomalyNote, costColumns, creditsText, withCredits } from './columns.ts';

function table(report: CostReport): string {
  const columns = costColumns(report);
  const head = columns
    .map((c) => `<th class="${c.numeric ? 'num' : ''}">${escapeHtml(c.heading)}</th>`)
    .join('');
  const row = (r: CostReport['totals'], cls = '') =>
    `<tr class="${cls}">${columns
      .map((c) => `<td class="${c.numeric ? 'num' : ''}">${escapeHtml(c.text(r))}</td>`)
      .join('')}</tr>`;
  return `<table id="cost-table"><thead><tr>${head}</tr></thead><tbody>${report.rows
    .map((r) => row(r))
    .join('')}</tbody><tfoot>${row(report.totals, 'total')}</tfoot></table>`;
}

function cards(report: CostReport): string {
  const t = report.totals;
  const items: [string, string][] = [
    ['credits', creditsText(t)],
    ['calls', String(t.calls)],
    ['failed calls', String(t.failedCalls)],
    ['results', String(t.results)],
    ['credits per result', t.creditsPerResult == null ? '-' : t.creditsPerResult.toFixed(2)],
    ['retries', withCredits(t.retryCalls, t.retryCredits, t.retryUnknownCalls)],
    ['media re-issues', withCredits(t.reissueCalls, t.reissueCredits, t.reissueUnknownCalls)],
  ];
  return items
    .map(
      ([k, v]) =>
        `<div class="card"><div class="k">${k}</div><div class="v">${escapeHtml(v)}</div></div>`,
    )
    .join('');
}

const STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; background: #fff; }
  h1 { font-size: 20px; margin: 0 0 4px; } .sub { color: #57606a; margin: 0 0 16px; }
  .cards { display: flex; flex-wrap: wrap; gap: 12px; margin-bottom: 16px; }
  .card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; min-width: 110px; }
  .card .k { color: #57606a; font-size: 12px; } .card .v { font-size: 18px; font-weight: 600; }
  .charts { display: grid; grid-template-columns: 2fr 1fr 1fr; gap: 16px; margin-bottom: 16px; }
  figure { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px; }
  figcaption { font-weight: 600; margin-bottom: 4px; } .chart { position: relative; height: 260px; }
  table { border-collapse: collapse; width: 100%; } th, td { padding: 4px 8px; border-bottom: 1px solid #eaeef2; }
  th { text-align: left; background: #f6f8fa; } .num { text-align: right; font-variant-numeric: tabular-nums; }
  tfoot td { font-weight: 600; border-top: 2px solid #d0d7de; } .note { color: #9a6700; }
`;

const SCRIPT = `
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const palette = ['#0969da', '#1a7f37', '#bf8700', '#cf222e', '#8250df', '#1b7c83', '#bc4c00', '#57606a'];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  const c = data.charts;
  window.harvestCharts = [
    new Chart(document.getElementById('chart-daily'), {
      type: 'bar',
      data: { labels: c.days, datasets: c.pipelines.map((p, i) => ({
        label: p, data: c.creditsByDay[i], backgroundColor: palette[i % palette.length] })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true,
        title: { display: true, text: 'credits' } } } },
    }),
    new Chart(document.getElementById('chart-per-result'), {
      type: 'bar',
      data: { labels: c.creditsPerResult.map((r) => r.pipeline), datasets: [{
        label: 'credits per result', data: c.creditsPerResult.map((r) => r.value),
        backgroundColor: c.creditsPerResult.map((_, i) => palette[i % palette.length]) }] },
      options: { indexAxis: 'y', plugins: { legend: { display: false } },
        scales: { x: { beginAtZero: true } } },
    }),
    new Chart(document.getElementById('chart-outcomes'), {
      type: 'doughnut',
      data: { labels: c.callsByOutcome.map((o) => o.outcome), datasets: [{
        data: c.callsByOutcome.map((o) => o.calls),
        backgroundColor: c.callsByOutcome.map((o, i) => o.outcome === 'ok' ? '#1a7f37' : palette[(i + 2) % palette.length]) }] },
      options: { plugins: { legend: { position: 'right' } } },
    }),
  ];
  document.body.dataset.rendered = 'true';
`;

export function renderHtml(report: CostReport, charts: CostCharts): string {
  const scope = [
    report.filters.runId ? `run ${report.filters.runId}` : 'all runs',
    report.filters.since ? `since ${report.filters.since}` : null,
  ]
    .filter(Boolean)
    .join(', ');
  const unknown =
    charts.unknownCostCalls > 0
      ? `<p class="note">${charts.unknownCostCalls} call(s) of unknown cost (a worker died, or the answer was unreadable) are counted apart: they are in no credit figure, and not guessed.</p>`
      : '';
  const anomalies = anomalyNote(report.totals);
  const implausible = anomalies ? `<p class="note anomaly">${escapeHtml(anomalies)}</p>` : '';
  return chartPage({
    title: `harvest: credits by ${report.by}`,
    style: STYLE,
    body: `<p class="sub">${escapeHtml(scope)} · from the calls the service charged · generated ${escapeHtml(report.generatedAt)}</p>
<section class="cards">${cards(report)}</section>
${unknown}
${implausible}
<section class="charts">
  <figure><figcaption>Credits per day, by pipeline</figcaption><div class="chart"><canvas id="chart-daily"></canvas></div></figure>
  <figure><figcaption>Credits per result, by pipeline</figcaption><div class="chart"><canvas id="chart-per-result"></canvas></div></figure>
  <figure><figcaption>Calls by outcome</figcaption><div class="chart"><canvas id="chart-outcomes"></canvas></div></figure>
</section>
<section>${table(report)}</section>`,
    data: { report, charts },
    script: SCRIPT,
  });
}
