// The chat view: its pure helpers, and the question card on jsdom.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { Chat, questionText, resolutionText } from '../js/chat.js';

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
