/**
 * Buffers that went to another thread and came back, to be filled again. An export moves its
 * bytes between threads: a JSONL or CSV page from its reader to the writing thread; a Parquet
 * row group's values from the reader to the Parquet thread (some 80 buffers per row group), and
 * the encoded bytes from there to the writing thread. Allocated afresh each time,
 * they die in a thread that did not allocate them, and V8 frees dead buffers only at its next
 * collection, which outside memory alone triggers after some 64 MB per thread: the process then
 * held that much garbage per thread, and malloc kept the pages. Handed back and reused, the same
 * few buffers go round and round.
 */
export class SpareBuffers {
  /** Free buffers, smallest first. */
  readonly #free: ArrayBuffer[] = [];

  /** @param limit Free buffers kept at most; the smallest go first past it. */
  constructor(private readonly limit = 512) {}

  get size(): number {
    return this.#free.length;
  }

  /** Buffers the other side is done with (detached or empty ones are skipped). */
  give(buffers: Iterable<ArrayBuffer>): void {
    for (const buffer of buffers) {
      if (buffer.byteLength === 0) continue;
      this.#free.splice(this.#firstHolding(buffer.byteLength), 0, buffer);
    }
    if (this.#free.length > this.limit) this.#free.splice(0, this.#free.length - this.limit);
  }

  /** A buffer of at least `bytes` bytes: the smallest spare one that holds them, or a new one. */
  buffer(bytes: number): ArrayBuffer {
    const at = this.#firstHolding(bytes);
    if (at < this.#free.length) return this.#free.splice(at, 1)[0]!;
    // Some room beyond the need, so that the next row group's slightly longer column fits too.
    return new ArrayBuffer(roundUp(Math.max(bytes + (bytes >> 2), MIN_BYTES)));
  }

  bytes(length: number): Uint8Array {
    return new Uint8Array(this.buffer(length), 0, length);
  }

  int32(length: number): Int32Array {
    return new Int32Array(this.buffer(length * 4), 0, length);
  }

  float64(length: number): Float64Array {
    return new Float64Array(this.buffer(length * 8), 0, length);
  }

  /** Index of the first free buffer of at least `bytes` bytes (binary search). */
  #firstHolding(bytes: number): number {
    let lo = 0;
    let hi = this.#free.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#free[mid]!.byteLength < bytes) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const MIN_BYTES = 4096;

function roundUp(bytes: number): number {
  return Math.ceil(bytes / MIN_BYTES) * MIN_BYTES;
}
