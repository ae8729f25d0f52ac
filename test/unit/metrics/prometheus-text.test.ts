/** The strict reader the metrics tests rely on: it must refuse what Prometheus would refuse. */
import { describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../../helpers/prometheus.ts';

const GOOD = `# HELP jobs Jobs per queue.
# TYPE jobs gauge
jobs{queue="search",state="waiting"} 3
jobs{queue="store",state="waiting"} 1

# TYPE calls_total counter
calls_total{status="200",outcome="ok",note="a \\"quoted\\" \\\\ value\\n"} 7
# TYPE rate gauge
rate +Inf
# TYPE lag histogram
lag_bucket{le="0.1"} 1
lag_bucket{le="+Inf"} 2
lag_sum 0.3
lag_count 2
`;

describe('parsePrometheusText', () => {
  it('reads families, labels (unescaped) and values', () => {
    const f = parsePrometheusText(GOOD);
    expect(sampleValue(f, 'jobs')).toBe(4);
    expect(sampleValue(f, 'jobs', { queue: 'store' })).toBe(1);
    expect(sampleValue(f, 'rate')).toBe(Number.POSITIVE_INFINITY);
    expect(f.get('calls_total')?.samples[0]?.labels.note).toBe('a "quoted" \\ value\n');
    expect(f.get('lag')?.samples).toHaveLength(4);
    expect(f.get('jobs')?.help).toBe('Jobs per queue.');
  });

  it.each([
    ['a sample without a TYPE', 'x 1\n'],
    ['a bad value', '# TYPE x gauge\nx one\n'],
    ['an unquoted label', '# TYPE x gauge\nx{a=b} 1\n'],
    ['a label without a comma', '# TYPE x gauge\nx{a="1"b="2"} 1\n'],
    ['a duplicate sample', '# TYPE x gauge\nx{a="1"} 1\nx{a="1"} 2\n'],
    ['an unknown type', '# TYPE x meter\n'],
    ['a TYPE after samples', '# TYPE x gauge\nx 1\n# TYPE x counter\n'],
    ['no newline at the end', '# TYPE x gauge\nx 1'],
    ['a histogram suffix on a gauge', '# TYPE x gauge\nx_bucket 1\n'],
  ])('refuses %s', (_, text) => {
    expect(() => parsePrometheusText(text)).toThrow();
  });
});
