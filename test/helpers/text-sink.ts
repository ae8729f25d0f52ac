/** A writable stream that keeps what is written to it, as text (a command's stdout, say). */
import { Writable } from 'node:stream';

export function textSink(): Writable & { text(): string } {
  let text = '';
  const w = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return Object.assign(w, { text: () => text });
}
