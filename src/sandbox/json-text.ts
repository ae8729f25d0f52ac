/**
 * Long strings whose JSON text is made once and reused: the corpus pages' fields are put
 * together from pieces escaped once each (corpus.ts), so answering them costs concatenation,
 * not escaping megabytes per answer. `stringifyWithText` writes a value holding such strings;
 * a plain `JSON.stringify` of one still gives the right JSON, only slower.
 */
import { randomBytes } from 'node:crypto';

/** Marks stand-ins in the skeleton; random per process, so no text of a request can match. */
const NONCE = randomBytes(8).toString('hex');
const STAND_IN = new RegExp(`"\\\\u0001${NONCE}:(\\d+)\\\\u0001"`, 'g');

let pending: string[] | undefined;

/** A string held as its JSON text without quotes (ASCII only: other characters as \\u escapes). */
export class JsonText {
  constructor(readonly json: string) {}

  toJSON(): string {
    if (!pending) return this.text();
    pending.push(this.json);
    return `\u0001${NONCE}:${pending.length - 1}\u0001`;
  }

  /** The string itself. */
  text(): string {
    return JSON.parse(`"${this.json}"`) as string;
  }

  get length(): number {
    return this.json.length;
  }
}

const NOT_ASCII = /[\u007f-\uffff]/g;
const unicodeEscape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * The JSON text of a string without its quotes, ASCII only: a one-byte string, which joins and
 * encodes for the socket fastest, whatever the text holds.
 */
export function escapeJson(text: string): string {
  return oneByte(JSON.stringify(text).slice(1, -1).replace(NOT_ASCII, unicodeEscape));
}

/**
 * The same ASCII text in V8's one-byte representation (a string made from a two-byte one keeps
 * two bytes per character, and joins and encodes several times slower).
 */
function oneByte(ascii: string): string {
  return Buffer.from(ascii, 'latin1').toString('latin1');
}

/** JSON.stringify of `value`, with the prepared text of each JsonText in it put in whole. */
export function stringifyWithText(value: unknown): string {
  const outer = pending;
  pending = [];
  let skeleton: string;
  let texts: string[];
  try {
    skeleton = JSON.stringify(value);
    texts = pending;
  } finally {
    pending = outer;
  }
  if (texts.length === 0) return skeleton;
  // Split on the stand-ins (captured: their numbers at odd places) and join with the texts.
  const parts = oneByte(skeleton.replace(NOT_ASCII, unicodeEscape)).split(STAND_IN);
  for (let i = 1; i < parts.length; i += 2) parts[i] = `"${texts[Number(parts[i])]}"`;
  return parts.join('');
}
