/** The fenced YAML blocks of a Markdown text, with where each starts. */

export interface YamlBlock {
  /** 1-based line of the block's first content line (the line after the opening fence). */
  line: number;
  text: string;
}

const OPEN = /^ {0,3}(`{3,}|~{3,})\s*(ya?ml)\b/i;

/** Every ```yaml (or ```yml, or ~~~yaml) block, in order. An unclosed block runs to the end. */
export function yamlBlocks(markdown: string): YamlBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: YamlBlock[] = [];
  let open: { fence: string; start: number; body: string[] } | undefined;
  let fence: string | undefined;
  for (const [index, line] of lines.entries()) {
    if (open) {
      if (line.trim().startsWith(open.fence) && line.trim().replace(/[`~]/g, '') === '') {
        blocks.push({ line: open.start, text: `${open.body.join('\n')}\n` });
        open = undefined;
      } else {
        open.body.push(line);
      }
      continue;
    }
    if (fence) {
      // Inside another fenced block (```sh, ```js, ...): a yaml fence there is not a block.
      if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '')
        fence = undefined;
      continue;
    }
    const match = OPEN.exec(line);
    if (match) {
      open = { fence: match[1]!, start: index + 2, body: [] };
      continue;
    }
    const other = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (other) fence = other[1];
  }
  if (open) blocks.push({ line: open.start, text: `${open.body.join('\n')}\n` });
  return blocks;
}

/** A block is a pipeline when it has a top-level `searches:` key. */
export function isPipelineBlock(block: YamlBlock): boolean {
  return /^searches\s*:/m.test(block.text);
}
