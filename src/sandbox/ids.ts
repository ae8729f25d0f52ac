/** Identifiers: UUIDv7 (time-ordered, as the hosted service's search ids) and seeded UUIDs. */
import { createHash, randomFillSync } from 'node:crypto';

const POOL_SIZE = 16 * 256;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

function hex(bytes: Buffer): string {
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** A fresh UUIDv7: 48-bit millisecond timestamp, version 7, variant 10, random rest. */
export function uuidv7(nowMs: number = Date.now()): string {
  if (offset >= POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const b = Buffer.from(pool.subarray(offset, offset + 16));
  offset += 16;
  b.writeUIntBE(nowMs, 0, 6);
  b[6] = 0x70 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  return hex(b);
}

/** A UUID (v4 form) derived from `text`: the same text gives the same id. */
export function seededUuid(text: string): string {
  const b = createHash('sha256').update(text).digest().subarray(0, 16);
  b[6] = 0x40 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  return hex(b);
}
