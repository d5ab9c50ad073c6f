// Unit tests for ui/js/plan.js: the plan panel's rendering and its polling lifecycle.
// Run with `npm test` (node --test) from ui/; the DOM is jsdom's.

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import {
  GLYPHS,
  NO_PLAN,
  NOTE_MAX,
  POLL_MS,
  PlanPoller,
  glyph,
  planHeader,
  renderPlan,
  truncateNote,
} from '../js/plan.js';

// ---------------------------------------------------------------------------------------
// helpers

function newDom() {
  const dom = new JSDOM('<!doctype html><body></body>');
  const doc = dom.window.document;
  const container = doc.createElement('section');
  doc.body.append(container);
  return { dom, window: dom.window, doc, container };
}

/** Lets every pending promise reaction run (a few microtask turns, no real waiting). */
function flush() {
  return new Promise((resolve) => setImmediate(resolve));
}

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A fetchPlan stub that records the session ids and answers at once. */
function immediateFetch(answer = (sid) => ({ found: true, version: 1, session: sid, steps: [] })) {
  const calls = [];
  const fetchPlan = (sid) => {
    calls.push(sid);
    return Promise.resolve(answer(sid));
  };
  return { fetchPlan, calls };
}

/** A fetchPlan stub whose every answer is a deferred promise the test settles by hand. */
function deferredFetch() {
  const calls = [];
  const pending = [];
  const fetchPlan = (sid) => {
    calls.push(sid);
    const d = deferred();
    pending.push(d);
    return d.promise;
  };
  return { fetchPlan, calls, pending };
}

/** Hand-made interval timers: `tick(ms)` runs due callbacks in time order. */
class FakeTimers {
  constructor() {
    this.now = 0;
    this.nextId = 1;
    this.active = new Map();
    this.cleared = [];
  }

  setInterval(fn, ms) {
    const id = this.nextId++;
    this.active.set(id, { fn, ms, due: this.now + ms });
    return id;
  }

  clearInterval(id) {
    this.cleared.push(id);
    this.active.delete(id);
  }

  tick(ms) {
    const end = this.now + ms;
    for (;;) {
      let next = null;
      for (const [id, t] of this.active) {
        if (t.due <= end && (next === null || t.due < next[1].due)) next = [id, t];
      }
      if (next === null) break;
      const [, t] = next;
      this.now = t.due;
      t.due += t.ms;
      t.fn();
    }
    this.now = end;
  }
}

/**
 * A poller on a fresh jsdom document whose visibility the test controls. Timers are
 * node:test's mock timers (the poller's default `globalThis` timers) unless `timers` is given.
 */
function setup(t, { fetch = immediateFetch(), timers, interval, onError, render } = {}) {
  if (!timers) t.mock.timers.enable({ apis: ['setInterval'] });
  const env = newDom();
  let state = 'visible';
  Object.defineProperty(env.doc, 'visibilityState', { configurable: true, get: () => state });
  const setVisibility = (next) => {
    state = next;
    env.doc.dispatchEvent(new env.window.Event('visibilitychange'));
  };
  const renders = [];
  const poller = new PlanPoller({
    fetchPlan: fetch.fetchPlan,
    render:
      render ??
      ((view) => {
        renders.push(view);
      }),
    doc: env.doc,
    ...(timers ? { timers } : {}),
    ...(interval !== undefined ? { interval } : {}),
    ...(onError ? { onError } : {}),
  });
  const tick = (ms) => (timers ? timers.tick(ms) : t.mock.timers.tick(ms));
  t.after(() => {
    poller.destroy();
    env.window.close();
  });
  return { ...env, poller, renders, calls: fetch.calls, fetch, setVisibility, tick };
}

/** Drawer open, plan tab active (the document is visible unless the test hid it). */
function activate(poller) {
  poller.setDrawerOpen(true);
  poller.setTabActive(true);
}

const plan = (steps, version = 3) => ({ found: true, version, steps });

// ---------------------------------------------------------------------------------------
// constants and pure helpers

describe('plan constants', () => {
  test('poll interval, note limit and the no-plan sentence', () => {
    assert.equal(POLL_MS, 5000);
    assert.equal(NOTE_MAX, 80);
    assert.equal(NO_PLAN, 'No active plan in this session.');
  });

  test('glyph table and unknown statuses', () => {
    assert.deepEqual({ ...GLYPHS }, { done: '✅', in_progress: '🔄', pending: '⬜', blocked: '⛔' });
    assert.ok(Object.isFrozen(GLYPHS));
    assert.equal(glyph('done'), '✅');
    assert.equal(glyph('in_progress'), '🔄');
    assert.equal(glyph('pending'), '⬜');
    assert.equal(glyph('blocked'), '⛔');
    for (const odd of ['weird', '', undefined, null, 'toString', '__proto__', 'DONE']) {
      assert.equal(glyph(odd), '⬜', `status ${String(odd)}`);
    }
  });

  test('planHeader', () => {
    assert.equal(
      planHeader(plan([{ status: 'done' }, { status: 'in_progress' }, { status: 'pending' }, { status: 'blocked' }])),
      '📋 Plan — v3 · 1/4 done · 1 blocked',
    );
    assert.equal(
      planHeader(plan([{ status: 'done' }, { status: 'done' }, { status: 'blocked' }, { status: 'blocked' }], 7)),
      '📋 Plan — v7 · 2/4 done · 2 blocked',
    );
    assert.equal(planHeader({ found: true, steps: undefined }), '📋 Plan — v0 · 0/0 done');
  });

  test('truncateNote counts code points, not UTF-16 units', () => {
    assert.equal(truncateNote('short note'), 'short note');
    assert.equal(truncateNote(''), '');
    assert.equal(truncateNote(undefined), '');
    assert.equal(truncateNote('x'.repeat(80)), 'x'.repeat(80));
    assert.equal(truncateNote('x'.repeat(81)), `${'x'.repeat(80)}…`);
    // 80 astral characters are 160 UTF-16 units but still fit.
    assert.equal(truncateNote('😀'.repeat(80)), '😀'.repeat(80));
    assert.equal(truncateNote('😀'.repeat(81)), `${'😀'.repeat(80)}…`);
    assert.equal(truncateNote('abc', 2), 'ab…');
  });
});

// ---------------------------------------------------------------------------------------
// renderPlan

describe('renderPlan', () => {
  test('one row per step with the glyph of its status', () => {
    const { container } = newDom();
    renderPlan(
      container,
      plan([
        { id: 's1', title: 'Done step', status: 'done' },
        { id: 's2', title: 'Running step', status: 'in_progress' },
        { id: 's3', title: 'Waiting step', status: 'pending' },
        { id: 's4', title: 'Stuck step', status: 'blocked' },
        { id: 's5', title: 'Odd step', status: 'exploded' },
      ]),
    );
    const rows = [...container.querySelectorAll('ol.plan-steps > li.plan-step')];
    assert.equal(rows.length, 5);
    const seen = rows.map((r) => [
      r.querySelector('.plan-glyph').textContent,
      r.dataset.status,
      r.querySelector('.plan-glyph').getAttribute('aria-label'),
    ]);
    assert.deepEqual(seen, [
      ['✅', 'done', 'done'],
      ['🔄', 'in_progress', 'in progress'],
      ['⬜', 'pending', 'pending'],
      ['⛔', 'blocked', 'blocked'],
      ['⬜', 'pending', 'pending'],
    ]);
    for (const r of rows) assert.equal(r.querySelector('.plan-glyph').getAttribute('role'), 'img');
  });

  test('header with and without blocked steps', () => {
    const { container } = newDom();
    renderPlan(
      container,
      plan([
        { id: 'a', title: 'A', status: 'done' },
        { id: 'b', title: 'B', status: 'in_progress' },
        { id: 'c', title: 'C', status: 'pending' },
        { id: 'd', title: 'D', status: 'blocked' },
      ]),
    );
    assert.equal(container.querySelector('p.plan-header').textContent, '📋 Plan — v3 · 1/4 done · 1 blocked');

    renderPlan(
      container,
      plan([
        { id: 'a', title: 'A', status: 'done' },
        { id: 'b', title: 'B', status: 'in_progress' },
        { id: 'c', title: 'C', status: 'pending' },
        { id: 'd', title: 'D', status: 'pending' },
      ]),
    );
    assert.equal(container.querySelector('p.plan-header').textContent, '📋 Plan — v3 · 1/4 done');
    // Header first, then the list.
    assert.deepEqual(
      [...container.children].map((c) => `${c.tagName}.${c.className}`),
      ['P.plan-header', 'OL.plan-steps'],
    );
  });

  test('id in code.plan-id, title in .plan-title', () => {
    const { container } = newDom();
    renderPlan(container, plan([{ id: 'step-7', title: 'Write the tests', status: 'pending' }]));
    const row = container.querySelector('li.plan-step');
    const id = row.querySelector('code.plan-id');
    assert.ok(id, 'code.plan-id exists');
    assert.equal(id.textContent, 'step-7');
    assert.equal(row.querySelector('.plan-title').textContent, 'Write the tests');
    assert.equal(row.querySelector('.plan-title').tagName, 'SPAN');
  });

  test('a long note is cut to 80 code points with … and kept whole in the title', () => {
    const { container } = newDom();
    // 90 code points, 120 UTF-16 units: a cut by UTF-16 length would differ (and split pairs).
    const note = 'a😀b'.repeat(30);
    assert.equal(Array.from(note).length, 90);
    assert.equal(note.length, 120);
    renderPlan(container, plan([{ id: 'n', title: 'T', status: 'pending', note }]));
    const el = container.querySelector('.plan-note');
    assert.ok(el);
    const shown = el.textContent;
    assert.equal(shown, `${'a😀b'.repeat(26)}a😀…`);
    assert.equal(Array.from(shown).length, NOTE_MAX + 1);
    assert.ok(shown.endsWith('…'));
    assert.ok(!/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(shown), 'no lone high surrogate');
    assert.equal(el.getAttribute('title'), note);
  });

  test('an all-astral note: 80 fit, 81 are cut', () => {
    const { container } = newDom();
    renderPlan(
      container,
      plan([
        { id: 'fit', title: 'T', status: 'pending', note: '🚀'.repeat(80) },
        { id: 'cut', title: 'T', status: 'pending', note: '🚀'.repeat(81) },
      ]),
    );
    const [fit, cut] = container.querySelectorAll('.plan-note');
    assert.equal(fit.textContent, '🚀'.repeat(80));
    assert.equal(cut.textContent, `${'🚀'.repeat(80)}…`);
    assert.equal(cut.title, '🚀'.repeat(81));
  });

  test('a short note is unchanged; no .plan-note without a note', () => {
    const { container } = newDom();
    renderPlan(
      container,
      plan([
        { id: 'a', title: 'With note', status: 'blocked', note: 'waiting for review' },
        { id: 'b', title: 'Without note', status: 'pending' },
        { id: 'c', title: 'Empty note', status: 'pending', note: '' },
      ]),
    );
    const [a, b, c] = container.querySelectorAll('li.plan-step');
    assert.equal(a.querySelector('.plan-note').textContent, 'waiting for review');
    assert.equal(a.querySelector('.plan-note').title, 'waiting for review');
    assert.equal(b.querySelector('.plan-note'), null);
    assert.equal(c.querySelector('.plan-note'), null);
    assert.equal(container.querySelectorAll('.plan-note').length, 1);
  });

  for (const [name, view] of [
    ['found:false', { found: false }],
    ['null', null],
    ['undefined', undefined],
  ]) {
    test(`${name} renders the no-plan sentence`, () => {
      const { container } = newDom();
      renderPlan(container, view);
      assert.equal(container.textContent, 'No active plan in this session.');
      assert.equal(container.children.length, 1);
      assert.equal(container.firstElementChild.tagName, 'P');
      assert.equal(container.firstElementChild.className, 'plan-empty');
    });
  }

  test('a collapsed plan shows v5 · 0/0 done and an empty list', () => {
    const { container } = newDom();
    renderPlan(container, { found: true, version: 5, steps: [] });
    assert.equal(container.querySelector('.plan-header').textContent, '📋 Plan — v5 · 0/0 done');
    const list = container.querySelector('ol.plan-steps');
    assert.ok(list);
    assert.equal(list.children.length, 0);
    assert.equal(container.querySelector('.plan-empty'), null);
  });

  test('hostile id, title and note stay text', () => {
    const { container, doc } = newDom();
    const title = '<img src=x onerror=alert(1)>';
    const note = '<img src=y onerror=alert(2)><script>alert(3)</script>';
    const id = '<img src=z>';
    renderPlan(container, plan([{ id, title, status: 'pending', note }], '<img src=v>'));
    assert.equal(doc.querySelectorAll('img').length, 0);
    assert.equal(doc.querySelectorAll('script').length, 0);
    assert.equal(container.querySelector('.plan-title').textContent, title);
    assert.equal(container.querySelector('.plan-title').children.length, 0);
    assert.equal(container.querySelector('code.plan-id').textContent, id);
    assert.equal(container.querySelector('.plan-note').textContent, note);
    assert.equal(container.querySelector('.plan-note').title, note);
    assert.equal(container.querySelector('.plan-header').textContent, '📋 Plan — v<img src=v> · 0/1 done');
    // Only the elements renderPlan makes itself.
    const tags = [...container.querySelectorAll('*')].map((n) => n.tagName).sort();
    assert.deepEqual(tags, ['CODE', 'LI', 'OL', 'P', 'SPAN', 'SPAN', 'SPAN'].sort());
  });

  test('rendering again replaces the previous content', () => {
    const { container } = newDom();
    const three = plan([
      { id: 'a', title: 'A', status: 'done' },
      { id: 'b', title: 'B', status: 'pending', note: 'n' },
      { id: 'c', title: 'C', status: 'blocked' },
    ]);
    renderPlan(container, three);
    renderPlan(container, three);
    assert.equal(container.children.length, 2);
    assert.equal(container.querySelectorAll('.plan-header').length, 1);
    assert.equal(container.querySelectorAll('li').length, 3);

    renderPlan(container, plan([{ id: 'z', title: 'Z', status: 'done' }], 4));
    assert.equal(container.querySelectorAll('.plan-header').length, 1);
    assert.equal(container.querySelector('.plan-header').textContent, '📋 Plan — v4 · 1/1 done');
    assert.deepEqual(
      [...container.querySelectorAll('.plan-id')].map((n) => n.textContent),
      ['z'],
    );

    renderPlan(container, { found: false });
    assert.equal(container.children.length, 1);
    assert.equal(container.textContent, NO_PLAN);

    renderPlan(container, three);
    assert.equal(container.querySelectorAll('.plan-empty').length, 0);
    assert.equal(container.querySelectorAll('li').length, 3);
  });
});

// ---------------------------------------------------------------------------------------
// PlanPoller

describe('PlanPoller', () => {
  test('no request while the drawer is closed', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    s.poller.setTabActive(true);
    s.tick(60_000);
    await flush();
    assert.deepEqual(s.calls, []);
    assert.deepEqual(s.renders, []);
  });

  test('no request while the plan tab is inactive', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    s.poller.setDrawerOpen(true);
    s.poller.setTabActive(false);
    s.tick(60_000);
    await flush();
    assert.deepEqual(s.calls, []);
    assert.deepEqual(s.renders, []);
  });

  test('no request while the document is hidden', async (t) => {
    const s = setup(t);
    s.setVisibility('hidden');
    s.poller.setSession('s1');
    activate(s.poller);
    s.tick(60_000);
    await flush();
    assert.deepEqual(s.calls, []);
    // A visibilitychange that leaves it hidden changes nothing.
    s.setVisibility('hidden');
    s.tick(60_000);
    await flush();
    assert.deepEqual(s.calls, []);
  });

  test('one request at activation, then one every 5000 ms', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    s.poller.setDrawerOpen(true);
    assert.equal(s.calls.length, 0);
    s.poller.setTabActive(true);
    assert.deepEqual(s.calls, ['s1']);
    await flush();
    assert.equal(s.renders.length, 1);
    assert.equal(s.renders[0].session, 's1');

    // Saying the same thing again asks nothing more.
    s.poller.setDrawerOpen(true);
    s.poller.setTabActive(true);
    assert.equal(s.calls.length, 1);

    s.tick(4999);
    await flush();
    assert.equal(s.calls.length, 1);
    s.tick(1);
    await flush();
    assert.equal(s.calls.length, 2);

    // 15 s more: three more requests (each interval callback is its own task in a browser,
    // so the previous answer has landed by the next one).
    for (let i = 0; i < 3; i += 1) {
      s.tick(5000);
      await flush();
    }
    assert.equal(s.calls.length, 5);
    assert.ok(s.calls.every((sid) => sid === 's1'));
    assert.equal(s.renders.length, 5);
  });

  test('activation order does not matter: tab first, then drawer', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    s.poller.setTabActive(true);
    assert.equal(s.calls.length, 0);
    s.poller.setDrawerOpen(true);
    assert.deepEqual(s.calls, ['s1']);
  });

  test('a slow answer is not asked for twice', async (t) => {
    const fetch = deferredFetch();
    const s = setup(t, { fetch });
    s.poller.setSession('s1');
    activate(s.poller);
    assert.equal(s.calls.length, 1);
    s.tick(15_000);
    await flush();
    assert.equal(s.calls.length, 1, 'no overlapping request while one is in flight');
    fetch.pending[0].resolve(plan([]));
    await flush();
    assert.equal(s.renders.length, 1);
    // The ticks missed while waiting become one follow-up request (the plan may have
    // changed after the slow one was sent), not three.
    assert.equal(s.calls.length, 2);
    fetch.pending[1].resolve(plan([]));
    await flush();
    assert.equal(s.calls.length, 2, 'nothing more was asked for meanwhile');
    s.tick(5000);
    assert.equal(s.calls.length, 3);
  });

  test('a poke while a request is in flight is answered by one more request', async (t) => {
    const fetch = deferredFetch();
    const s = setup(t, { fetch });
    s.poller.setSession('s1');
    activate(s.poller);
    s.poller.poke();
    s.poller.poke();
    assert.equal(s.calls.length, 1);
    fetch.pending[0].resolve(plan([], 1));
    await flush();
    assert.equal(s.calls.length, 2);
    fetch.pending[1].resolve(plan([], 2));
    await flush();
    assert.equal(s.calls.length, 2);
    assert.equal(s.renders.length, 2);
  });

  test('closing the drawer stops polling', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    s.tick(5000);
    await flush();
    assert.equal(s.calls.length, 2);
    s.poller.setDrawerOpen(false);
    s.tick(60_000);
    await flush();
    assert.equal(s.calls.length, 2);
    // Opening it again asks at once and polls again.
    s.poller.setDrawerOpen(true);
    assert.equal(s.calls.length, 3);
    await flush();
    s.tick(5000);
    await flush();
    assert.equal(s.calls.length, 4);
  });

  test('switching to another tab stops polling', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    s.poller.setTabActive(false);
    s.tick(60_000);
    await flush();
    assert.equal(s.calls.length, 1);
    s.poller.setTabActive(true);
    assert.equal(s.calls.length, 2);
  });

  test('hidden stops polling; visible again asks at once and resumes', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    assert.equal(s.calls.length, 1);

    s.setVisibility('hidden');
    s.tick(60_000);
    await flush();
    assert.equal(s.calls.length, 1);

    s.setVisibility('visible');
    assert.equal(s.calls.length, 2, 'one immediate request');
    await flush();
    s.tick(4999);
    await flush();
    assert.equal(s.calls.length, 2);
    s.tick(1);
    await flush();
    assert.equal(s.calls.length, 3, 'polling resumed');
  });

  test('an answer that lands after the panel closed is not rendered', async (t) => {
    const fetch = deferredFetch();
    const s = setup(t, { fetch });
    s.poller.setSession('s1');
    activate(s.poller);
    s.poller.setDrawerOpen(false);
    fetch.pending[0].resolve(plan([]));
    await flush();
    assert.deepEqual(s.renders, []);
    // And the request is no longer counted as in flight.
    s.poller.setDrawerOpen(true);
    assert.equal(s.calls.length, 2);
  });

  test('switching session fetches the new one at once; a late old answer is dropped', async (t) => {
    const fetch = deferredFetch();
    const env = newDom();
    const s = setup(t, { fetch, render: (view) => renderPlan(env.container, view) });
    s.poller.setSession('old');
    activate(s.poller);
    assert.deepEqual(s.calls, ['old']);

    s.poller.setSession('new');
    assert.deepEqual(s.calls, ['old', 'new'], 'the new session is asked for at once');

    // The old session answers late: nothing is drawn.
    fetch.pending[0].resolve(plan([{ id: 'old-step', title: 'Old', status: 'done' }], 1));
    await flush();
    assert.equal(env.container.children.length, 0);

    // The new request is still in flight: the old answer did not clear that, so the next
    // tick does not start a second request for the new session.
    s.tick(5000);
    await flush();
    assert.deepEqual(s.calls, ['old', 'new']);

    fetch.pending[1].resolve(plan([{ id: 'new-step', title: 'New', status: 'pending' }], 2));
    await flush();
    assert.equal(env.container.querySelector('.plan-header').textContent, '📋 Plan — v2 · 0/1 done');
    assert.deepEqual([...env.container.querySelectorAll('.plan-id')].map((n) => n.textContent), ['new-step']);

    s.tick(5000);
    assert.deepEqual(s.calls, ['old', 'new', 'new']);
    env.window.close();
  });

  test('a late old answer after the new one is not rendered over it', async (t) => {
    const fetch = deferredFetch();
    const s = setup(t, { fetch });
    s.poller.setSession('old');
    activate(s.poller);
    s.poller.setSession('new');
    fetch.pending[1].resolve({ found: true, version: 2, steps: [], tag: 'new' });
    await flush();
    fetch.pending[0].resolve({ found: true, version: 1, steps: [], tag: 'old' });
    await flush();
    assert.deepEqual(
      s.renders.map((v) => v.tag),
      ['new'],
    );
  });

  test('setting the same session again asks nothing', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    s.poller.setSession('s1');
    assert.equal(s.calls.length, 1);
  });

  test('switching session while hidden does not fetch', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    s.setVisibility('hidden');
    s.poller.setSession('s2');
    s.tick(60_000);
    await flush();
    assert.deepEqual(s.calls, ['s1']);
    s.setVisibility('visible');
    assert.deepEqual(s.calls, ['s1', 's2']);
  });

  test('with no session, render(null) and no fetch', async (t) => {
    const env = newDom();
    const drawn = [];
    const s = setup(t, {
      render: (view) => {
        drawn.push(view);
        renderPlan(env.container, view);
      },
    });
    activate(s.poller);
    await flush();
    assert.deepEqual(s.calls, []);
    assert.deepEqual(drawn, [null]);
    assert.equal(env.container.textContent, NO_PLAN);

    s.poller.setSession('s1');
    assert.deepEqual(s.calls, ['s1']);
    await flush();
    s.poller.setSession(null);
    assert.deepEqual(s.calls, ['s1']);
    assert.equal(drawn.at(-1), null);
    assert.equal(env.container.textContent, NO_PLAN);
    s.tick(15_000);
    await flush();
    assert.deepEqual(s.calls, ['s1']);
    env.window.close();
  });

  test('poke refreshes only while visible', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    s.poller.poke();
    assert.equal(s.calls.length, 0);
    activate(s.poller);
    await flush();
    s.poller.poke();
    assert.equal(s.calls.length, 2);
    await flush();
    s.setVisibility('hidden');
    s.poller.poke();
    assert.equal(s.calls.length, 2);
  });

  test('a failed request goes to onError and polling carries on', async (t) => {
    const errors = [];
    let fail = true;
    const calls = [];
    const fetch = {
      calls,
      fetchPlan: (sid) => {
        calls.push(sid);
        return fail ? Promise.reject(new Error('boom')) : Promise.resolve(plan([]));
      },
    };
    const s = setup(t, { fetch, onError: (err) => errors.push(err.message) });
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    assert.deepEqual(errors, ['boom']);
    assert.deepEqual(s.renders, []);
    fail = false;
    s.tick(5000);
    await flush();
    assert.equal(calls.length, 2);
    assert.equal(s.renders.length, 1);
  });

  test('destroy stops the timer and removes the visibilitychange listener', async (t) => {
    const s = setup(t);
    s.poller.setSession('s1');
    activate(s.poller);
    await flush();
    assert.equal(s.calls.length, 1);
    s.poller.destroy();
    s.tick(60_000);
    await flush();
    assert.equal(s.calls.length, 1, 'no more polling');
    // Were the listener still there, visible → hidden → visible would ask again.
    s.setVisibility('hidden');
    s.setVisibility('visible');
    s.tick(60_000);
    await flush();
    assert.equal(s.calls.length, 1, 'visibility no longer counts');
  });

  test('destroy removes exactly the listener it added', (t) => {
    const env = newDom();
    t.after(() => env.window.close());
    const added = [];
    const removed = [];
    const doc = env.doc;
    const add = doc.addEventListener.bind(doc);
    const remove = doc.removeEventListener.bind(doc);
    doc.addEventListener = (type, fn, ...rest) => {
      added.push([type, fn]);
      return add(type, fn, ...rest);
    };
    doc.removeEventListener = (type, fn, ...rest) => {
      removed.push([type, fn]);
      return remove(type, fn, ...rest);
    };
    const poller = new PlanPoller({ fetchPlan: async () => null, render: () => {}, doc, timers: new FakeTimers() });
    assert.equal(added.length, 1);
    assert.equal(added[0][0], 'visibilitychange');
    poller.destroy();
    assert.deepEqual(removed, added);
  });

  test('injected timers: the interval is honoured and at most one timer runs', async (t) => {
    const timers = new FakeTimers();
    const s = setup(t, { timers, interval: 1000 });
    s.poller.setSession('s1');
    activate(s.poller);
    assert.equal(timers.active.size, 1);
    assert.equal([...timers.active.values()][0].ms, 1000);
    await flush();
    s.tick(999);
    await flush();
    assert.equal(s.calls.length, 1);
    s.tick(1);
    await flush();
    assert.equal(s.calls.length, 2);

    // Any amount of re-announcing keeps one timer.
    for (let i = 0; i < 5; i += 1) {
      s.poller.setDrawerOpen(true);
      s.poller.setTabActive(true);
      s.setVisibility('visible');
      s.poller.setSession(`s${i + 2}`);
      await flush();
      assert.ok(timers.active.size <= 1);
    }
    assert.equal(timers.active.size, 1);

    s.poller.setTabActive(false);
    assert.equal(timers.active.size, 0);
    s.poller.setTabActive(true);
    s.setVisibility('hidden');
    assert.equal(timers.active.size, 0);
    s.setVisibility('visible');
    s.poller.setDrawerOpen(false);
    assert.equal(timers.active.size, 0);
    s.poller.setDrawerOpen(true);
    assert.equal(timers.active.size, 1);
    const id = [...timers.active.keys()][0];
    s.poller.destroy();
    assert.equal(timers.active.size, 0);
    assert.equal(timers.cleared.at(-1), id);
  });
});
