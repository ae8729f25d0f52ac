/**
 * A strict reader of the Prometheus text exposition format (0.0.4), for tests: every line must
 * be a HELP, a TYPE, a comment, a blank, or a sample of a family whose TYPE came first; label
 * values must be quoted and escaped; values must be numbers, NaN or ±Inf; no sample twice.
 * Anything else throws, naming the line.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string | undefined;
  samples: Sample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SUFFIXES: Record<string, string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

/** Values as Prometheus reads them (Go's ParseFloat: NaN and Inf in any case). */
function parseValue(text: string, where: string): number {
  if (/^nan$/i.test(text)) return Number.NaN;
  if (/^\+?inf(inity)?$/i.test(text)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/i.test(text)) return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new Error(`${where}: "${text}" is not a sample value`);
  }
  return Number(text);
}

function parseLabels(text: string, where: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const re = new RegExp(`(${LABEL})="((?:[^"\\\\\\n]|\\\\[\\\\"n])*)"(,|$)`, 'y');
  let at = 0;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) throw new Error(`${where}: bad labels {${text}}`);
    const [, name, raw, comma] = m as unknown as [string, string, string, string];
    if (name in labels) throw new Error(`${where}: label ${name} twice`);
    labels[name] = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    at = re.lastIndex;
    if (comma === '' && at < text.length) throw new Error(`${where}: bad labels {${text}}`);
  }
  return labels;
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const sampleRe = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
  const lines = text.split('\n');
  if (lines.at(-1) !== '') throw new Error('the text must end with a newline');
  lines.forEach((line, i) => {
    const where = `line ${i + 1}`;
    if (line === '') return;
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) ?(.*)$`).exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      const family = families.get(name) ?? { name, type: 'untyped', help: undefined, samples: [] };
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new Error(`${where}: unknown type "${rest}"`);
        if (families.has(name) && family.type !== 'untyped')
          throw new Error(`${where}: ${name} typed twice`);
        if (family.samples.length > 0)
          throw new Error(`${where}: TYPE of ${name} after its samples`);
        family.type = rest;
      } else {
        if (family.help !== undefined) throw new Error(`${where}: HELP of ${name} twice`);
        family.help = rest;
      }
      families.set(name, family);
      return;
    }
    if (line.startsWith('#')) return;
    const m = sampleRe.exec(line);
    if (!m) throw new Error(`${where}: not a sample: ${line}`);
    const [, name, labelText, valueText] = m as unknown as [
      string,
      string,
      string | undefined,
      string,
    ];
    const family = [...families.values()].find((f) =>
      (SUFFIXES[f.type] ?? ['']).some((s) => `${f.name}${s}` === name),
    );
    if (!family) throw new Error(`${where}: sample ${name} of no declared family`);
    const labels = labelText ? parseLabels(labelText, where) : {};
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`${where}: sample ${name} twice with the same labels`);
    seen.add(key);
    family.samples.push({ name, labels, value: parseValue(valueText, where) });
  });
  return families;
}

/** The value of the sample of `family` whose labels include `labels` (summed over the rest). */
export function sampleValue(
  families: Map<string, Family>,
  family: string,
  labels: Record<string, string> = {},
): number | undefined {
  const f = families.get(family);
  const matching = f?.samples.filter(
    (s) => s.name === family && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (!matching || matching.length === 0) return undefined;
  return matching.reduce((sum, s) => sum + s.value, 0);
}
