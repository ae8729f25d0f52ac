/** Identifiers: UUIDv7 (time-ordered, as the hosted service's search ids) and seeded UUIDs. */
import { hash, randomFillSync } from 'node:crypto';

const POOL_SIZE = 16 * 256;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** The 16 bytes at `at` in UUID form: 8-4-4-4-12 lowercase hex digits. */
function hex(b: Buffer, at: number): string {
  let out = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) out += '-';
    out += HEX[b[at + i]!]!;
  }
  return out;
}

/** A fresh UUIDv7: 48-bit millisecond timestamp, version 7, variant 10, random rest. */
export function uuidv7(nowMs: number = Date.now()): string {
  if (offset >= POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  // The pool bytes are used once, so the id is written over them in place.
  const at = offset;
  offset += 16;
  pool.writeUIntBE(nowMs, at, 6);
  pool[at + 6] = 0x70 | (pool[at + 6]! & 0x0f);
  pool[at + 8] = 0x80 | (pool[at + 8]! & 0x3f);
  return hex(pool, at);
}

/** A UUID (v4 form) derived from `text`: the same text gives the same id. */
export function seededUuid(text: string): string {
  const b = hash('sha256', text, 'buffer').subarray(0, 16);
  b[6] = 0x40 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  return hex(b, 0);
}
