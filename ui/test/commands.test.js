// Custom slash commands offered under the prompt box: which match, the list, picking one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { CommandHints, MAX_HINTS, matching } from '../js/commands.js';

const COMMANDS = [
  { name: 'review', description: 'Review the diff', argument_hint: '[files]' },
  { name: 'frontend:build', description: 'Build the <b>frontend</b>', argument_hint: '' },
  { name: 'frontend:test', description: '', argument_hint: 'PATTERN' },
];

test('a prompt of a slash and the start of one word matches names that start so', () => {
  assert.deepEqual(matching(COMMANDS, '/').map((c) => c.name), ['frontend:build', 'frontend:test', 'review']);
  assert.deepEqual(matching(COMMANDS, '/Front').map((c) => c.name), ['frontend:build', 'frontend:test']);
  assert.deepEqual(matching(COMMANDS, '/frontend:t').map((c) => c.name), ['frontend:test']);
  assert.deepEqual(matching(COMMANDS, '/review '), [], 'past the name: the arguments');
  assert.deepEqual(matching(COMMANDS, 'review'), []);
  assert.deepEqual(matching(COMMANDS, '/zzz'), []);
  assert.deepEqual(matching([{ description: 'no name' }, null], '/'), []);
  const many = Array.from({ length: 20 }, (_, i) => ({ name: `c${String(i).padStart(2, '0')}` }));
  assert.equal(matching(many, '/c').length, MAX_HINTS);
});

/** A prompt box, its hint list, and hints over `answer` (a value or a thrown error). */
function page(answer) {
  const dom = new JSDOM('<!doctype html><body><textarea id="p"></textarea><ul id="h" hidden></ul></body>');
  const doc = dom.window.document;
  const prompt = doc.getElementById('p');
  const list = doc.getElementById('h');
  let loads = 0;
  const load = async () => {
    loads += 1;
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const hints = new CommandHints({ prompt, list, load });
  const type = (text) => {
    prompt.value = text;
    prompt.dispatchEvent(new dom.window.Event('input'));
  };
  const key = (k) => {
    const e = new dom.window.KeyboardEvent('keydown', { key: k, cancelable: true });
    prompt.dispatchEvent(e);
    return e.defaultPrevented;
  };
  return { doc, prompt, list, hints, type, key, loads: () => loads };
}

test('the list shows name, hint and description as text; a click or Tab fills the prompt', async () => {
  const p = page({ commands: COMMANDS });
  await p.hints.refresh();
  assert.equal(p.list.hidden, true, 'nothing typed: nothing shown');
  p.type('/fr');
  assert.equal(p.list.hidden, false);
  const rows = [...p.list.querySelectorAll('.command-pick')];
  assert.deepEqual(rows.map((r) => r.dataset.command), ['frontend:build', 'frontend:test']);
  assert.equal(rows[0].querySelector('.command-name').textContent, '/frontend:build');
  assert.equal(rows[0].querySelector('.command-description').textContent, 'Build the <b>frontend</b>');
  assert.equal(p.list.querySelector('b'), null, 'descriptions are text, never markup');
  assert.equal(rows[1].querySelector('.command-args').textContent, 'PATTERN');
  rows[1].click();
  assert.equal(p.prompt.value, '/frontend:test ');
  assert.equal(p.list.hidden, true);

  p.type('/re');
  assert.equal(p.key('Tab'), true, 'Tab completes the first');
  assert.equal(p.prompt.value, '/review ');
  p.type('plain text');
  assert.equal(p.key('Tab'), false, 'without hints Tab moves the focus as always');
  p.type('/');
  assert.equal(p.list.querySelectorAll('li').length, 3);
  p.key('Escape');
  assert.equal(p.list.hidden, true);
});

test('a lone slash reads the commands again; a failed read offers none', async () => {
  const p = page({ commands: COMMANDS });
  await p.hints.refresh();
  assert.equal(p.loads(), 1);
  p.type('/');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(p.loads(), 2);

  const broken = page(new Error('HTTP 500'));
  await broken.hints.refresh();
  broken.type('/');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(broken.list.hidden, true);
});
