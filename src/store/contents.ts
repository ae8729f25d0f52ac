/**
 * `contents`: scraped content (markdown, html, raw html, links, metadata, and the other
 * outputs of an answer item) stored once per distinct value, keyed by the hash of its text,
 * compressed. Result rows reference it by `*_hash` columns; `item_json` keeps the rest of the
 * item, with a `0` in place of each value stored here, so the item is restored key for key.
 * Short values stay in `item_json` ({@link STORE_FROM_CHARS}).
 *
 * Codecs, one tag per value: 0 the UTF-8 text as it is (short values, and values that do not
 * shrink), 1 brotli, 2 zstd. zstd where the runtime has it (node:zlib from Node 22.15 and
 * 23.8): it decompresses several times faster than brotli at a like ratio. Node 20 writes
 * brotli, reads brotli from any Node, and refuses zstd values with a message that says which
 * Node reads them.
 *
 * SQL reads a value with `harvest_content(codec, data)` (a BLOB of the text), registered on
 * each connection by `registerContentFunctions`.
 */
import { hash as oneShotHash } from 'node:crypto';
import zlib from 'node:zlib';
import type { Database } from 'better-sqlite3';

export const CODEC_TEXT = 0;
export const CODEC_BROTLI = 1;
export const CODEC_ZSTD = 2;

/** node:zlib's zstd functions, where this Node has them (22.15+, 23.8+). */
const zstd = zlib as typeof zlib & {
  zstdCompressSync?: (data: Buffer, options?: object) => Buffer;
  zstdDecompressSync?: (data: Buffer) => Buffer;
};
/** The codec new values are written with on this Node. */
export const WRITE_CODEC = zstd.zstdCompressSync ? CODEC_ZSTD : CODEC_BROTLI;

/**
 * Values shorter than this are stored as they are: each compression and decompression has a
 * fixed cost (about 25 µs), which a value this short does not repay in bytes.
 */
const COMPRESS_FROM_BYTES = 4096;
/**
 * Brotli quality 1: on prose and markup it compresses to about 0.37 of the text at about
 * 1.5 × the speed of quality 3 (0.35), keeping the writer's CPU per search low.
 */
const BROTLI_QUALITY = 1;

/** The content kinds of a result, with the column that references each. */
export const CONTENT_COLUMNS = {
  markdown: 'markdown_hash',
  html: 'html_hash',
  rawHtml: 'raw_html_hash',
  links: 'links_hash',
  metadata: 'metadata_hash',
  extra: 'extra_hash',
} as const;
export type ContentKind = keyof typeof CONTENT_COLUMNS;
export const CONTENT_KINDS = Object.keys(CONTENT_COLUMNS) as ContentKind[];

/** Item keys kept in `item_json`: the listing fields, small, read by exports from there. */
const LISTING_KEYS: ReadonlySet<string> = new Set([
  'url',
  'title',
  'description',
  'snippet',
  'category',
  'date',
  'imageUrl',
  'imageWidth',
  'imageHeight',
  'position',
  'screenshot',
  'audio',
  'video',
]);

/** The texts of an item's content, by kind (a kind it does not carry is absent). */
export type ContentTexts = Partial<Record<ContentKind, string>>;

export interface SplitItem {
  /** The item as JSON, each value stored in contents replaced by `0`. */
  itemJson: string;
  texts: ContentTexts;
}

/** The text a content kind stores of a value, or undefined when it stays in `item_json`. */
function contentText(key: string, value: unknown): string | undefined {
  switch (key) {
    case 'markdown':
    case 'html':
    case 'rawHtml':
      return typeof value === 'string' ? value : undefined;
    case 'links':
      return Array.isArray(value) ? JSON.stringify(value) : undefined;
    case 'metadata':
      return value !== null && typeof value === 'object' ? JSON.stringify(value) : undefined;
    default:
      return undefined;
  }
}

/**
 * Values shorter than this (in characters) stay in `item_json`: a reference and its index entry
 * cost about as many bytes, and a lookup in `contents` more CPU than writing such a value with
 * its row. Real pages (markdown of 10 KB and more) are all stored once.
 */
export const STORE_FROM_CHARS = 1024;

/**
 * Splits an API item into what `item_json` keeps and the content texts: markdown, html,
 * rawHtml (strings), links (an array) and metadata (an object) each a value of its own; every
 * other key but the listing fields together in `extra`, a JSON object. A value (or `extra`)
 * shorter than {@link STORE_FROM_CHARS} stays in the item as it is.
 */
export function splitItem(item: Record<string, unknown>): SplitItem {
  // Most items of short pages keep everything: written as they are, without a copy.
  if (keepsAll(item)) return { itemJson: JSON.stringify(item), texts: {} };
  // Without a prototype, a `__proto__` key is kept as a key like any other.
  const kept: Record<string, unknown> = Object.create(null);
  const texts: ContentTexts = {};
  let extra: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(item)) {
    const text = contentText(key, value);
    if (text !== undefined && text.length >= STORE_FROM_CHARS) {
      texts[key as ContentKind] = text;
      kept[key] = 0;
    } else {
      kept[key] = value;
      if (text === undefined && !LISTING_KEYS.has(key) && !(key in CONTENT_COLUMNS)) {
        if (value !== undefined) {
          extra ??= Object.create(null) as Record<string, unknown>;
          extra[key] = value;
        }
      }
    }
  }
  if (extra !== undefined) {
    const text = JSON.stringify(extra);
    if (text.length >= STORE_FROM_CHARS) {
      texts.extra = text;
      // Overwriting a key keeps its place: the item is restored key for key.
      for (const key of Object.keys(extra)) kept[key] = 0;
    }
  }
  return { itemJson: JSON.stringify(kept), texts };
}

/**
 * Whether `splitItem` keeps the whole item: no content value long enough to be stored, and no
 * other outputs (`extra`, whose length the full split measures).
 */
function keepsAll(item: Record<string, unknown>): boolean {
  for (const key of Object.keys(item)) {
    const value = item[key];
    if (key === 'markdown' || key === 'html' || key === 'rawHtml') {
      if (typeof value === 'string' && value.length >= STORE_FROM_CHARS) return false;
    } else if (key === 'links' || key === 'metadata') {
      const text = contentText(key, value);
      if (text !== undefined && text.length >= STORE_FROM_CHARS) return false;
    } else if (!LISTING_KEYS.has(key) && !(key in CONTENT_COLUMNS) && value !== undefined) {
      return false;
    }
  }
  return true;
}

/** The texts of `kinds` an item carries, as `splitItem` reads them, whatever their length. */
export function splitItemTexts(
  item: Record<string, unknown>,
  kinds: readonly ContentKind[],
): ContentTexts {
  const texts: ContentTexts = {};
  for (const kind of kinds) {
    const text = contentText(kind, item[kind]);
    if (text !== undefined) texts[kind] = text;
  }
  return texts;
}

/** The item's JSON as the API sent it, from `item_json` and its content texts. */
export function restoreItemJson(itemJson: string, texts: ContentTexts): string {
  const { extra, ...values } = texts;
  if (extra === undefined && Object.keys(values).length === 0) return itemJson;
  const item = JSON.parse(itemJson) as Record<string, unknown>;
  for (const [key, text] of Object.entries(values)) {
    item[key] = key === 'links' || key === 'metadata' ? JSON.parse(text) : text;
  }
  if (extra !== undefined) Object.assign(item, JSON.parse(extra) as Record<string, unknown>);
  return JSON.stringify(item);
}

/** The key of a text: the first 16 bytes of its SHA-256. */
export function contentHash(text: string): Buffer {
  return oneShotHash('sha256', text, 'buffer').subarray(0, 16);
}

export interface EncodedContent {
  codec: number;
  /** The text's UTF-8 bytes. */
  size: number;
  data: Buffer;
}

function brotliOptions(bytes: Buffer): zlib.BrotliOptions {
  return {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
    },
  };
}

/** The text as it is, or compressed when that is smaller. */
function smaller(bytes: Buffer, codec: number, packed: Buffer): EncodedContent {
  return packed.length < bytes.length
    ? { codec, size: bytes.length, data: packed }
    : { codec: CODEC_TEXT, size: bytes.length, data: bytes };
}

/** `text` encoded with `codec` (this Node's {@link WRITE_CODEC} unless told). */
export function encodeContent(text: string, codec = WRITE_CODEC): EncodedContent {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length < COMPRESS_FROM_BYTES || codec === CODEC_TEXT) {
    return { codec: CODEC_TEXT, size: bytes.length, data: bytes };
  }
  if (codec === CODEC_ZSTD && zstd.zstdCompressSync) {
    return smaller(bytes, CODEC_ZSTD, zstd.zstdCompressSync(bytes));
  }
  return smaller(bytes, CODEC_BROTLI, zlib.brotliCompressSync(bytes, brotliOptions(bytes)));
}

/** The UTF-8 bytes of a stored value. */
export function decodeContent(codec: number, data: Buffer): Buffer {
  if (codec === CODEC_TEXT) return data;
  if (codec === CODEC_BROTLI) return zlib.brotliDecompressSync(data);
  if (codec === CODEC_ZSTD) {
    if (zstd.zstdDecompressSync) return zstd.zstdDecompressSync(data);
    throw new Error(
      `content stored with zstd, which Node ${process.versions.node} cannot read: open this database with Node 22.15 or later`,
    );
  }
  throw new Error(
    `content stored with codec ${codec}, which this harvest cannot read: upgrade harvest`,
  );
}

/**
 * Registers `harvest_content(codec, data)` on a connection: the stored value's text as a BLOB
 * (NULL for NULL). The last value is remembered: an export reads several fields of the same
 * metadata in one row.
 */
export function registerContentFunctions(db: Database): void {
  let lastCodec = -1;
  let lastData: Buffer | undefined;
  let lastText: Buffer | undefined;
  db.function(
    'harvest_content',
    { deterministic: true },
    (codec: unknown, data: unknown): Buffer | null => {
      if (!Buffer.isBuffer(data) || typeof codec !== 'number') return null;
      if (codec === CODEC_TEXT) return data;
      if (codec === lastCodec && lastData?.equals(data) && lastText) return lastText;
      lastText = decodeContent(codec, data);
      lastCodec = codec;
      lastData = data;
      return lastText;
    },
  );
}

/** SQL of the text of the content row aliased `alias` (NULL without one). */
export function contentSql(alias: string): string {
  return `CAST(CASE ${alias}.codec WHEN ${CODEC_TEXT} THEN ${alias}.data
    ELSE harvest_content(${alias}.codec, ${alias}.data) END AS TEXT)`;
}

export interface ContentWriter {
  /** Stores `text` unless stored already; returns its hash. */
  put(text: string): Buffer;
}

/** Writes contents: each value hashed, looked up, and compressed only when new. */
export function createContentWriter(db: Database): ContentWriter {
  const exists = db.prepare<[Buffer], number>('SELECT 1 FROM contents WHERE hash = ?').pluck();
  const insert = db.prepare<[Buffer, number, number, Buffer]>(
    'INSERT INTO contents (hash, codec, size, data) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  return {
    put(text) {
      const hash = contentHash(text);
      // A short value is inserted as it is (a conflict leaves the stored one); a longer one is
      // compressed only when it is not stored yet.
      if (text.length < COMPRESS_FROM_BYTES) {
        const data = Buffer.from(text, 'utf8');
        if (data.length < COMPRESS_FROM_BYTES) {
          insert.run(hash, CODEC_TEXT, data.length, data);
          return hash;
        }
      }
      if (exists.get(hash) === undefined) {
        const { codec, size, data } = encodeContent(text);
        insert.run(hash, codec, size, data);
      }
      return hash;
    },
  };
}

export interface DeletedContents {
  rows: number;
  /** Stored bytes of the rows removed (compressed sizes). */
  bytes: number;
}

/** The hashes result rows reference, as one SQL set. */
const REFERENCED = Object.values(CONTENT_COLUMNS)
  .map((column) => `SELECT ${column} FROM results WHERE ${column} IS NOT NULL`)
  .join('\nUNION ');

/** True when no result row references the content row `c` (one index lookup per column). */
const UNREFERENCED = Object.values(CONTENT_COLUMNS)
  .map((column) => `NOT EXISTS (SELECT 1 FROM results WHERE ${column} = c.hash)`)
  .join(' AND ');

/** Contents removed per transaction: each is checked again, by index, before it goes. */
export const DELETE_BATCH = 500;

/**
 * The hashes of the contents no result row references now: read without the write lock (a
 * scan of every result), so a pool keeps writing meanwhile. Removed by
 * {@link deleteContentBatch}, which checks each again.
 */
export function unreferencedContents(db: Database): Buffer[] {
  return db
    .prepare<[], Buffer>(`SELECT hash FROM contents WHERE hash NOT IN (${REFERENCED})`)
    .pluck()
    .all();
}

/**
 * Removes, in one short immediate transaction, those of `hashes` no result row references
 * (a row written since they were found keeps its content). Returns what it removed.
 */
export function deleteContentBatch(db: Database, hashes: readonly Buffer[]): DeletedContents {
  const remove = db
    .prepare<[Buffer], number>(
      `DELETE FROM contents AS c WHERE hash = ? AND ${UNREFERENCED} RETURNING length(data)`,
    )
    .pluck();
  return db
    .transaction(() => {
      const removed = { rows: 0, bytes: 0 };
      for (const hash of hashes) {
        const bytes = remove.get(hash);
        if (bytes === undefined) continue;
        removed.rows += 1;
        removed.bytes += bytes;
      }
      return removed;
    })
    .immediate();
}

/**
 * Removes the contents no result row references (after results were deleted), in batches of
 * {@link DELETE_BATCH}, each its own transaction, so the write lock is never held long.
 * `step` runs each batch (to time it; it runs it as it is by default).
 */
export function deleteUnreferencedContents(
  db: Database,
  step: (batch: () => DeletedContents) => DeletedContents = (batch) => batch(),
): DeletedContents {
  const hashes = unreferencedContents(db);
  const removed = { rows: 0, bytes: 0 };
  for (let i = 0; i < hashes.length; i += DELETE_BATCH) {
    const batch = hashes.slice(i, i + DELETE_BATCH);
    const done = step(() => deleteContentBatch(db, batch));
    removed.rows += done.rows;
    removed.bytes += done.bytes;
  }
  return removed;
}
