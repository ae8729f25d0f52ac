/**
 * Call ids: UUIDv7 (time-ordered, so the calls table's key index grows at its end instead of at
 * random pages). The random bits come from a pool refilled 4 KiB at a time, not from the uuid
 * package's own source, which asks Web Crypto for 16 bytes per id: that request would be most
 * of what an id costs, and every call recorded makes one.
 */
import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

const POOL_BYTES = 4096;
let pool = new Uint8Array(0);
let offset = POOL_BYTES;

function random16(): Uint8Array {
  if (offset + 16 > pool.length) {
    pool = randomFillSync(new Uint8Array(POOL_BYTES));
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + 16);
  offset += 16;
  return bytes;
}

/** A new UUIDv7 for the current time; ids of different milliseconds sort by time. */
export function newCallId(msecs = Date.now()): string {
  return v7({ random: random16(), msecs });
}
