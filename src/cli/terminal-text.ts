/**
 * Text from outside harvest (an API's or a webhook receiver's error message, a reason stored in
 * Redis) made safe to print for a person. A terminal obeys control characters: ESC starts
 * sequences that set the window's title, clear the screen or move the cursor; CR and LF rewrite
 * or forge lines. Each C0 control character (U+0000–U+001F), DEL (U+007F) and each C1 control
 * character (U+0080–U+009F; U+009B is a one-character CSI) is shown as an escape (`\n`, `\r`,
 * `\t`, `\x1b`), so the text stays one line and reads as it was sent. JSON output needs none of
 * this: JSON.stringify escapes them itself.
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters it escapes.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOne(char: string): string {
  return NAMED[char] ?? `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;
}

/** `text` with every control character escaped; the same string when it has none. */
export function terminalText(text: string): string {
  return text.replace(CONTROL, escapeOne);
}

/** Text of several lines (a stack trace): each line escaped, the line breaks kept. */
export function terminalLines(text: string): string {
  return text.split('\n').map(terminalText).join('\n');
}
