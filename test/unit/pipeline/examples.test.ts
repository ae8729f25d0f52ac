import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pipelineSchemaText } from '../../../src/cli/commands/schema.ts';
import { formatIssue, loadPipelineFile, parsePipeline, plan } from '../../../src/pipeline/index.ts';

const DIR = join(import.meta.dirname, '../../../pipelines');
const files = (await readdir(DIR)).filter((name) => name.endsWith('.yaml')).sort();

describe('example pipelines', () => {
  it('are all there', () => {
    expect(files).toEqual([
      'budgeted.yaml',
      'bulk-dataset.yaml',
      'demo.yaml',
      'media-capture.yaml',
      'weekly-research.yaml',
    ]);
  });

  it.each(files)(
    '%s starts with the schema modeline, validates without warnings and plans',
    async (name) => {
      const path = join(DIR, name);
      const text = await readFile(path, 'utf8');
      expect(text.startsWith('# yaml-language-server: $schema=./pipeline.schema.json\n')).toBe(
        true,
      );
      const result = await loadPipelineFile(path);
      if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
      expect(result.warnings.map(formatIssue)).toEqual([]);
      const planned = plan(result.value);
      expect(planned.tasks.length).toBeGreaterThan(0);
      expect(planned.estimate.verdict).toBe('within');
    },
  );

  it('demo.yaml is small and cheap (3-6 searches, plain and markdown)', async () => {
    const result = await loadPipelineFile(join(DIR, 'demo.yaml'));
    if (!result.ok) throw new Error('demo.yaml invalid');
    const { tasks, estimate } = plan(result.value);
    expect(tasks.length).toBeGreaterThanOrEqual(3);
    expect(tasks.length).toBeLessThanOrEqual(6);
    expect(tasks.some((t) => t.request.scrapeOptions === undefined)).toBe(true);
    expect(
      tasks.some((t) => t.request.scrapeOptions?.formats.some((f) => f.type === 'markdown')),
    ).toBe(true);
    expect(estimate.maxCredits).toBeLessThanOrEqual(50);
  });

  it('bulk-dataset.yaml expands topics x countries', async () => {
    const result = await loadPipelineFile(join(DIR, 'bulk-dataset.yaml'));
    if (!result.ok) throw new Error('invalid');
    expect(plan(result.value).tasks).toHaveLength(12);
  });
});

describe('pipeline.schema.json', () => {
  it('is in sync with the zod schema (run `npm run schema` after changing it)', async () => {
    const committed = await readFile(join(DIR, 'pipeline.schema.json'), 'utf8');
    expect(committed).toBe(pipelineSchemaText());
  });
});

describe('pipelines in the documentation', () => {
  const docs = ['README.md', 'docs/pipelines.md'];
  it.each(docs)('%s: every pipeline block validates', async (name) => {
    const text = await readFile(join(import.meta.dirname, '../../..', name), 'utf8');
    const blocks = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .filter((block) => /^searches:/m.test(block));
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      const result = parsePipeline(block, name);
      if (!result.ok) throw new Error(result.issues.map(formatIssue).join('\n'));
      if (name === 'README.md') expect(result.warnings.map(formatIssue)).toEqual([]);
    }
  });
});
