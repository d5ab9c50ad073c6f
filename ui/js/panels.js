// The drawer's tabs for what the agent keeps across sessions: memory (list, edit, accept a
// pending write, delete), skills (list, trust a project's skill), schedules (list, run
// now, enable or disable) and the server's runs (who started each, stop a running one).
// Every text from the server goes in through textContent.

import { el } from './render.js';

/** A button that runs `action` and reports its error in `status`. */
function actionButton(doc, label, action, onStatus, className = '') {
  const b = el(doc, 'button', className, label);
  b.type = 'button';
  b.addEventListener('click', async () => {
    b.disabled = true;
    try {
      await action();
    } catch (err) {
      onStatus(err.message);
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

/** A button that asks for a second click before `action`. */
function confirmButton(doc, label, confirmLabel, action, onStatus, className = '') {
  const b = el(doc, 'button', className, label);
  b.type = 'button';
  let armed = false;
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.textContent = confirmLabel;
      return;
    }
    b.disabled = true;
    try {
      await action();
    } catch (err) {
      onStatus(err.message);
      b.disabled = false;
    }
  });
  return b;
}

/** What the tabs share: their root, the API, the status line, and how a failed read
 * shows (its message, in the tab). */
class Panel {
  constructor({ root, api, onStatus }) {
    this.root = root;
    this.doc = root.ownerDocument;
    this.api = api;
    this.onStatus = onStatus ?? (() => {});
  }

  /** `read()`'s answer, or null after showing its error in the tab. */
  async load(read) {
    try {
      return await read();
    } catch (err) {
      this.root.replaceChildren(el(this.doc, 'p', 'muted', err.message));
      return null;
    }
  }
}

/** The memory tab: the user's and the project's facts, pending writes first. */
export class MemoryPanel extends Panel {
  async refresh() {
    const list = await this.load(() => this.api.memory());
    if (list) this.render(list);
  }

  render(list) {
    const doc = this.doc;
    const out = [];
    for (const store of list.stores ?? []) {
      out.push(el(doc, 'p', 'muted', `${store.target}: ${store.used}/${store.budget} characters`));
    }
    const facts = [...(list.facts ?? [])].sort((a, b) => (a.status === 'pending' ? 0 : 1) - (b.status === 'pending' ? 0 : 1));
    if (!facts.length) out.push(el(doc, 'p', 'muted', 'Nothing remembered yet.'));
    const ul = el(doc, 'ul', 'rows');
    for (const f of facts) ul.append(this.row(f));
    out.push(ul);
    this.root.replaceChildren(...out);
  }

  row(f) {
    const doc = this.doc;
    const li = el(doc, 'li', `row fact fact-${f.status}`);
    li.dataset.id = String(f.id);
    const head = el(doc, 'div', 'row-head');
    head.append(el(doc, 'span', 'badge', f.status === 'pending' ? `pending ${f.action ?? ''}`.trim() : f.target));
    head.append(el(doc, 'span', 'muted', `#${f.id}`));
    const text = el(doc, 'p', 'row-text', f.content);
    const actions = el(doc, 'div', 'row-actions');
    if (f.status === 'pending') {
      actions.append(actionButton(doc, 'Accept', async () => {
        await this.api.acceptFact(f.id);
        this.onStatus(`Accepted #${f.id}.`);
        await this.refresh();
      }, this.onStatus, 'accept'));
    } else {
      actions.append(actionButton(doc, 'Edit', async () => this.edit(li, f), this.onStatus, 'edit'));
    }
    actions.append(confirmButton(doc, 'Delete', 'Really delete', async () => {
      await this.api.deleteFact(f.id);
      this.onStatus(`Deleted #${f.id}.`);
      await this.refresh();
    }, this.onStatus, 'danger delete'));
    li.append(head, text, actions);
    return li;
  }

  edit(li, f) {
    const doc = this.doc;
    const form = el(doc, 'form', 'row-form');
    const input = el(doc, 'input');
    input.value = f.content;
    input.setAttribute('aria-label', `Fact #${f.id}`);
    const save = el(doc, 'button', 'primary', 'Save');
    save.type = 'submit';
    form.append(input, save);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      try {
        await this.api.editFact(f.id, input.value.trim());
        this.onStatus(`Saved #${f.id}.`);
        await this.refresh();
      } catch (err) {
        this.onStatus(err.message);
      }
    });
    li.querySelector('.row-text').replaceWith(form);
    input.focus();
  }
}

/** The skills tab: each skill, where it comes from, whether it is offered; *Trust* for a
 * project's skill the model does not see yet. */
export class SkillsPanel extends Panel {
  async refresh() {
    const list = await this.load(() => this.api.skills());
    if (!list) return;
    const doc = this.doc;
    const ul = el(doc, 'ul', 'rows');
    for (const s of list.skills ?? []) {
      const li = el(doc, 'li', 'row skill');
      li.dataset.name = s.name;
      const head = el(doc, 'div', 'row-head');
      head.append(el(doc, 'strong', '', s.name), el(doc, 'span', 'badge', s.origin));
      li.append(head, el(doc, 'p', 'row-text', s.description), el(doc, 'p', 'muted status-text', s.status));
      if (!s.trusted && s.origin !== 'home') {
        const actions = el(doc, 'div', 'row-actions');
        actions.append(confirmButton(doc, 'Trust…', 'Trust this folder as it is now', async () => {
          await this.api.trustSkill(s.name);
          this.onStatus(`Trusted ${s.name}.`);
          await this.refresh();
        }, this.onStatus, 'trust'));
        li.append(actions);
      }
      ul.append(li);
    }
    for (const b of list.broken ?? []) {
      ul.append(el(doc, 'li', 'row broken muted', `(broken) ${b.file}: ${b.rule}`));
    }
    const none = el(doc, 'p', 'muted', 'No skills. Write one with odek skill new NAME.');
    this.root.replaceChildren(ul.childElementCount ? ul : none);
  }
}

/** The schedules tab: each job, its next run and last outcome; run now, enable, disable. */
export class SchedulesPanel extends Panel {
  async refresh() {
    const list = await this.load(() => this.api.schedules());
    if (list) this.render(list.schedules ?? []);
  }

  render(jobs) {
    const doc = this.doc;
    if (!jobs.length) {
      this.root.replaceChildren(el(doc, 'p', 'muted', 'No scheduled jobs. Add one with odek schedule add.'));
      return;
    }
    const ul = el(doc, 'ul', 'rows');
    for (const j of jobs) {
      const li = el(doc, 'li', `row job${j.enabled ? '' : ' disabled'}`);
      li.dataset.name = j.name;
      const head = el(doc, 'div', 'row-head');
      head.append(el(doc, 'strong', '', j.name), el(doc, 'span', 'badge', j.enabled ? j.cron : 'disabled'));
      const next = j.enabled && j.next_run ? `next ${j.next_run}` : 'not scheduled';
      const last = j.last_outcome ? ` · last: ${j.last_outcome}` : '';
      li.append(head, el(doc, 'p', 'row-text', j.task), el(doc, 'p', 'muted when', `${next}${last}`));
      const actions = el(doc, 'div', 'row-actions');
      actions.append(actionButton(doc, 'Run now', async () => {
        await this.api.runSchedule(j.name);
        this.onStatus(`Started ${j.name}.`);
      }, this.onStatus, 'run'));
      const toggle = j.enabled ? 'Disable' : 'Enable';
      actions.append(actionButton(doc, toggle, async () => {
        const list = await this.api.switchSchedule(j.name, !j.enabled);
        this.render(list.schedules ?? []);
      }, this.onStatus, 'toggle'));
      li.append(actions);
      ul.append(li);
    }
    this.root.replaceChildren(ul);
  }
}

/** A run's background jobs: each with its state and the last lines of its output. */
function jobList(doc, jobs) {
  const ul = el(doc, 'ul', 'jobs');
  for (const j of jobs) {
    const li = el(doc, 'li', `job job-${j.status === 'running' ? 'running' : 'ended'}`);
    li.dataset.id = String(j.id);
    li.append(el(doc, 'p', 'job-head', `⏳ job ${j.id} · ${j.status} · ${j.seconds} s · ${j.command}`));
    if (j.tail) li.append(el(doc, 'pre', 'job-tail', j.tail));
    ul.append(li);
  }
  return ul;
}

/** Who started a run, as the runs tab names it. */
export const ORIGIN_LABELS = Object.freeze({
  serve: 'web',
  cli: 'terminal',
  telegram: 'Telegram',
  schedule: 'schedule',
  mcp: 'MCP',
  subagent: 'sub-agent',
});

/** The runs tab: every run of the server — the web UI's, Telegram's, scheduled jobs', MCP
 * clients' — running ones first, each with who started it; *Stop* cancels a running one. */
export class RunsPanel extends Panel {
  async refresh() {
    const list = await this.load(() => this.api.runs());
    if (list) this.render(list.runs ?? []);
  }

  render(runs) {
    const doc = this.doc;
    if (!runs.length) {
      this.root.replaceChildren(el(doc, 'p', 'muted', 'No runs since the server started.'));
      return;
    }
    const running = (r) => (r.status === 'running' ? 0 : 1);
    const ul = el(doc, 'ul', 'rows');
    for (const r of [...runs].sort((a, b) => running(a) - running(b))) ul.append(this.row(r));
    this.root.replaceChildren(ul);
  }

  jobs(jobs) {
    return jobList(this.doc, jobs);
  }

  row(r) {
    const doc = this.doc;
    const li = el(doc, 'li', `row run run-${r.status}`);
    li.dataset.id = r.run_id;
    li.dataset.origin = r.origin ?? '';
    const head = el(doc, 'div', 'row-head');
    const origin = ORIGIN_LABELS[r.origin] ?? (r.origin || 'unknown');
    head.append(el(doc, 'strong', 'origin', origin), el(doc, 'span', 'badge status', r.status.replace('_', ' ')));
    const session = r.session_id ? ` · session ${r.session_id}` : '';
    li.append(head, el(doc, 'p', 'muted when', `started ${r.started_at}${session}`));
    if (r.error && r.status !== 'cancelled') li.append(el(doc, 'p', 'muted row-text', r.error));
    if (r.jobs?.length) li.append(this.jobs(r.jobs));
    if (r.status === 'running') {
      const actions = el(doc, 'div', 'row-actions');
      actions.append(actionButton(doc, 'Stop', async () => {
        await this.api.cancel(r.run_id);
        this.onStatus(`Stopping the ${origin} run…`);
        await this.refresh();
      }, this.onStatus, 'danger stop'));
      li.append(actions);
    }
    return li;
  }
}
