import { describe, expect, it } from 'vitest';
import { escapeJson, JsonText, stringifyWithText } from '../../../src/sandbox/json-text.ts';
import { blockHtml, splitBlocks } from '../../../src/sandbox/markdown-html.ts';
import { corpusPage } from '../../../src/sandbox/pages.ts';
import { SearchEngine } from '../../../src/sandbox/search.ts';
import { resolveWorld } from '../../../src/sandbox/world-options.ts';
import { app, search } from './helpers.ts';

const page = (n: number) => ({
  url: `https://docs.example.org/page-${n}`,
  title: `Page ${n}: "quotes" & <tags>`,
  description: `About page ${n}, ünïcödé 🚀`,
});

describe('corpus pages', () => {
  it('are real-sized: 10-50 KB of markdown, 100-500 KB-ish of raw HTML, with links', () => {
    for (let n = 0; n < 30; n++) {
      const p = corpusPage(page(n), n * 7919, 0);
      const markdown = p.markdown().text();
      const html = p.html().text();
      const rawHtml = p.rawHtml().text();
      expect(markdown.length).toBeGreaterThanOrEqual(10_000);
      expect(markdown.length).toBeLessThan(60_000);
      expect(markdown.startsWith(`# ${page(n).title}\n\n${page(n).description}\n\n`)).toBe(true);
      expect(html.length).toBeGreaterThan(markdown.length);
      expect(rawHtml.length).toBeGreaterThanOrEqual(100_000);
      expect(rawHtml.length).toBeLessThan(700_000);
      expect(rawHtml).toMatch(
        /^<!DOCTYPE html><html lang="en"><head><title>Page \d+: "quotes" &amp; &lt;tags&gt;<\/title>/,
      );
      expect(rawHtml).toContain(html);
      expect(p.links().length).toBeGreaterThan(20);
      expect(p.links().every((l) => /^[a-z][a-z0-9+.-]*:/i.test(l))).toBe(true);
    }
  });

  it('are the same for the same page and revision; a revision changes about a sixth', () => {
    const a = corpusPage(page(1), 42, 0).markdown().text();
    expect(corpusPage(page(1), 42, 0).markdown().text()).toBe(a);
    const b = corpusPage(page(1), 42, 1).markdown().text();
    expect(b).not.toBe(a);
    const before = new Set(splitBlocks(a));
    const blocks = splitBlocks(b);
    const kept = blocks.filter((block) => before.has(block)).length / blocks.length;
    expect(kept).toBeGreaterThan(0.65);
    expect(kept).toBeLessThan(0.97);
  });

  it('answer as valid JSON through the engine, in corpus mode only', async () => {
    const sandbox = app({ content: 'corpus' });
    const res = await search(sandbox, {
      query: 'corpus',
      limit: 3,
      scrapeOptions: { formats: ['markdown', 'html', 'rawHtml', 'links', 'summary', 'screenshot'] },
    });
    expect(res.status).toBe(200);
    expect(/[\u0080-\uffff]/.test(res.body)).toBe(false);
    const docs = res.json().data.web.filter((d: { markdown?: string }) => d.markdown);
    expect(docs.length).toBeGreaterThan(0);
    for (const d of docs) {
      expect(d.markdown.length).toBeGreaterThanOrEqual(10_000);
      expect(d.rawHtml.length).toBeGreaterThanOrEqual(100_000);
      expect(d.summary).toEqual(expect.any(String));
      expect(d.screenshot).toMatch(/\/media\//);
    }
    await sandbox.close();
    const short = new SearchEngine(0, resolveWorld({})).generate({
      query: 'corpus',
      limit: 3,
      scrapeOptions: { formats: ['markdown'] },
    } as never);
    expect(short.dataJson!.length).toBeLessThan(3000);
  });
});

describe('JSON text', () => {
  it('joins prepared text into JSON equal to JSON.stringify', () => {
    const texts = ['plain', 'quote " backslash \\ newline \n tab \t', 'ünï 🚀 \u2028', '\u0001x'];
    const value = { a: texts.map((t) => new JsonText(escapeJson(t))), b: 'ü \u0001', n: 1 };
    const expected = JSON.stringify({ a: texts, b: 'ü \u0001', n: 1 });
    expect(JSON.parse(stringifyWithText(value))).toEqual(JSON.parse(expected));
    expect(JSON.stringify(value)).toBe(expected);
    expect(new JsonText(escapeJson(texts[1]!)).text()).toBe(texts[1]);
  });
});

describe('markdown blocks', () => {
  it('splits on blank lines, keeping fenced code whole, and renders each block', () => {
    const blocks = splitBlocks(
      '# Title\n\nSome *text* and `code`.\n\n```js\na();\n\nb();\n```\n\n- one\n- [two](https://x.y)\n',
    );
    expect(blocks).toEqual([
      '# Title',
      'Some *text* and `code`.',
      '```js\na();\n\nb();\n```',
      '- one\n- [two](https://x.y)',
    ]);
    expect(blocks.map(blockHtml)).toEqual([
      '<h1 id="title">Title</h1>',
      '<p>Some <em>text</em> and <code>code</code>.</p>',
      '<pre><code class="language-js">a();\n\nb();</code></pre>',
      '<ul><li>one</li><li><a href="https://x.y">two</a></li></ul>',
    ]);
  });
});
