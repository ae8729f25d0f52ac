/** Buffers handed back between export threads are filled again instead of allocated afresh. */
import { describe, expect, it } from 'vitest';
import { groupBuffers, RowGroupBuilder } from '../../../src/report/export/parquet.ts';
import { SpareBuffers } from '../../../src/report/export/spare-buffers.ts';
import { RESULT_COLUMNS } from '../../../src/store/index.ts';

describe('SpareBuffers', () => {
  it('gives the smallest spare buffer that holds the bytes, and each buffer once', () => {
    const spare = new SpareBuffers();
    const small = new ArrayBuffer(8192);
    const large = new ArrayBuffer(65536);
    spare.give([large, small]);
    const a = spare.bytes(5000);
    expect(a.buffer).toBe(small);
    expect(a.length).toBe(5000);
    const b = spare.int32(2000);
    expect(b.buffer).toBe(large);
    expect(b.length).toBe(2000);
    expect(spare.size).toBe(0);
  });

  it('makes a new buffer with room to spare when none holds the bytes', () => {
    const spare = new SpareBuffers();
    spare.give([new ArrayBuffer(4096)]);
    const values = spare.float64(1000);
    expect(values.length).toBe(1000);
    expect(values.buffer.byteLength).toBeGreaterThanOrEqual(10_000);
    expect(values.buffer.byteLength % 4096).toBe(0);
    expect(spare.size).toBe(1);
  });

  it('skips detached buffers and keeps at most its limit, dropping the smallest', () => {
    const spare = new SpareBuffers(2);
    const moved = new ArrayBuffer(4096);
    structuredClone(moved, { transfer: [moved] });
    spare.give([moved, new ArrayBuffer(4096), new ArrayBuffer(8192), new ArrayBuffer(16384)]);
    expect(spare.size).toBe(2);
    expect(spare.bytes(10).buffer.byteLength).toBe(8192);
    expect(spare.bytes(10).buffer.byteLength).toBe(16384);
  });
});

describe('RowGroupBuilder.take', () => {
  it('gathers a row group into the spare buffers it is given', () => {
    const columns = RESULT_COLUMNS.filter((c) => ['url', 'position', 'run_id'].includes(c.name));
    const builder = new RowGroupBuilder(columns);
    const row = (i: number) =>
      columns.map((c) => (c.type === 'integer' ? i : c.name === 'run_id' ? 'r1' : `u${i}`));
    for (let i = 0; i < 10; i++) builder.push(row(i));
    const first = builder.take(new SpareBuffers());
    const spare = new SpareBuffers();
    spare.give(groupBuffers(first));
    for (let i = 10; i < 20; i++) builder.push(row(i));
    const second = builder.take(spare);
    expect(spare.size).toBe(0);
    const url = second.columns[columns.findIndex((c) => c.name === 'url')]!;
    expect('bytes' in url && new TextDecoder().decode(url.bytes)).toBe(
      Array.from({ length: 10 }, (_, i) => `u${i + 10}`).join(''),
    );
  });
});
