// The chat view: its pure helpers, and the question card on jsdom.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { Chat, questionText, resolutionText, userText } from '../js/chat.js';

test('a closed approval card says how it was closed', () => {
  assert.equal(resolutionText('approve', 'answered'), 'Approved');
  assert.equal(resolutionText('deny', 'answered'), 'Denied');
  assert.equal(resolutionText('deny', 'expired'), 'Expired: no answer in time');
  assert.equal(resolutionText('deny', 'cancelled'), 'Cancelled with the run');
  assert.equal(resolutionText('deny', undefined), 'Denied');
});

// ---------------------------------------------------------------------------------------
// The question card of the `clarify` tool.

/** Lets every pending promise reaction run. */
function flush() {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A chat with one live turn `r1` and an api whose `reply` the test controls. */
function newChat(reply = () => Promise.resolve({ status: 'answered' })) {
  const dom = new JSDOM('<!doctype html><body><main></main></body>');
  const doc = dom.window.document;
  const log = doc.querySelector('main');
  const calls = [];
  const statuses = [];
  const api = {
    reply: (rid, qid, answer) => {
      calls.push([rid, qid, answer]);
      return reply(answer);
    },
  };
  const chat = new Chat({ log, api, onStatus: (s) => statuses.push(s) });
  chat.startRun('r1', 's1', 'hello');
  return { doc, chat, calls, statuses };
}

const QUESTION = {
  run_id: 'r1',
  question_id: 'q1',
  question: 'Which <b>database</b>?',
  options: ['SQLite', 'Postgres'],
};

/** The card's buttons and input, enabled or not. */
function controls(card) {
  return [...card.querySelectorAll('button, input')];
}

describe('question card', () => {
  test('shows the question and its options as text', () => {
    const { doc, chat } = newChat();
    chat.handle('clarify_requested', QUESTION);
    const card = doc.querySelector('.clarify');
    assert.equal(card.dataset.questionId, 'q1');
    assert.match(card.querySelector('.clarify-title').textContent, /Question/);
    const text = card.querySelector('.clarify-text');
    assert.equal(text.textContent, 'Which <b>database</b>?');
    assert.equal(text.querySelector('b'), null);
    const options = [...card.querySelectorAll('.clarify-option')].map((b) => b.textContent);
    assert.deepEqual(options, ['SQLite', 'Postgres']);
    assert.equal(card.querySelector('.clarify-input').placeholder, 'Your answer');
    assert.ok(card.querySelector('.clarify-send'));
    assert.equal(doc.activeElement, card.querySelector('.clarify-input'));
  });

  test('without options there are no option buttons, only the free answer', () => {
    const { doc, chat } = newChat();
    chat.handle('clarify_requested', { ...QUESTION, options: [] });
    assert.equal(doc.querySelectorAll('.clarify-option').length, 0);
    assert.ok(doc.querySelector('.clarify-input'));
  });

  test('an option sends its text and locks the card', async () => {
    const { doc, chat, calls } = newChat();
    chat.handle('clarify_requested', QUESTION);
    doc.querySelectorAll('.clarify-option')[1].click();
    assert.deepEqual(calls, [['r1', 'q1', 'Postgres']]);
    await flush();
    assert.ok(controls(doc.querySelector('.clarify')).every((c) => c.disabled));
  });

  test('the form sends the typed answer and ignores an empty one', async () => {
    const { doc, chat, calls } = newChat();
    chat.handle('clarify_requested', QUESTION);
    const input = doc.querySelector('.clarify-input');
    const send = doc.querySelector('.clarify-send');
    send.click();
    input.value = '   ';
    doc.querySelector('.clarify-form').requestSubmit();
    assert.deepEqual(calls, []);
    assert.equal(input.disabled, false);
    input.value = 'MariaDB, please';
    doc.querySelector('.clarify-form').requestSubmit(); // what Enter in the input does
    assert.deepEqual(calls, [['r1', 'q1', 'MariaDB, please']]);
    await flush();
    assert.equal(send.disabled, true);
  });

  test('an API error is shown in the card and the controls come back', async () => {
    const err = Object.assign(new Error('boom'), { status: 500 });
    const { doc, chat, statuses } = newChat(() => Promise.reject(err));
    chat.handle('clarify_requested', QUESTION);
    const card = doc.querySelector('.clarify');
    card.querySelector('.clarify-option').click();
    await flush();
    assert.equal(card.querySelector('.clarify-error').textContent, 'Answer not sent: boom');
    assert.deepEqual(statuses, ['Answer not sent: boom']);
    assert.ok(controls(card).every((c) => !c.disabled));
    assert.equal(card.classList.contains('resolved'), false);
  });

  test('a question already closed (409) stays locked', async () => {
    const err = Object.assign(new Error('question already closed'), { status: 409 });
    const { doc, chat } = newChat(() => Promise.reject(err));
    chat.handle('clarify_requested', QUESTION);
    const card = doc.querySelector('.clarify');
    card.querySelector('.clarify-option').click();
    await flush();
    assert.ok(card.querySelector('.clarify-error'));
    assert.ok(controls(card).every((c) => c.disabled));
  });

  for (const [reason, note] of [
    ['answered', 'Answered.'],
    ['expired', 'No answer in time: the agent decided on its own.'],
    ['cancelled', 'Cancelled: the turn was stopped.'],
  ]) {
    test(`clarify_resolved (${reason}) closes the card`, () => {
      const { doc, chat } = newChat();
      chat.handle('clarify_requested', QUESTION);
      chat.handle('clarify_requested', { ...QUESTION, question_id: 'q2' });
      chat.handle('clarify_resolved', { run_id: 'r1', question_id: 'q1', reason });
      const [first, second] = doc.querySelectorAll('.clarify');
      assert.ok(first.classList.contains('resolved'));
      assert.equal(first.querySelector('.clarify-result').textContent, note);
      assert.ok(controls(first).every((c) => c.disabled));
      assert.equal(second.classList.contains('resolved'), false);
    });
  }

  test('the end of the run closes an open card', () => {
    const { doc, chat } = newChat();
    chat.handle('clarify_requested', QUESTION);
    chat.handle('run_completed', { run_id: 'r1', data: { answer: 'done' } });
    const card = doc.querySelector('.clarify');
    assert.ok(card.classList.contains('resolved'));
    assert.equal(card.querySelector('.clarify-result').textContent, 'The turn ended.');
    assert.ok(controls(card).every((c) => c.disabled));
  });

  test('the note for an unknown reason is the run-end one', () => {
    assert.equal(questionText(undefined), 'The turn ended.');
  });
});

// ---------------------------------------------------------------------------------------
// Sub-agents of `delegate_tasks`, live under their call's row.

describe('sub-agent rows', () => {
  const envelope = (type, data) => ({ schema: 'odek.event/v1', type, run_id: 'r1', session_id: 's1', tool: 'delegate_tasks', data });
  const rowsText = (doc) =>
    [...doc.querySelectorAll('.subagent-row')].map((r) => `${r.querySelector('.subagent-name').textContent} ${r.dataset.status}: ${r.querySelector('.tool-status').textContent}`);

  test('start and end under the call that started them, in task order', () => {
    const { doc, chat } = newChat();
    chat.handle('tool_call_started', envelope('tool_call_started', { call_id: 'c1', args_summary: {} }));
    chat.handle('subagent_started', envelope('subagent_started', { call_id: 'c1', index: 2, total: 2 }));
    chat.handle('subagent_started', envelope('subagent_started', { call_id: 'c1', index: 1, total: 2 }));
    chat.handle(
      'subagent_finished',
      envelope('subagent_finished', {
        call_id: 'c1', index: 2, total: 2, status: 'ok', iterations: 3, tool_calls: 1,
        input_tokens: 1000, output_tokens: 234, duration_ms: 3400,
      }),
    );
    chat.handle(
      'subagent_finished',
      envelope('subagent_finished', {
        call_id: 'c1', index: 1, total: 2, status: 'timeout', iterations: 1, tool_calls: 0,
        input_tokens: 10, output_tokens: 0, duration_ms: 120000,
      }),
    );
    const call = doc.querySelector('.tool-row');
    assert.equal(call.querySelectorAll(':scope > .subagents > .subagent-row').length, 2);
    assert.deepEqual(rowsText(doc), [
      'sub-agent 1/2 failed: timeout · 1 model call · 0 tools · 10 tokens · 120.0s',
      'sub-agent 2/2 ok: ok · 3 model calls · 1 tool · 1,234 tokens · 3.4s',
    ]);
  });

  test('a finish without its start still shows one row; a frame for no known call shows none', () => {
    const { doc, chat } = newChat();
    chat.handle('tool_call_started', envelope('tool_call_started', { call_id: 'c1', args_summary: {} }));
    const done = { call_id: 'c1', index: 1, total: 1, status: 'cancelled', iterations: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0 };
    chat.handle('subagent_finished', envelope('subagent_finished', done));
    chat.handle('subagent_finished', envelope('subagent_finished', done));
    chat.handle('subagent_started', envelope('subagent_started', { call_id: 'other', index: 1, total: 1 }));
    chat.handle('subagent_started', envelope('subagent_started', { call_id: 'c1', index: '<b>1</b>', total: 1 }));
    assert.deepEqual(rowsText(doc), ['sub-agent 1/1 failed: cancelled · 0 model calls · 0 tools · 0 tokens']);
  });
});

test('a saved user message with images shows its text and how many images, never their data', () => {
  assert.equal(userText('plain'), 'plain');
  const parts = [
    { type: 'text', text: 'what is this?' },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
    { type: 'image_url', image_url: { url: 'data:image/png;base64,BBBB' } },
  ];
  assert.equal(userText(parts), 'what is this?\n🖼 2 images');
  assert.equal(userText([parts[1]]), '🖼 1 image');
  assert.equal(userText(null), '');
  // A message sent during a turn is shown without its saved opening line.
  assert.equal(userText('[Sent by the user while you were working on this turn]\nuse staging'), '↳ use staging');
});

test('a fallback and a compaction show as notices above the answer', () => {
  const { doc, chat } = newChat();
  const envelope = (type, data) => ({ schema: 'odek.event/v1', type, run_id: 'r1', session_id: 's1', data });
  chat.handle('model_fallback', envelope('model_fallback', { from: 'test-model', to: 'backup:small', reason: '429 Too Many Requests' }));
  chat.handle(
    'compacted',
    envelope('compacted', { mode: 'summary', trigger: 'auto', before_tokens: 9000, after_tokens: 2000, removed_messages: 12 }),
  );
  const notices = [...doc.querySelectorAll('.msg-notice')].map((n) => n.textContent);
  assert.deepEqual(notices, [
    '429 Too Many Requests — retries spent on test-model, falling back to backup:small',
    'Conversation summarised: 12 message(s) replaced, about 9000 → 2000 tokens',
  ]);
  assert.ok(doc.querySelector('.msg-notice + .msg-notice + .msg-assistant'), 'both above the answer');
});
