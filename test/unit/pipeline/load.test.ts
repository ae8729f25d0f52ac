import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatIssue,
  loadPipelineFile,
  MAX_NESTING,
  MAX_PIPELINE_BYTES,
  parsePipelineBytes,
} from '../../../src/pipeline/index.ts';
import { messages, yaml } from './helpers.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harvest-pipeline-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loading', () => {
  it('rejects aliases (no alias bombs)', () => {
    const bomb = yaml([
      'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
      'name: x',
    ]);
    const found = messages(bomb);
    expect(found[0]).toMatchInlineSnapshot(
      `"p.yaml:2:8 (file): YAML aliases are not supported (*a); use "defaults:" to share settings"`,
    );
    expect(found).toHaveLength(18);
  });

  it('rejects custom tags', () => {
    expect(messages(yaml(['name: !js/function x', 'searches: []']))).toMatchInlineSnapshot(`
      [
        "p.yaml:1:7 (file): YAML tags are not supported (!js/function); write a plain value",
      ]
    `);
  });

  it('reports a key written as a YAML list or mapping at the key, before it is read', () => {
    expect(messages(yaml(['name: a', '? [k]', ': v', 'searches:', '  - query: x']))).toEqual([
      'p.yaml:2:3 ["[k]"]: a key must be plain text, not a YAML list: write "k:"',
    ]);
    const matrix = yaml([
      'name: a',
      'searches:',
      '  - query: "{topic} news"',
      '    matrix:',
      '      {topic}: [energy, housing]',
    ]);
    expect(messages(matrix)).toMatchInlineSnapshot(`
      [
        "p.yaml:5:7 searches[0].matrix["{topic}"]: a key must be plain text, not a YAML mapping: write "topic:" (a matrix key names its placeholder without braces)",
      ]
    `);
  });

  it('reports YAML syntax errors with positions, an unclosed bracket where it opens', () => {
    expect(messages(yaml(['name: demo', 'name: again', 'searches: [']))).toMatchInlineSnapshot(`
      [
        "p.yaml:2:1 (file): Map keys must be unique",
        "p.yaml:3:11 (file): Flow sequence in block collection must be sufficiently indented and end with a ]",
      ]
    `);
  });

  it('rejects several documents in one file, saying what to do', () => {
    expect(messages('name: a\n---\nname: b\n')).toEqual([
      'p.yaml:2:1 (file): a pipeline file holds one YAML document, and a `---` line here starts another: put each pipeline in its own file',
    ]);
  });

  it('refuses YAML nested deeper than a pipeline can be, without blowing the stack', () => {
    const flow = `name: x\nsearches: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`;
    const [first] = messages(flow);
    expect(first).toMatch(/^p\.yaml:2:\d+ \(file\): the YAML nests too deeply to read/);
    const lines = ['name: x'];
    for (let i = 0; i < 100; i++) lines.push(`${' '.repeat(i)}k${i}:`);
    lines.push(`${' '.repeat(100)}v: 1`);
    expect(messages(lines.join('\n'))).toEqual([
      `p.yaml:1:1 (file): the YAML nests more than ${MAX_NESTING} levels deep; a pipeline needs a few (an indentation slip, or a generated file?)`,
    ]);
  });

  it('reports an empty file', () => {
    expect(messages('# nothing\n')).toEqual([
      'p.yaml:1:1 (file): file holds no pipeline (it is empty)',
    ]);
  });

  it('refuses files over the size limit without reading them', async () => {
    const path = join(dir, 'big.yaml');
    await writeFile(path, `name: x\n#${'x'.repeat(MAX_PIPELINE_BYTES)}\n`);
    const result = await loadPipelineFile(path);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.issues.map(formatIssue)).toEqual([
        `${path}:1:1 (file): file is too large (received ${MAX_PIPELINE_BYTES + 10} bytes; allowed at most ${MAX_PIPELINE_BYTES} bytes)`,
      ]);
    }
  });

  it('refuses bytes that are not UTF-8', () => {
    const result = parsePipelineBytes(new Uint8Array([0x6e, 0x3a, 0xff, 0xfe]), 'b.yaml');
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual([
      'b.yaml:1:1 (file): file is not valid UTF-8 text',
    ]);
  });

  it('reports a missing file as an issue', async () => {
    const result = await loadPipelineFile(join(dir, 'missing.yaml'));
    expect(result.ok ? '' : result.issues[0]?.message).toBe('cannot read file (ENOENT)');
  });
});
