// Answers as Markdown: what renders, and a corpus of XSS payloads that must show as text and
// run nothing. Also: the vendored files are the pinned npm packages' (make ui-vendor).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { JSDOM } from 'jsdom';

import { renderMarkdown, setMarkdown } from '../js/markdown.js';

function rendered(text) {
  const dom = new JSDOM('<!doctype html><body><div id="a"></div></body>');
  const node = dom.window.document.getElementById('a');
  setMarkdown(node, text);
  return node;
}

describe('markdown', () => {
  test('headings, emphasis, lists, tables, links and code', () => {
    const node = rendered(
      '# Title\n\nSome **bold**, *it*, ~~old~~ and `code`.\n\n- one\n- two\n\n1. first\n\n' +
        '| a | b |\n|---|--:|\n| 1 | 2 |\n\n[docs](https://example.com/d)\n\n```rust\nfn main() {}\n```\n\n- [x] done\n',
    );
    assert.equal(node.querySelector('h1').textContent, 'Title');
    assert.equal(node.querySelector('strong').textContent, 'bold');
    assert.equal(node.querySelector('em').textContent, 'it');
    assert.equal(node.querySelector('del').textContent, 'old');
    assert.equal(node.querySelector('p code').textContent, 'code');
    assert.equal(node.querySelectorAll('ul li').length, 3);
    assert.equal(node.querySelector('ol li').textContent, 'first');
    assert.deepEqual([...node.querySelectorAll('td')].map((td) => td.textContent), ['1', '2']);
    assert.equal(node.querySelector('td[align="right"]').textContent, '2');
    const link = node.querySelector('a');
    assert.equal(link.getAttribute('href'), 'https://example.com/d');
    assert.equal(link.getAttribute('rel'), 'noopener noreferrer');
    assert.equal(link.getAttribute('target'), '_blank');
    const block = node.querySelector('.code-block');
    assert.equal(block.querySelector('pre code').textContent, 'fn main() {}\n');
    assert.equal(block.querySelector('button.copy').textContent, 'Copy');
    const box = node.querySelector('input[type="checkbox"]');
    assert.ok(box.checked && box.disabled);
    assert.ok(node.classList.contains('markdown'));
  });

  test('the copy button copies the code', async () => {
    const dom = new JSDOM('<!doctype html><body></body>');
    const copied = [];
    Object.defineProperty(dom.window.navigator, 'clipboard', {
      value: { writeText: async (t) => copied.push(t) },
    });
    const fragment = renderMarkdown(dom.window.document, '```\nls -la\n```');
    dom.window.document.body.append(fragment);
    const button = dom.window.document.querySelector('button.copy');
    button.click();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(copied, ['ls -la\n']);
    assert.equal(button.textContent, 'Copied');
  });
});

// Each payload as an answer: nothing that runs may reach the DOM.
const XSS = [
  '<script>window.pwned = 1</script>',
  '<img src=x onerror="window.pwned=1">',
  '<svg onload="window.pwned=1"><circle r=1></svg>',
  '<iframe src="javascript:window.pwned=1"></iframe>',
  '<a href="javascript:window.pwned=1">click</a>',
  '[click](javascript:window.pwned=1)',
  '[click](JaVaScRiPt:window.pwned=1)',
  '[click](&#106;avascript:window.pwned=1)',
  '[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)',
  '[click](vbscript:msgbox(1))',
  '![x](javascript:window.pwned=1)',
  '![x" onerror="window.pwned=1](https://e.com/x.png)',
  '<details open ontoggle="window.pwned=1">x</details>',
  '<math><mtext><table><mglyph><style><img src=x onerror=window.pwned=1>',
  '<form action="javascript:window.pwned=1"><button>go</button></form>',
  '<div style="background:url(javascript:window.pwned=1)">x</div>',
  '<object data="javascript:window.pwned=1"></object>',
  '<embed src="javascript:window.pwned=1">',
  '<body onload="window.pwned=1">',
  '<input autofocus onfocus="window.pwned=1">',
  '`<script>window.pwned=1</script>` in code',
  '```html\n<script>window.pwned=1</script>\n```',
  '<a href="https://ok.example" onclick="window.pwned=1">ok</a>',
  '[ok](https://ok.example "title\\" onmouseover=\\"window.pwned=1")',
  '<<script>script>window.pwned=1<</script>/script>',
  '<scr<script>ipt>window.pwned=1</scr</script>ipt>',
  '<noscript><p title="</noscript><img src=x onerror=window.pwned=1>">',
  '<meta http-equiv="refresh" content="0;url=javascript:window.pwned=1">',
  '<base href="javascript:/">',
  '<link rel=import href="data:text/html,<script>window.pwned=1</script>">',
];

describe('XSS corpus', () => {
  for (const payload of XSS) {
    test(payload, () => {
      const dom = new JSDOM('<!doctype html><body><div id="a"></div></body>', { runScripts: 'dangerously' });
      const node = dom.window.document.getElementById('a');
      setMarkdown(node, payload);
      const elements = [...node.querySelectorAll('*')];
      const allowed = new Set(['A', 'BLOCKQUOTE', 'BR', 'BUTTON', 'CODE', 'DEL', 'DIV', 'EM', 'INPUT', 'LI', 'OL', 'P', 'PRE', 'STRONG', 'TABLE', 'TBODY', 'TD', 'TH', 'THEAD', 'TR', 'UL', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'HR']);
      for (const e of elements) {
        assert.ok(allowed.has(e.tagName), `${e.tagName} from ${payload}: ${node.innerHTML}`);
        for (const attr of e.getAttributeNames()) {
          assert.ok(!attr.startsWith('on'), `${attr} on ${e.tagName}: ${node.innerHTML}`);
          assert.notEqual(attr, 'style', node.innerHTML);
        }
        const href = e.getAttribute('href');
        if (href !== null) assert.match(href, /^(https?:|mailto:)/i, node.innerHTML);
      }
      for (const e of node.querySelectorAll('button')) e.click();
      for (const a of node.querySelectorAll('a')) a.dispatchEvent(new dom.window.MouseEvent('mouseover'));
      assert.equal(dom.window.pwned, undefined, node.innerHTML);
      // HTML the model wrote shows as the text it is.
      if (payload.startsWith('<script>')) assert.match(node.textContent, /<script>window\.pwned = 1<\/script>/);
    });
  }
});

test('the vendored renderer and sanitizer are the pinned packages (make ui-vendor)', () => {
  const strip = (s) => s.replace(/^\/\/# sourceMappingURL=.*\n?/m, '');
  const read = (p) => readFileSync(new URL(p, import.meta.url), 'utf8');
  assert.equal(read('../vendor/marked.js'), strip(read('../node_modules/marked/lib/marked.esm.js')));
  assert.equal(read('../vendor/purify.js'), strip(read('../node_modules/dompurify/dist/purify.es.mjs')));
  assert.equal(read('../vendor/marked.LICENSE.txt'), read('../node_modules/marked/LICENSE'));
  assert.equal(read('../vendor/purify.LICENSE.txt'), read('../node_modules/dompurify/LICENSE'));
});
