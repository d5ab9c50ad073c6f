// The drawer's memory, skills, schedules and runs tabs against a fake API on jsdom.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JSDOM } from 'jsdom';

import { MemoryPanel, RunsPanel, SchedulesPanel, SkillsPanel } from '../js/panels.js';

const flush = () => new Promise((r) => setImmediate(r));

function setup(Panel, api) {
  const dom = new JSDOM('<!doctype html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById('root');
  const statuses = [];
  const panel = new Panel({ root, api, onStatus: (s) => statuses.push(s) });
  return { root, panel, statuses, doc: dom.window.document };
}

const click = async (button) => {
  button.click();
  await flush();
  await flush();
};

describe('memory tab', () => {
  test('lists pending writes first, accepts, edits and deletes with a second click', async () => {
    let facts = [
      { id: 1, target: 'user', content: 'Prefers <b>tabs</b>', status: 'active', action: 'add' },
      { id: 2, target: 'project', content: 'Uses pnpm', status: 'pending', action: 'add' },
    ];
    const calls = [];
    const api = {
      memory: async () => ({ facts, stores: [{ target: 'user', used: 17, budget: 1375 }], pending: 1 }),
      acceptFact: async (id) => { calls.push(['accept', id]); facts = facts.map((f) => (f.id === id ? { ...f, status: 'active' } : f)); },
      editFact: async (id, content) => { calls.push(['edit', id, content]); },
      deleteFact: async (id) => { calls.push(['delete', id]); facts = facts.filter((f) => f.id !== id); },
    };
    const { root, panel, statuses } = setup(MemoryPanel, api);
    await panel.refresh();
    const rows = [...root.querySelectorAll('.fact')];
    assert.deepEqual(rows.map((r) => r.dataset.id), ['2', '1']);
    assert.equal(rows[1].querySelector('.row-text').textContent, 'Prefers <b>tabs</b>');
    assert.equal(rows[1].querySelector('b'), null, 'text, not markup');
    assert.match(root.textContent, /user: 17\/1375 characters/);
    await click(rows[0].querySelector('button.accept'));
    assert.deepEqual(calls[0], ['accept', 2]);
    assert.equal(statuses.at(-1), 'Accepted #2.');
    const first = root.querySelector('.fact[data-id="1"]');
    await click(first.querySelector('button.edit'));
    const input = first.querySelector('input');
    input.value = 'Prefers spaces';
    first.querySelector('form').dispatchEvent(new root.ownerDocument.defaultView.Event('submit', { cancelable: true }));
    await flush();
    assert.deepEqual(calls[1], ['edit', 1, 'Prefers spaces']);
    const del = root.querySelector('.fact[data-id="1"] button.delete');
    await click(del);
    assert.equal(calls.length, 2, 'the first click only asks');
    assert.equal(del.textContent, 'Really delete');
    await click(del);
    assert.deepEqual(calls[2], ['delete', 1]);
  });

  test('an error is shown in the tab', async () => {
    const { root, panel } = setup(MemoryPanel, { memory: async () => { throw new Error('memory is off on this server'); } });
    await panel.refresh();
    assert.equal(root.textContent, 'memory is off on this server');
  });
});

describe('skills tab', () => {
  test('a project skill not trusted gets a Trust button that asks twice', async () => {
    let trusted = false;
    const api = {
      skills: async () => ({
        skills: [
          { name: 'lint', description: 'Runs <script>x</script>', origin: 'project', trusted, offered: trusted, status: trusted ? 'offered' : 'not trusted: run `odek skill trust lint`' },
          { name: 'notes', description: 'Home skill', origin: 'home', trusted: true, offered: true, status: 'offered' },
        ],
        broken: [{ file: '/p/.odek/skills/Bad/SKILL.md', rule: 'name must be lowercase' }],
      }),
      trustSkill: async (name) => { assert.equal(name, 'lint'); trusted = true; },
    };
    const { root, panel } = setup(SkillsPanel, api);
    await panel.refresh();
    assert.equal(root.querySelectorAll('.skill').length, 2);
    assert.equal(root.querySelector('.skill[data-name="notes"] button'), null);
    assert.equal(root.querySelector('script'), null);
    assert.match(root.querySelector('.broken').textContent, /name must be lowercase/);
    const trust = root.querySelector('.skill[data-name="lint"] button.trust');
    await click(trust);
    assert.equal(trusted, false);
    await click(trust);
    assert.equal(trusted, true);
    assert.equal(root.querySelector('.skill[data-name="lint"] .status-text').textContent, 'offered');
  });
});

describe('schedules tab', () => {
  test('run now and disable', async () => {
    let jobs = [{ name: 'digest', cron: '0 9 * * *', enabled: true, next_run: '2026-12-03T09:00:00Z', last_outcome: 'ok', task: 'summarise' }];
    const calls = [];
    const api = {
      schedules: async () => ({ schedules: jobs }),
      runSchedule: async (name) => calls.push(['run', name]),
      switchSchedule: async (name, on) => {
        calls.push(['switch', name, on]);
        jobs = jobs.map((j) => ({ ...j, enabled: on }));
        return { schedules: jobs };
      },
    };
    const { root, panel, statuses } = setup(SchedulesPanel, api);
    await panel.refresh();
    assert.match(root.querySelector('.when').textContent, /next 2026-12-03T09:00:00Z · last: ok/);
    await click(root.querySelector('button.run'));
    assert.deepEqual(calls[0], ['run', 'digest']);
    assert.equal(statuses.at(-1), 'Started digest.');
    await click(root.querySelector('button.toggle'));
    assert.deepEqual(calls[1], ['switch', 'digest', false]);
    assert.ok(root.querySelector('.job.disabled'));
    assert.equal(root.querySelector('button.toggle').textContent, 'Enable');
  });
});

describe('runs tab', () => {
  test('running runs first with who started them; Stop cancels one', async () => {
    let runs = [
      { run_id: 'r1', session_id: 's1', origin: 'serve', status: 'completed', started_at: '2026-12-02T10:00:00Z' },
      { run_id: 'r2', session_id: 's2', origin: 'schedule', status: 'running', started_at: '2026-12-02T10:05:00Z' },
      { run_id: 'r3', session_id: '', origin: 'mcp', status: 'failed', started_at: '2026-12-02T09:00:00Z', error: 'the model <b>refused</b>' },
    ];
    const calls = [];
    const api = {
      runs: async () => ({ count: runs.length, runs }),
      cancel: async (id) => {
        calls.push(['cancel', id]);
        runs = runs.map((r) => (r.run_id === id ? { ...r, status: 'cancelled', error: 'cancelled' } : r));
        return { run_id: id, status: 'cancelling' };
      },
    };
    const { root, panel, statuses } = setup(RunsPanel, api);
    await panel.refresh();
    const rows = [...root.querySelectorAll('.run')];
    assert.deepEqual(rows.map((r) => r.dataset.id), ['r2', 'r1', 'r3']);
    assert.deepEqual(rows.map((r) => r.querySelector('.origin').textContent), ['schedule', 'web', 'MCP']);
    assert.equal(rows[0].querySelector('.status').textContent, 'running');
    assert.match(rows[0].querySelector('.when').textContent, /started 2026-12-02T10:05:00Z · session s2/);
    assert.equal(rows[2].querySelector('.row-text').textContent, 'the model <b>refused</b>');
    assert.equal(rows[2].querySelector('b'), null, 'text, never markup');
    assert.equal(root.querySelectorAll('button.stop').length, 1, 'only a running run has Stop');
    await click(root.querySelector('button.stop'));
    assert.deepEqual(calls, [['cancel', 'r2']]);
    assert.equal(statuses.at(-1), 'Stopping the schedule run…');
    assert.ok(root.querySelector('.run-cancelled[data-id="r2"]'));
    assert.equal(root.querySelector('button.stop'), null);
  });

  test('a running run lists its background jobs with their last lines, as text', async () => {
    const runs = [{
      run_id: 'r1', session_id: 's1', origin: 'serve', status: 'running', started_at: '2026-12-02T10:00:00Z',
      jobs: [
        { id: 1, command: 'npm run dev', status: 'running', seconds: 42, tail: 'ready on <b>:3000</b>' },
        { id: 2, command: 'npm test', status: 'exited with status 1', seconds: 9, tail: '' },
      ],
    }];
    const { root, panel } = setup(RunsPanel, { runs: async () => ({ count: 1, runs }) });
    await panel.refresh();
    const jobs = [...root.querySelectorAll('.run .job')];
    assert.deepEqual(jobs.map((j) => j.querySelector('.job-head').textContent), [
      '⏳ job 1 · running · 42 s · npm run dev',
      '⏳ job 2 · exited with status 1 · 9 s · npm test',
    ]);
    assert.equal(jobs[0].querySelector('.job-tail').textContent, 'ready on <b>:3000</b>');
    assert.equal(root.querySelector('.job b'), null, 'text, never markup');
    assert.equal(jobs[1].querySelector('.job-tail'), null);
  });

  test('no runs, and a failed read shows in the tab', async () => {
    const { root, panel } = setup(RunsPanel, { runs: async () => ({ count: 0, runs: [] }) });
    await panel.refresh();
    assert.equal(root.textContent, 'No runs since the server started.');
    const failing = setup(RunsPanel, { runs: async () => { throw new Error('HTTP 503'); } });
    await failing.panel.refresh();
    assert.equal(failing.root.textContent, 'HTTP 503');
  });
});
