/**
 * The changes of a run as one self-contained, offline HTML page (../html-page.ts). Per search, a chart of the rank of its top results over the last runs;
 * then the counts per search and the lists of the run's changes.
 */
import { CHANGE_COUNT_NAMES } from '../../store/index.ts';
import { chartPage, escapeHtml } from '../html-page.ts';
import type { ChangeReport } from './build.ts';
import type { ChangeCharts } from './charts.ts';
import { rankText } from './text.ts';

const STYLE = `
  body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; background: #fff; }
  h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 20px 0 8px; }
  .sub { color: #57606a; margin: 0 0 16px; }
  .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 16px; }
  figure { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px; }
  figcaption { font-weight: 600; margin-bottom: 4px; } .chart { position: relative; height: 240px; }
  table { border-collapse: collapse; width: 100%; } th, td { padding: 4px 8px; border-bottom: 1px solid #eaeef2; text-align: left; }
  th { background: #f6f8fa; } .num { text-align: right; font-variant-numeric: tabular-nums; }
  tfoot td { font-weight: 600; border-top: 2px solid #d0d7de; }
  .new { color: #1a7f37; } .dropped { color: #cf222e; } .changed { color: #9a6700; }
  pre { background: #f6f8fa; padding: 8px; overflow-x: auto; font-size: 12px; }
`;

const SCRIPT = `
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const palette = ['#0969da', '#1a7f37', '#bf8700', '#cf222e', '#8250df', '#1b7c83', '#bc4c00', '#57606a', '#d4a72c', '#3fb950'];
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  const labels = data.charts.runs.map((id, i) => id + ' ' + data.charts.runTimes[i].slice(0, 10));
  window.harvestCharts = data.charts.charts.map((c, n) => new Chart(document.getElementById('rank-' + n), {
    type: 'line',
    data: { labels, datasets: c.lines.map((l, i) => ({ label: l.url, data: l.ranks,
      borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length] })) },
    options: { plugins: { legend: { display: false } },
      scales: { y: { reverse: true, min: 1, ticks: { precision: 0 }, title: { display: true, text: 'rank' } } } },
  }));
  document.body.dataset.rendered = 'true';
`;

const COUNTS = [...CHANGE_COUNT_NAMES, 'credits'] as const;

function countsTable(report: ChangeReport): string {
  const head = `<tr><th>search</th>${COUNTS.map((c) => `<th class="num">${c}</th>`).join('')}</tr>`;
  const row = (name: string, r: Record<(typeof COUNTS)[number], number>) =>
    `<tr><td>${escapeHtml(name)}</td>${COUNTS.map((c) => `<td class="num">${r[c]}</td>`).join('')}</tr>`;
  const total = row('total', { ...report.totals, credits: report.credits });
  return `<table id="counts"><thead>${head}</thead><tbody>${report.searches
    .map((s) => row(s.label, s))
    .join('')}</tbody><tfoot>${total}</tfoot></table>`;
}

function changesTable(report: ChangeReport): string {
  const rows = report.results
    .map(
      (r) =>
        `<tr class="${r.status}"><td>${r.status === 'same' ? 'moved' : r.status}</td><td>${escapeHtml(r.search)}</td><td>${escapeHtml(rankText(r))}</td><td>${escapeHtml(r.title ?? '')}</td><td>${escapeHtml(r.url)}</td></tr>${
          r.diff === undefined
            ? ''
            : `<tr><td colspan="5"><pre>${escapeHtml(r.diff)}</pre></td></tr>`
        }`,
    )
    .join('');
  return `<table id="changes"><thead><tr><th>status</th><th>search</th><th>rank</th><th>title</th><th>URL</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function renderHtml(report: ChangeReport, charts: ChangeCharts): string {
  const since = report.baseline ? `since run ${report.baseline.id}` : 'first finished run';
  const figures = charts.charts
    .map(
      (c, n) =>
        `<figure><figcaption>${escapeHtml(c.search)}</figcaption><div class="chart"><canvas id="rank-${n}"></canvas></div></figure>`,
    )
    .join('');
  return chartPage({
    title: `harvest: changes in run ${report.run.id}`,
    style: STYLE,
    body: `<p class="sub">${escapeHtml(`${report.run.pipeline} · ${since} · credits ${report.credits} · generated ${report.generatedAt}`)}</p>
<h2>Rank of the top results over the last ${charts.runs.length} runs</h2>
<section class="charts">${figures}</section>
<h2>Changes per search</h2>
<section>${countsTable(report)}</section>
<h2>Changed results</h2>
<section>${changesTable(report)}</section>`,
    data: { charts },
    script: SCRIPT,
  });
}
