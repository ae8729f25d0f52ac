/**
 * Markdown into blocks and blocks into HTML, for the sandbox's corpus pages: headings,
 * paragraphs, lists, block quotes, tables, fenced code and raw HTML blocks, with inline code,
 * links, images, bold and emphasis. Not a full CommonMark parser: enough to turn real
 * documentation into markup of realistic shape and size.
 */

/** Blocks separated by blank lines; a fenced code block is one block, blank lines and all. */
export function splitBlocks(markdown: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let fence: string | undefined;
  const flush = () => {
    const text = current.join('\n').trim();
    if (text) out.push(text);
    current = [];
  };
  for (const line of markdown.replace(/\r\n?/g, '\n').split('\n')) {
    const marker = /^\s*(```|~~~)/.exec(line)?.[1];
    if (fence) {
      current.push(line);
      if (marker === fence) {
        fence = undefined;
        flush();
      }
    } else if (marker) {
      flush();
      fence = marker;
      current.push(line);
    } else if (line.trim() === '') flush();
    else current.push(line);
  }
  flush();
  return out;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const attribute = (text: string) => escapeHtml(text).replace(/"/g, '&quot;');

/** Inline Markdown of one line or paragraph into HTML. */
export function inlineHtml(text: string): string {
  const codes: string[] = [];
  let out = text.replace(/`([^`]+)`/g, (_m, code: string) => {
    codes.push(`<code>${escapeHtml(code)}</code>`);
    return `\uE000${codes.length - 1}\uE001`;
  });
  out = escapeHtml(out)
    .replace(
      /!\[([^\]]*)\]\(([^)\s]+)[^)]*\)/g,
      (_m, alt: string, src: string) => `<img src="${attribute(src)}" alt="${attribute(alt)}">`,
    )
    .replace(
      /\[([^\]]+)\]\(([^)\s]+)[^)]*\)/g,
      (_m, label: string, href: string) => `<a href="${attribute(href)}">${label}</a>`,
    )
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[\s(])[*_]([^*_\s][^*_]*)[*_]/g, '$1<em>$2</em>');
  return out.replace(/\uE000(\d+)\uE001/g, (_m, i: string) => codes[Number(i)]!);
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

const LIST_ITEM = /^\s*(?:[-*+]|\d+[.)])\s+/;

function listHtml(lines: string[]): string {
  const ordered = /^\s*\d/.test(lines[0]!);
  const items: string[] = [];
  for (const line of lines) {
    if (LIST_ITEM.test(line)) items.push(line.replace(LIST_ITEM, ''));
    else if (items.length > 0) items[items.length - 1] += ` ${line.trim()}`;
  }
  const tag = ordered ? 'ol' : 'ul';
  return `<${tag}>${items.map((item) => `<li>${inlineHtml(item)}</li>`).join('')}</${tag}>`;
}

function tableHtml(lines: string[]): string {
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((cell) => inlineHtml(cell.trim()));
  const [head, , ...rows] = lines;
  const headRow = cells(head!)
    .map((c) => `<th>${c}</th>`)
    .join('');
  const bodyRows = rows.map(
    (row) =>
      `<tr>${cells(row)
        .map((c) => `<td>${c}</td>`)
        .join('')}</tr>`,
  );
  return `<table><thead><tr>${headRow}</tr></thead><tbody>${bodyRows.join('')}</tbody></table>`;
}

/** One block of `splitBlocks` as HTML. */
export function blockHtml(block: string): string {
  const fence = /^\s*(```|~~~)\s*([\w+-]*)[^\n]*\n?([\s\S]*?)\n?\s*\1?\s*$/.exec(block);
  if (fence) {
    const lang = fence[2] ? ` class="language-${fence[2]}"` : '';
    return `<pre><code${lang}>${escapeHtml(fence[3] ?? '')}</code></pre>`;
  }
  const heading = /^(#{1,6})\s+(.*)$/.exec(block);
  if (heading && !block.includes('\n')) {
    const level = heading[1]!.length;
    const text = heading[2]!.replace(/\s#+\s*$/, '');
    return `<h${level} id="${slug(text)}">${inlineHtml(text)}</h${level}>`;
  }
  const lines = block.split('\n');
  if (LIST_ITEM.test(lines[0]!)) return listHtml(lines);
  if (lines.every((line) => line.startsWith('>'))) {
    const text = lines.map((line) => line.replace(/^>\s?/, '')).join(' ');
    return `<blockquote><p>${inlineHtml(text)}</p></blockquote>`;
  }
  if (lines.length >= 2 && lines[0]!.includes('|') && /^\s*\|?\s*:?-+/.test(lines[1]!)) {
    return tableHtml(lines);
  }
  if (block.startsWith('<')) return block;
  return `<p>${inlineHtml(lines.join(' '))}</p>`;
}

/** Link targets of a block: Markdown links and images, and href attributes of raw HTML. */
export function blockLinks(block: string): string[] {
  const out: string[] = [];
  for (const m of block.matchAll(/\]\(([^)\s]+)[^)]*\)|href="([^"]+)"/g)) {
    const target = m[1] ?? m[2];
    if (target && !target.startsWith('#')) out.push(target);
  }
  return out;
}
