// Unit tests for ui/js/render.js and ui/js/emoji.js. Run with `npm test` from ui/.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { bubble, el, setToolStatus, summarizeArgs, toolRow } from '../js/render.js';
import { DEFAULT_EMOJI, MCP_EMOJI, MCP_SEPARATOR, TOOL_EMOJI, toolEmoji } from '../js/emoji.js';

function newDoc(t) {
  const dom = new JSDOM('<!doctype html><body></body>');
  t.after(() => dom.window.close());
  return dom.window.document;
}

const parts = (row) => ({
  emoji: row.querySelector('.tool-emoji')?.textContent,
  name: row.querySelector('.tool-name')?.textContent,
  summary: row.querySelector('.tool-summary')?.textContent ?? null,
  status: row.querySelector('.tool-status')?.textContent,
});

// ---------------------------------------------------------------------------------------
// emoji.js

describe('toolEmoji', () => {
  test('the built-in tools', () => {
    assert.equal(toolEmoji('read_file'), '📖');
    assert.equal(toolEmoji('write_file'), '📝');
    assert.equal(toolEmoji('patch'), '🩹');
    assert.equal(toolEmoji('search_files'), '🔍');
    assert.equal(toolEmoji('shell'), '💻');
    assert.equal(toolEmoji('plan'), '📋');
    assert.equal(toolEmoji('web_fetch'), '🌐');
    assert.equal(toolEmoji('clarify'), '❓');
  });

  test('the table holds exactly the built-in tools and is frozen', () => {
    assert.deepEqual(
      { ...TOOL_EMOJI },
      {
        read_file: '📖',
        write_file: '📝',
        patch: '🩹',
        search_files: '🔍',
        shell: '💻',
        background: '⏳',
        plan: '📋',
        glob: '📂',
        batch_read: '📚',
        batch_patch: '🧩',
        web_fetch: '🌐',
        web_search: '🔎',
        browser: '🧭',
        clarify: '❓',
        delegate_tasks: '🤝',
      },
    );
    assert.ok(Object.isFrozen(TOOL_EMOJI));
  });

  test('MCP tools and everything else', () => {
    assert.equal(MCP_EMOJI, '🔌');
    assert.equal(DEFAULT_EMOJI, '🔧');
    assert.equal(MCP_SEPARATOR, '__');
    assert.equal(toolEmoji('srv__echo'), '🔌');
    assert.equal(toolEmoji('github__create_issue'), '🔌');
    assert.equal(toolEmoji('unknown_tool'), '🔧');
    assert.equal(toolEmoji('srv_echo'), '🔧');
    assert.equal(toolEmoji(''), '🔧');
    assert.equal(toolEmoji(undefined), '🔧');
    assert.equal(toolEmoji(null), '🔧');
    assert.equal(toolEmoji(42), '🔧');
    // Names inherited from Object.prototype are not table entries.
    assert.equal(toolEmoji('toString'), '🔧');
    assert.equal(toolEmoji('constructor'), '🔧');
  });
});

// ---------------------------------------------------------------------------------------
// render.js

describe('el', () => {
  test('tag, class and text through textContent', (t) => {
    const doc = newDoc(t);
    const node = el(doc, 'span', 'a b', '<i>x</i>');
    assert.equal(node.tagName, 'SPAN');
    assert.equal(node.className, 'a b');
    assert.equal(node.textContent, '<i>x</i>');
    assert.equal(node.children.length, 0);
  });

  test('no class, no text; falsy-but-real text is kept', (t) => {
    const doc = newDoc(t);
    const bare = el(doc, 'div');
    assert.equal(bare.hasAttribute('class'), false);
    assert.equal(bare.textContent, '');
    assert.equal(el(doc, 'div', '', null).textContent, '');
    assert.equal(el(doc, 'div', '', 0).textContent, '0');
    assert.equal(el(doc, 'div', '', '').textContent, '');
  });
});

describe('toolRow', () => {
  const cases = [
    ['plan', '📋'],
    ['read_file', '📖'],
    ['shell', '💻'],
    ['srv__echo', '🔌'],
    ['mystery_tool', '🔧'],
  ];
  for (const [tool, emoji] of cases) {
    test(`${tool} → ${emoji}`, (t) => {
      const doc = newDoc(t);
      const row = toolRow(doc, { tool, summary: 'src/main.rs' });
      assert.equal(row.tagName, 'LI');
      assert.ok(row.classList.contains('tool-row'));
      assert.equal(row.dataset.tool, tool);
      assert.deepEqual(parts(row), { emoji, name: tool, summary: 'src/main.rs', status: 'running…' });
      assert.equal(row.querySelector('.tool-emoji').getAttribute('aria-hidden'), 'true');
      assert.equal(row.dataset.status, 'running');
    });
  }

  test('children in order: emoji, name, summary, status', (t) => {
    const doc = newDoc(t);
    const row = toolRow(doc, { tool: 'shell', summary: 'cargo' });
    assert.deepEqual(
      [...row.children].map((c) => c.className),
      ['tool-emoji', 'tool-name', 'tool-summary', 'tool-status'],
    );
  });

  test('no summary element without a summary', (t) => {
    const doc = newDoc(t);
    const row = toolRow(doc, { tool: 'plan' });
    assert.equal(row.querySelector('.tool-summary'), null);
    assert.equal(row.children.length, 3);
    assert.equal(parts(row).status, 'running…');
  });

  test('an initial status other than running', (t) => {
    const doc = newDoc(t);
    const row = toolRow(doc, { tool: 'plan', status: 'ok' });
    assert.equal(parts(row).status, 'done');
    assert.equal(row.dataset.status, 'ok');
  });

  test('running… → done · 1.2s', (t) => {
    const doc = newDoc(t);
    const row = toolRow(doc, { tool: 'read_file', summary: 'src/a.rs' });
    assert.equal(parts(row).status, 'running…');
    setToolStatus(row, 'ok', 1234);
    assert.equal(parts(row).status, 'done · 1.2s');
    assert.equal(row.dataset.status, 'ok');
    // Only the status changed.
    assert.deepEqual(parts(row), { emoji: '📖', name: 'read_file', summary: 'src/a.rs', status: 'done · 1.2s' });
    assert.equal(row.querySelectorAll('.tool-status').length, 1);
  });

  test('running… → failed', (t) => {
    const doc = newDoc(t);
    const row = toolRow(doc, { tool: 'shell', summary: 'cargo' });
    setToolStatus(row, 'failed');
    assert.equal(parts(row).status, 'failed');
    assert.equal(row.dataset.status, 'failed');
    setToolStatus(row, 'failed', 500);
    assert.equal(parts(row).status, 'failed · 0.5s');
  });

  test('durations are shown in seconds with one decimal', (t) => {
    const doc = newDoc(t);
    const row = toolRow(doc, { tool: 'plan' });
    for (const [ms, text] of [
      [0, 'done · 0.0s'],
      [1000, 'done · 1.0s'],
      [61_500, 'done · 61.5s'],
    ]) {
      setToolStatus(row, 'ok', ms);
      assert.equal(parts(row).status, text);
    }
    setToolStatus(row, 'ok');
    assert.equal(parts(row).status, 'done');
    setToolStatus(row, 'running');
    assert.equal(parts(row).status, 'running…');
  });

  test('a hostile tool name and summary stay text', (t) => {
    const doc = newDoc(t);
    const tool = '<img src=x onerror=alert(1)>';
    const summary = '<img src=y onerror=alert(2)>';
    const row = toolRow(doc, { tool, summary });
    doc.body.append(row);
    assert.equal(doc.querySelectorAll('img').length, 0);
    assert.equal(parts(row).name, tool);
    assert.equal(parts(row).summary, summary);
    assert.equal(parts(row).emoji, '🔧');
    assert.equal(row.dataset.tool, tool);
    assert.equal(row.querySelectorAll('*').length, 4);
  });
});

describe('summarizeArgs', () => {
  test('picks verb, argv0 and path, nothing else', () => {
    assert.equal(summarizeArgs({ verb: 'create', class: 'safe' }), 'create');
    assert.equal(summarizeArgs({ argv0: 'cargo', class: 'x' }), 'cargo');
    assert.equal(summarizeArgs({ path: 'src/a.rs' }), 'src/a.rs');
    assert.equal(summarizeArgs({ verb: 'update', path: 'PLAN' }), 'update PLAN');
    assert.equal(summarizeArgs({ path: 'p', argv0: 'a', verb: 'v' }), 'v a p');
  });

  test('empty for nothing useful', () => {
    assert.equal(summarizeArgs(null), '');
    assert.equal(summarizeArgs(undefined), '');
    assert.equal(summarizeArgs('verb'), '');
    assert.equal(summarizeArgs(42), '');
    assert.equal(summarizeArgs({}), '');
    assert.equal(summarizeArgs({ class: 'safe', bytes: 10 }), '');
    assert.equal(summarizeArgs({ verb: '', path: 7, argv0: ['cargo'] }), '');
  });
});

describe('bubble', () => {
  test('assistant text stays text', (t) => {
    const doc = newDoc(t);
    const node = bubble(doc, 'assistant', '<b>x</b>');
    assert.equal(node.children.length, 0);
    assert.equal(node.childElementCount, 0);
    assert.equal(node.textContent, '<b>x</b>');
    assert.equal(node.dataset.role, 'assistant');
    assert.equal(node.getAttribute('data-role'), 'assistant');
    assert.equal(node.tagName, 'DIV');
    assert.deepEqual([...node.classList], ['msg', 'msg-assistant']);
  });

  test('user and notice bubbles', (t) => {
    const doc = newDoc(t);
    const user = bubble(doc, 'user', 'hello <script>alert(1)</script>');
    assert.equal(user.dataset.role, 'user');
    assert.ok(user.classList.contains('msg-user'));
    assert.equal(user.textContent, 'hello <script>alert(1)</script>');
    assert.equal(user.childElementCount, 0);
    const notice = bubble(doc, 'notice', 'Run cancelled');
    assert.equal(notice.dataset.role, 'notice');
    assert.ok(notice.classList.contains('msg-notice'));
  });
});

// ---------------------------------------------------------------------------------------
// The theme picker and the answer's figures.

import { answerStats, costText } from '../js/chat.js';
import { applyTheme, savedTheme, themePicker } from '../js/theme.js';

test('the theme is light, dark or the system, kept in storage', () => {
  const dom = new JSDOM('<!doctype html><body><select id="t"><option value="system"></option><option value="light"></option><option value="dark"></option></select></body>');
  const doc = dom.window.document;
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
  assert.equal(savedTheme(storage), 'system');
  assert.equal(applyTheme(doc, storage, 'dark'), 'dark');
  assert.equal(doc.documentElement.dataset.theme, 'dark');
  assert.equal(savedTheme(storage), 'dark');
  applyTheme(doc, storage, 'system');
  assert.equal(doc.documentElement.dataset.theme, undefined);
  assert.equal(applyTheme(doc, storage, '<img>'), 'system');
  store.set('odek.theme', 'light');
  const select = doc.getElementById('t');
  themePicker(select, storage);
  assert.equal(select.value, 'light');
  assert.equal(doc.documentElement.dataset.theme, 'light');
  select.value = 'dark';
  select.dispatchEvent(new dom.window.Event('change'));
  assert.equal(doc.documentElement.dataset.theme, 'dark');
  const refusing = { getItem: () => { throw new Error('no'); }, setItem: () => { throw new Error('no'); } };
  assert.equal(savedTheme(refusing), 'system');
  assert.equal(applyTheme(doc, refusing, 'light'), 'light');
});

test('an answer shows its latency and tokens', () => {
  assert.equal(
    answerStats({ duration_ms: 4200, input_tokens: 3600, output_tokens: 30, cached_tokens: 2000 }),
    '4.2 s · 3,600 in (2,000 cached) · 30 out',
  );
  assert.equal(answerStats({ duration_ms: 50, input_tokens: 10, output_tokens: 2, cached_tokens: 0 }), '0.1 s · 10 in · 2 out');
});

test('an answer shows its cost only when the run carries one', () => {
  assert.equal(
    answerStats({ duration_ms: 1000, input_tokens: 1000, output_tokens: 10, cached_tokens: 0, cost_usd: 0.01234 }),
    '1.0 s · 1,000 in · 10 out · $0.0123',
  );
  assert.equal(costText(12.345), '$12.35');
  assert.equal(costText(0), '$0.0000');
  assert.equal(costText(undefined), '');
  assert.equal(costText(Number.NaN), '');
  assert.equal(costText(-1), '');
});
