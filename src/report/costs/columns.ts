/**
 * The columns of a cost report, shared by the table, CSV and HTML renderers: a heading for
 * people, a name for machines, and how to show a row's value. Unknown costs are shown as such
 * ("12 +3 unknown"), never as zero.
 */
import type { CostReport, CostRow } from './build.ts';

export interface CostColumn {
  /** Heading in the table and the HTML page. */
  heading: string;
  /** Column name in CSV (snake_case). */
  name: string;
  /** The value for CSV (a number, text, or null). */
  value(row: CostRow): string | number | null;
  /** The value as people read it. */
  text(row: CostRow): string;
  numeric: boolean;
}

function fixed(n: number | null | undefined, digits = 2): string {
  return n == null ? '-' : n.toFixed(digits);
}

/** Calls and their known credits, with how many of them cost an unknown amount. */
export function withCredits(calls: number, credits: number, unknown: number): string {
  if (calls === 0) return '0';
  return unknown > 0 ? `${calls} (${credits} cr +${unknown} unknown)` : `${calls} (${credits} cr)`;
}

/** Known credits, how many calls' cost is unknown, and how many billed implausibly. */
export function creditsText(row: CostRow): string {
  const unknown = row.unknownCostCalls > 0 ? ` +${row.unknownCostCalls} unknown` : '';
  const implausible = row.anomalyCalls > 0 ? ` (${row.anomalyCalls} implausible!)` : '';
  return `${row.creditsUsed}${unknown}${implausible}`;
}

/** The note under a report whose calls include implausible bills; undefined when none. */
export function anomalyNote(totals: CostRow): string | undefined {
  if (totals.anomalyCalls === 0) return undefined;
  return (
    `${totals.anomalyCalls} call(s) billed implausible credits (${totals.anomalyCredits} in all, ` +
    'above what their requests can cost times HARVEST_CREDITS_ANOMALY_FACTOR): kept as billed in ' +
    "the credits, budgets count them at their requests' most; ask the service about the bill"
  );
}

function num(heading: string, name: string, get: (r: CostRow) => number): CostColumn {
  return { heading, name, value: get, text: (r) => String(get(r)), numeric: true };
}

export function costColumns(report: CostReport): CostColumn[] {
  const columns: CostColumn[] = [
    {
      heading: report.by,
      name: report.by,
      value: (r) => r.key,
      text: (r) => r.key,
      numeric: false,
    },
  ];
  if (report.by === 'run') {
    columns.push({
      heading: 'pipeline',
      name: 'pipeline',
      value: (r) => r.pipeline ?? null,
      text: (r) => r.pipeline ?? '-',
      numeric: false,
    });
  }
  columns.push(
    num('calls', 'calls', (r) => r.calls),
    num('failed', 'failed_calls', (r) => r.failedCalls),
    {
      heading: 'credits',
      name: 'credits',
      value: (r) => r.creditsUsed,
      text: creditsText,
      numeric: true,
    },
    num('unknown cost', 'unknown_cost_calls', (r) => r.unknownCostCalls),
    num('results', 'results', (r) => r.results),
    {
      heading: 'cr/result',
      name: 'credits_per_result',
      value: (r) => r.creditsPerResult,
      text: (r) => fixed(r.creditsPerResult),
      numeric: true,
    },
    {
      heading: 'retries',
      name: 'retry_calls',
      value: (r) => r.retryCalls,
      text: (r) => withCredits(r.retryCalls, r.retryCredits, r.retryUnknownCalls),
      numeric: true,
    },
    {
      heading: 're-issues',
      name: 'reissue_calls',
      value: (r) => r.reissueCalls,
      text: (r) => withCredits(r.reissueCalls, r.reissueCredits, r.reissueUnknownCalls),
      numeric: true,
    },
  );
  if (report.by === 'run') {
    columns.push({
      heading: 'budget',
      name: 'budget_credits',
      value: (r) => r.budgetCredits ?? null,
      text: (r) =>
        r.budgetCredits == null
          ? '-'
          : `${r.creditsUsed}/${r.budgetCredits} (${fixed((r.budgetUse ?? 0) * 100, 0)}%)`,
      numeric: true,
    });
  }
  if (report.compareEstimate) {
    columns.push({
      heading: 'estimate',
      name: 'estimate_credits',
      value: (r) =>
        r.estimateMinCredits == null ? null : `${r.estimateMinCredits}..${r.estimateMaxCredits}`,
      text: (r) =>
        r.estimateMinCredits == null ? '-' : `${r.estimateMinCredits}..${r.estimateMaxCredits}`,
      numeric: true,
    });
  }
  return columns;
}

/** Extra CSV-only columns that the compact headings fold into one cell. */
export function csvExtras(report: CostReport): CostColumn[] {
  const extra: CostColumn[] = [
    num('', 'lost_calls', (r) => r.lostCalls),
    num('', 'anomaly_calls', (r) => r.anomalyCalls),
    num('', 'anomaly_credits', (r) => r.anomalyCredits),
    num('', 'retry_credits', (r) => r.retryCredits),
    num('', 'retry_unknown_cost_calls', (r) => r.retryUnknownCalls),
    num('', 'reissue_credits', (r) => r.reissueCredits),
    num('', 'reissue_unknown_cost_calls', (r) => r.reissueUnknownCalls),
    num('', 'runs', (r) => r.runs),
  ];
  if (report.by === 'run') {
    extra.push(
      {
        heading: '',
        name: 'status',
        value: (r) => r.status ?? null,
        text: () => '',
        numeric: false,
      },
      {
        heading: '',
        name: 'created_at',
        value: (r) => r.createdAt ?? null,
        text: () => '',
        numeric: false,
      },
      {
        heading: '',
        name: 'budget_use',
        value: (r) => r.budgetUse ?? null,
        text: () => '',
        numeric: true,
      },
    );
  }
  if (report.compareEstimate) {
    extra.push(
      {
        heading: '',
        name: 'estimate_min_credits',
        value: (r) => r.estimateMinCredits ?? null,
        text: () => '',
        numeric: true,
      },
      {
        heading: '',
        name: 'estimate_max_credits',
        value: (r) => r.estimateMaxCredits ?? null,
        text: () => '',
        numeric: true,
      },
    );
  }
  return extra;
}
