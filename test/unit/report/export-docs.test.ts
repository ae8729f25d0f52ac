/** docs/export.md documents the column sets exactly as `harvest export` writes them. */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXPORT_COLUMNS, EXPORT_KINDS } from '../../../src/store/queries/export-columns.ts';

const doc = fs.readFileSync(new URL('../../../docs/export.md', import.meta.url), 'utf8');

describe('docs/export.md', () => {
  it.each(EXPORT_KINDS)('lists every column of --of %s, in order, with its type', (kind) => {
    const section = doc.split(`### --of ${kind}\n`)[1]?.split('\n\n')[0] ?? '';
    const rows = [...section.matchAll(/^\| `([a-z0-9_]+)` \| (\w+) \|/gm)].map((m) => [m[1], m[2]]);
    expect(rows).toEqual(EXPORT_COLUMNS[kind].map((c) => [c.name, c.type]));
  });
});
