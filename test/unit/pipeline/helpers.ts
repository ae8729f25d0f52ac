import { formatIssue, parsePipeline } from '../../../src/pipeline/index.ts';

/** Validate YAML text; return the formatted issues (errors and warnings). */
export function messages(yaml: string): string[] {
  const result = parsePipeline(yaml, 'p.yaml');
  return (result.ok ? result.warnings : result.issues).map(formatIssue);
}

/** Validate and expect success; returns the value. */
export function valid(yaml: string) {
  const result = parsePipeline(yaml, 'p.yaml');
  if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
  return result;
}

export const yaml = (lines: string[]) => `${lines.join('\n')}\n`;
