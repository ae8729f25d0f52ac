/**
 * A look at a YAML text's tokens before it is parsed (the yaml package's lexer: linear, and it
 * builds nothing). It bounds the parse: the parser's cost grows faster than the text with the
 * nesting, so text that nests beyond `maxDepth` is refused here, at the token that went too
 * deep, before it is parsed. It also notes where quoted values and flow collections that are
 * never closed open, since the parser reports them where it gave up (often the end of the file).
 *
 * Nesting is estimated: flow brackets are counted exactly; block collections count one level
 * for each column that a line (or a node after `- ` or `? `) starts right of the enclosing one.
 * That is at least half the levels the parser builds (a list written at its key's column shares
 * the key's level) and at most one more than it on any line.
 */
import { CST, Lexer } from 'yaml';

export interface Unclosed {
  /** Character offset of the opening quote or bracket. */
  offset: number;
  /** What opens it: a quote, `[` or `{`. */
  opener: '"' | "'" | '[' | '{';
}

export interface YamlScan {
  /** Offset of the token at which the nesting went beyond `maxDepth`; the scan stopped there. */
  tooDeepAt: number | undefined;
  /** Quoted values and flow collections never closed, in text order. */
  unclosed: Unclosed[];
}

/** Tokens the lexer inserts that are not text of the source. */
const MARKERS: ReadonlySet<string> = new Set([CST.DOCUMENT, CST.FLOW_END, CST.SCALAR]);
/** Tokens that open a nested block node on the same line. */
const BLOCK_INDICATORS: ReadonlySet<string> = new Set(['seq-item-ind', 'explicit-key-ind']);
/** Tokens that neither start a node nor change the nesting. */
const LAYOUT: ReadonlySet<string> = new Set([
  'space',
  'newline',
  'comment',
  'doc-mode',
  'doc-start',
  'doc-end',
  'directive-line',
  'byte-order-mark',
  'comma',
  'map-value-ind',
]);

export function scanYaml(text: string, maxDepth: number): YamlScan {
  const unclosed: Unclosed[] = [];
  const flows: Unclosed[] = [];
  const blockColumns: number[] = [];
  let offset = 0;
  let lineStart = 0;
  let lastNodeLine = -1;
  let afterIndicator = false;
  let scalarSource = false;
  for (const token of new Lexer().lex(text)) {
    if (MARKERS.has(token)) {
      if (token === CST.SCALAR) scalarSource = true;
      else if (token === CST.FLOW_END) unclosed.push(...flows.splice(0));
      continue;
    }
    const start = offset;
    offset += token.length;
    const type = scalarSource ? 'scalar' : CST.tokenType(token);
    scalarSource = false;
    const newline = token.lastIndexOf('\n');
    if (type !== null && !LAYOUT.has(type) && flows.length === 0) {
      const column = start - lineStart;
      if (lineStart !== lastNodeLine) {
        while ((blockColumns.at(-1) ?? -1) > column) blockColumns.pop();
      }
      if ((lineStart !== lastNodeLine || afterIndicator) && (blockColumns.at(-1) ?? -1) < column) {
        blockColumns.push(column);
      }
      lastNodeLine = lineStart;
      afterIndicator = BLOCK_INDICATORS.has(type);
    }
    if (type === 'flow-seq-start' || type === 'flow-map-start') {
      flows.push({ offset: start, opener: token === '[' ? '[' : '{' });
    } else if (type === 'flow-seq-end' || type === 'flow-map-end') {
      if (flows.at(-1)?.opener === (token === ']' ? '[' : '{')) flows.pop();
    } else if (type === 'single-quoted-scalar' || type === 'double-quoted-scalar') {
      if (!quoteClosed(token)) unclosed.push({ offset: start, opener: token[0] as '"' | "'" });
    }
    if (blockColumns.length + flows.length > maxDepth) return { tooDeepAt: start, unclosed };
    if (newline >= 0) lineStart = start + newline + 1;
  }
  unclosed.push(...flows);
  return { tooDeepAt: undefined, unclosed: unclosed.sort((a, b) => a.offset - b.offset) };
}

/** Whether a quoted scalar's source ends with its closing quote. */
function quoteClosed(source: string): boolean {
  const quote = source[0];
  if (source.length < 2) return false;
  if (quote === "'") {
    // '' is an escaped quote; the first lone ' closes.
    for (let i = 1; i < source.length; i++) {
      if (source[i] !== "'") continue;
      if (source[i + 1] === "'") i += 1;
      else return i === source.length - 1;
    }
    return false;
  }
  if (!source.endsWith('"')) return false;
  let backslashes = 0;
  for (let i = source.length - 2; i > 0 && source[i] === '\\'; i--) backslashes += 1;
  return backslashes % 2 === 0;
}
