/**
 * The `tbs` time filter: `qdr:h|d|w|m|y`, `cdr:1,cd_min:MM/DD/YYYY,cd_max:MM/DD/YYYY`, `sbd:1`,
 * combined with commas (for example `sbd:1,qdr:w`).
 */

const QDR = /^qdr:[hdwmy]$/;
const DATE = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/;

function isDate(value: string): boolean {
  const match = DATE.exec(value);
  if (!match) return false;
  const month = Number(match[1]);
  const day = Number(match[2]);
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

/** Why a `tbs` string is not valid, or undefined when it is. */
export function tbsProblem(tbs: string): string | undefined {
  const parts = tbs.split(',');
  const keys = new Set<string>();
  for (const part of parts) {
    const key = part.slice(0, part.indexOf(':'));
    const value = part.slice(part.indexOf(':') + 1);
    const ok =
      QDR.test(part) ||
      part === 'sbd:1' ||
      part === 'cdr:1' ||
      ((key === 'cd_min' || key === 'cd_max') && isDate(value));
    if (!ok) return `unknown tbs part "${part}"`;
    keys.add(key);
  }
  // "Values combine with commas": the reference limits neither which nor how often (a
  // predefined range beside a custom one, say), and the hosted service takes any string.
  const custom = ['cdr', 'cd_min', 'cd_max'].filter((key) => keys.has(key)).length;
  if (custom !== 0 && custom !== 3) return 'a custom range needs cdr:1, cd_min and cd_max';
  return undefined;
}

export function isTbs(tbs: string): boolean {
  return tbsProblem(tbs) === undefined;
}
