/**
 * The text corpus of `content: 'corpus'` pages: the Markdown documentation (READMEs, docs/) of
 * the packages installed under the nearest node_modules, split into blocks, and the scripts and
 * styles of their builds, for the markup around a page. Read once per process, on first use, in
 * sorted path order, so the same installed packages (`npm ci` of one package-lock.json) give the
 * same corpus. Each block is escaped as JSON text (and turned into HTML) once, when first needed.
 */
import { type Dirent, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from '../errors.ts';
import { escapeJson } from './json-text.ts';
import { blockHtml, blockLinks, splitBlocks } from './markdown-html.ts';

export interface Corpus {
  /** Markdown blocks (paragraphs, headings, lists, fenced code, tables), in reading order. */
  blocks: string[];
  /** Indexes into `blocks` of headings of level 1 to 3 (titles for navigation links). */
  headings: number[];
  /** `<script>` elements with the scripts of the packages' builds, as JSON text (json-text.ts). */
  scripts: string[];
  /** `<style>` elements with the packages' style sheets, as JSON text (none when none ship). */
  styles: string[];
  /** Block `i` as JSON text, escaped on first use. */
  markdownJson(i: number): string;
  /** The HTML of block `i` as JSON text, converted on first use. */
  htmlJson(i: number): string;
  /** The absolute and site-relative link targets of block `i`. */
  links(i: number): string[];
}

/** Bounds of what is read: characters of Markdown, files and characters of scripts. */
const MAX_MARKDOWN_CHARS = 8 * 1024 * 1024;
const MAX_SCRIPTS = 64;
const SCRIPT_CHARS = { min: 4 * 1024, max: 120 * 1024 };
const MAX_STYLES = 16;
/** Longer blocks (whole changelogs in one list, generated tables) are left out. */
const MAX_BLOCK_CHARS = 8 * 1024;
/** A corpus with fewer blocks cannot make varied pages. */
const MIN_BLOCKS = 200;

let loaded: Corpus | undefined;

/** The corpus of this process, read on the first call. Throws when too little is installed. */
export function corpus(): Corpus {
  loaded ??= loadCorpus(nodeModulesDir());
  return loaded;
}

/** The node_modules folder nearest above this module. */
function nodeModulesDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'node_modules');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new UsageError(
        'content corpus: no node_modules folder above the sandbox (run npm ci), or use content short',
      );
    }
    dir = parent;
  }
}

function entries(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
  } catch {
    return [];
  }
}

/** Package folders directly under node_modules (scoped ones included), sorted. */
function packageDirs(root: string): string[] {
  const out: string[] = [];
  for (const entry of entries(root)) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const dir = join(root, entry.name);
    if (entry.name.startsWith('@')) {
      for (const sub of entries(dir)) if (sub.isDirectory()) out.push(join(dir, sub.name));
    } else out.push(dir);
  }
  return out;
}

/** Files under `dir` (not in nested node_modules) whose names pass `keep`, to `depth` levels. */
function filesUnder(dir: string, keep: (name: string) => boolean, depth: number): string[] {
  const out: string[] = [];
  for (const entry of entries(dir)) {
    const path = join(dir, entry.name);
    if (entry.isFile() && keep(entry.name)) out.push(path);
    else if (entry.isDirectory() && depth > 0 && entry.name !== 'node_modules') {
      out.push(...filesUnder(path, keep, depth - 1));
    }
  }
  return out;
}

const isMarkdown = (name: string) => /\.md$/i.test(name) && !/^licen[cs]e/i.test(name);

function loadCorpus(root: string): Corpus {
  const packages = packageDirs(root);
  const blocks: string[] = [];
  let chars = 0;
  for (const pkg of packages) {
    const docs = [
      ...filesUnder(pkg, isMarkdown, 0),
      ...filesUnder(join(pkg, 'docs'), isMarkdown, 3),
    ];
    for (const file of docs) {
      if (chars >= MAX_MARKDOWN_CHARS) break;
      const text = readFileSync(file, 'utf8');
      chars += text.length;
      for (const block of splitBlocks(text))
        if (block.length <= MAX_BLOCK_CHARS) blocks.push(block);
    }
  }
  if (blocks.length < MIN_BLOCKS) {
    throw new UsageError(
      `content corpus: only ${blocks.length} blocks of package documentation under ${root} ` +
        `(needs ${MIN_BLOCKS}; run npm ci), or use content short`,
    );
  }
  const headings: number[] = [];
  blocks.forEach((block, i) => {
    if (/^#{1,3} \S/.test(block)) headings.push(i);
  });
  const markdown: Array<string | undefined> = [];
  const html: Array<string | undefined> = [];
  const links: Array<string[] | undefined> = [];
  return {
    blocks,
    headings,
    scripts: builds(packages, '.js', MAX_SCRIPTS).map((js) =>
      escapeJson(`<script>${js.replace(/<\/script/gi, '<\\/script')}</script>`),
    ),
    styles: builds(packages, '.css', MAX_STYLES).map((css) => escapeJson(`<style>${css}</style>`)),
    markdownJson: (i) => {
      let text = markdown[i];
      if (text === undefined) markdown[i] = text = escapeJson(blocks[i]!);
      return text;
    },
    htmlJson: (i) => {
      let text = html[i];
      if (text === undefined) html[i] = text = escapeJson(blockHtml(blocks[i]!));
      return text;
    },
    links: (i) => {
      let found = links[i];
      if (found === undefined) links[i] = found = blockLinks(blocks[i]!);
      return found;
    },
  };
}

/** Up to `max` build files (`ext`) of a sensible size from the packages' dist/ folders, spread. */
function builds(packages: string[], ext: string, max: number): string[] {
  const paths: string[] = [];
  for (const pkg of packages) {
    for (const path of filesUnder(join(pkg, 'dist'), (name) => name.endsWith(ext), 2)) {
      const size = statSync(path).size;
      if (size >= SCRIPT_CHARS.min && size <= SCRIPT_CHARS.max) paths.push(path);
    }
  }
  const step = Math.max(1, Math.floor(paths.length / max));
  const out: string[] = [];
  for (let i = 0; i < paths.length && out.length < max; i += step) {
    out.push(readFileSync(paths[i]!, 'utf8'));
  }
  return out;
}
