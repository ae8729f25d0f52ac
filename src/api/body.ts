/**
 * Bodies of HTTP answers that are not read whole (undici's BodyReadable): the start of an error
 * answer, kept to quote, and a body dropped unread. Shared by media downloads and webhooks.
 */

/** An answer's body as undici gives it. */
export interface AnswerBody extends AsyncIterable<Buffer> {
  on(event: 'error', listener: () => void): unknown;
  destroy(): unknown;
}

/** Drops a body not to be read (further); its abort is not an error anyone waits for. */
export function discardBody(body: Pick<AnswerBody, 'on' | 'destroy'>): void {
  body.on('error', () => {});
  body.destroy();
}

/**
 * The first `maxBytes` of a body as UTF-8, the rest not read; what was read when the body
 * breaks off (the status is what counts, the text a nicety).
 */
export async function readBodyStart(body: AnswerBody, maxBytes: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      parts.push(chunk);
      size += chunk.length;
      if (size >= maxBytes) break;
    }
  } catch {
    // Broken off: what came is enough.
  } finally {
    discardBody(body);
  }
  return Buffer.concat(parts).subarray(0, maxBytes).toString('utf8');
}
