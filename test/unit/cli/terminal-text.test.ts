import { describe, expect, it } from 'vitest';
import { terminalLines, terminalText } from '../../../src/cli/terminal-text.ts';

describe('terminalText', () => {
  it('escapes ESC, CR, LF, tab, the other C0 characters, DEL and C1', () => {
    expect(terminalText('\u001b]0;owned\u0007\u001b[2J')).toBe('\\x1b]0;owned\\x07\\x1b[2J');
    expect(terminalText('a\rb\nc\td')).toBe('a\\rb\\nc\\td');
    expect(terminalText('\u0000\u0008\u001f\u007f')).toBe('\\x00\\x08\\x1f\\x7f');
    // U+009B is a CSI of its own on terminals that read C1; U+0085 a line break to some.
    expect(terminalText('\u009b31m\u0085\u0080\u009f')).toBe('\\x9b31m\\x85\\x80\\x9f');
  });

  it('leaves printable text as it is, the rest of Unicode and backslashes included', () => {
    const text = 'HTTP 402: Insufficient credits — café 東京 \\x1b ü';
    expect(terminalText(text)).toBe(text);
    expect(terminalText('\u00a0\u00ff')).toBe('\u00a0\u00ff');
  });

  it('terminalLines keeps the line breaks of a stack trace and escapes within lines', () => {
    expect(terminalLines('Error: \u001b[2Jboom\n    at x (y.ts:1:2)')).toBe(
      'Error: \\x1b[2Jboom\n    at x (y.ts:1:2)',
    );
  });
});
