/**
 * Every YAML block of README.md and docs/ that is a pipeline (it has a top-level `searches:`)
 * validates with the pipeline validator, without warnings. A failure names the file and the
 * line in it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatIssue, parsePipeline } from '../../src/pipeline/index.ts';
import { isPipelineBlock, type YamlBlock, yamlBlocks } from '../helpers/markdown-yaml.ts';

const ROOT = join(import.meta.dirname, '../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

const FILES = [join(ROOT, 'README.md'), ...markdownFiles(join(ROOT, 'docs'))].map((path) =>
  relative(ROOT, path),
);

/** Problems of one block, each as `file:line:col path: message`, lines those of the Markdown file. */
function problems(file: string, block: YamlBlock): string[] {
  const result = parsePipeline(block.text, file);
  const issues = result.ok ? result.warnings : result.issues;
  return issues.map((issue) => formatIssue({ ...issue, file, line: issue.line + block.line - 1 }));
}

const PIPELINES = FILES.flatMap((file) =>
  yamlBlocks(readFileSync(join(ROOT, file), 'utf8'))
    .filter(isPipelineBlock)
    .map((block) => [`${file}:${block.line}`, file, block] as const),
);

describe('pipeline examples in README.md and docs/', () => {
  it('finds the pipeline blocks (README.md and docs/pipelines.md have one each at least)', () => {
    const files = new Set(PIPELINES.map(([, file]) => file));
    expect(files).toContain('README.md');
    expect(files).toContain(join('docs', 'pipelines.md'));
  });

  it.each(PIPELINES)('%s validates without warnings', (_where, file, block) => {
    expect(problems(file, block)).toEqual([]);
  });
});

describe('the checker itself', () => {
  const markdown = [
    '# Title', // 1
    '', // 2
    '```sh', // 3
    '```yaml inside a shell block is not a block', // 4
    '```', // 5
    '', // 6
    '```yaml', // 7
    'name: broken', // 8
    'searches:', // 9
    '  - query: x', // 10
    'media:', // 11
    '  save: true', // 12
    '```', // 13
    '', // 14
    '~~~yml', // 15
    'key: not a pipeline', // 16
    '~~~', // 17
  ].join('\n');

  it('extracts yaml blocks with their first line, and tells pipelines apart', () => {
    const blocks = yamlBlocks(markdown);
    expect(blocks.map((b) => b.line)).toEqual([8, 16]);
    expect(blocks.map(isPipelineBlock)).toEqual([true, false]);
  });

  it('names the file and the line of a problem in the Markdown file', () => {
    const [block] = yamlBlocks(markdown);
    const found = problems('GUIDE.md', block!);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^GUIDE\.md:12:\d+ media\.save: /);
  });
});
