/**
 * Real-sized scraped pages of `content: 'corpus'`, put together from the corpus (corpus.ts) by
 * cheap steps: a page is runs of consecutive corpus blocks, 10 to 50 KB of Markdown, drawn from
 * the page's seed; its HTML joins the blocks' HTML inside the markup of its site; its raw HTML
 * adds a head with the site's style and scripts (and more scripts, as pages with widgets load),
 * 100 to 500 KB in all. Each revision replaces about a sixth of the page's blocks with others
 * (world.ts decides when a page is revised). The site's markup is the same on every page of a
 * host, as on a real site. Fields are JSON text joined from pieces escaped once (json-text.ts).
 */
import { type Corpus, corpus } from './corpus.ts';
import { createRandom, type Random } from './faults.ts';
import { escapeJson, JsonText } from './json-text.ts';
import { escapeHtml } from './markdown-html.ts';
import { seedOf } from './request-key.ts';
import { mix } from './world.ts';

export interface PageInfo {
  url: string;
  title: string;
  description: string;
}

/** The fields of a scraped corpus page, each made when asked for. */
export interface CorpusPage {
  markdown(): JsonText;
  html(): JsonText;
  rawHtml(): JsonText;
  links(): string[];
}

const MARKDOWN_CHARS = { min: 10_000, spread: 40_000 };
const RAW_HTML_CHARS = { min: 100_000, spread: 400_000 };
const RUN_BLOCKS = { min: 4, spread: 20 };
/** Share of a page's blocks that each revision replaces. */
const REVISED_SHARE = 1 / 6;
/** Salts of the page's and the site's random streams. */
const LAYOUT = 0x6c61796f;
const SITE = 0x73697465;
/** `\n\n` and `\n` as JSON text. */
const BLANK_LINE = '\\n\\n';
const NEWLINE = '\\n';

/** The blocks of a page at revision 0: runs of consecutive blocks until the size is reached. */
function pageBlocks(source: Corpus, random: Random): number[] {
  const target = MARKDOWN_CHARS.min + Math.floor(random() * MARKDOWN_CHARS.spread);
  const out: number[] = [];
  let chars = 0;
  while (chars < target) {
    let at = Math.floor(random() * source.blocks.length);
    const run = RUN_BLOCKS.min + Math.floor(random() * RUN_BLOCKS.spread);
    for (let n = 0; n < run && chars < target; n++, at = (at + 1) % source.blocks.length) {
      out.push(at);
      chars += source.blocks[at]!.length + 2;
    }
  }
  return out;
}

/** The blocks after `revision` revisions: each replaces about a sixth of them. */
function revised(source: Corpus, blocks: number[], pageSeed: number, revision: number): number[] {
  for (let r = 1; r <= revision; r++) {
    const random = createRandom(mix(pageSeed ^ LAYOUT, r));
    for (let i = 0; i < blocks.length; i++) {
      if (random() < REVISED_SHARE) blocks[i] = Math.floor(random() * source.blocks.length);
    }
  }
  return blocks;
}

/** What every page of one host shares; markup as JSON text. */
interface Site {
  navLinks: string[];
  /** The header with the navigation. */
  header: string;
  /** The head's elements after the title. */
  head: string;
  /** Script elements the site loads on every page. */
  scripts: string[];
}

const sites = new Map<string, Site>();
const MAX_SITES = 4096;

function siteOf(source: Corpus, origin: string): Site {
  let site = sites.get(origin);
  if (site) return site;
  const random = createRandom(seedOf(origin) ^ SITE);
  const pickOf = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const nav = Array.from({ length: 24 + Math.floor(random() * 40) }, () => {
    const heading = source.blocks[pickOf(source.headings)]!;
    const label = heading
      .replace(/^#+\s*/, '')
      .replace(/[`*_[\]]/g, '')
      .slice(0, 60);
    const path = label.toLowerCase().replace(/[^a-z0-9]+/g, '-');
    return { href: `${origin}/docs/${path.replace(/^-|-$/g, '') || 'page'}`, label };
  });
  const items = nav.map(
    (l) =>
      `<li class="nav-item"><a class="nav-link" href="${escapeHtml(l.href)}">${escapeHtml(l.label)}</a></li>`,
  );
  const host = escapeHtml(new URL(origin).host);
  const scripts = source.scripts.length === 0 ? 0 : 2 + Math.floor(random() * 4);
  site = {
    navLinks: nav.map((l) => l.href),
    header: escapeJson(
      `<header class="site-header"><a class="brand" href="${origin}/">${host}</a><nav aria-label="Main"><ul class="nav">${items.join('')}</ul></nav></header>`,
    ),
    head:
      escapeJson(
        `<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="${origin}/favicon.ico">`,
      ) + (source.styles.length > 0 ? pickOf(source.styles) : ''),
    scripts: Array.from({ length: scripts }, () => pickOf(source.scripts)),
  };
  if (sites.size >= MAX_SITES) sites.clear();
  sites.set(origin, site);
  return site;
}

export function corpusPage(page: PageInfo, pageSeed: number, revision: number): CorpusPage {
  const source = corpus();
  const start = pageBlocks(source, createRandom(pageSeed ^ LAYOUT));
  const blocks = revised(source, start, pageSeed, revision);
  const origin = new URL(page.url).origin;
  let html: string | undefined;
  const htmlJson = () => {
    if (html === undefined) {
      const site = siteOf(source, origin);
      const title = escapeHtml(page.title);
      const lead = escapeHtml(page.description);
      html =
        site.header +
        escapeJson(
          `<main class="content"><article class="markdown-body"><h1>${title}</h1><p class="lead">${lead}</p>\n`,
        ) +
        blocks.map((i) => source.htmlJson(i)).join(NEWLINE) +
        escapeJson(`</article></main><footer class="site-footer"><p>${origin}</p></footer>`);
    }
    return html;
  };
  return {
    markdown: () =>
      new JsonText(
        escapeJson(`# ${page.title}\n\n${page.description}\n\n`) +
          blocks.map((i) => source.markdownJson(i)).join(BLANK_LINE) +
          NEWLINE,
      ),
    html: () => new JsonText(htmlJson()),
    rawHtml: () => new JsonText(rawHtmlJson(source, page, pageSeed, revision, htmlJson())),
    links: () => {
      const out = new Set<string>([`${origin}/`, ...siteOf(source, origin).navLinks]);
      for (const i of blocks)
        for (const target of source.links(i)) out.add(absolute(target, origin));
      return [...out];
    },
  };
}

/** The whole document: head with title, style and scripts up to the page's size, then body. */
function rawHtmlJson(
  source: Corpus,
  page: PageInfo,
  pageSeed: number,
  revision: number,
  body: string,
): string {
  const site = siteOf(source, new URL(page.url).origin);
  const random = createRandom(mix(pageSeed ^ SITE, revision));
  const target = RAW_HTML_CHARS.min + Math.floor(random() * RAW_HTML_CHARS.spread);
  const data = JSON.stringify({ url: page.url, title: page.title, revision });
  const parts = [
    escapeJson(`<!DOCTYPE html><html lang="en"><head><title>${escapeHtml(page.title)}</title>`),
    site.head,
  ];
  let chars = parts[0]!.length + site.head.length + body.length;
  // The site's scripts, then more, until the page reaches its size.
  for (let n = 0; chars < target && source.scripts.length > 0 && n < 64; n++) {
    const script = site.scripts[n] ?? source.scripts[Math.floor(random() * source.scripts.length)]!;
    parts.push(script);
    chars += script.length;
  }
  parts.push(
    escapeJson('</head><body>'),
    body,
    escapeJson(
      `<script id="__PAGE_DATA__" type="application/json">${data.replace(/</g, '\\u003c')}</script></body></html>`,
    ),
  );
  return parts.join('');
}

function absolute(target: string, origin: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return target;
  return `${origin}/${target.replace(/^\.?\//, '')}`;
}
