// Wires the page together: session list, chat, event stream, drawer and plan panel.

import { api } from './api.js';
import { Attachments } from './attachments.js';
import { Chat } from './chat.js';
import { CommandHints } from './commands.js';
import { Drawer } from './drawer.js';
import { MemoryPanel, RunsPanel, SchedulesPanel, SkillsPanel } from './panels.js';
import { PlanPoller, renderPlan } from './plan.js';
import { offerRewinds } from './rewind.js';
import { SessionList } from './sessions.js';
import { openStream } from './stream.js';
import { themePicker } from './theme.js';

const $ = (id) => document.getElementById(id);

const ui = {
  log: $('log'),
  form: $('prompt-form'),
  prompt: $('prompt'),
  send: $('send'),
  queue: $('queue'),
  cancel: $('cancel'),
  status: $('status'),
  title: $('session-title'),
  sessions: $('sessions'),
  toggleSessions: $('toggle-sessions'),
  plan: $('plan'),
  model: $('model'),
};

/** The configured model (what a new session gets unless another is picked). */
let defaultModel = null;
/** The configured provider: a session on another one shows `PROVIDER:MODEL`. */
let serverProvider = null;
/** The open session's model, put back when a switch is refused. */
let sessionModel = null;

themePicker($('theme'), window.localStorage);

const attachments = new Attachments({
  input: $('attach-input'),
  button: $('attach'),
  list: $('attachments'),
  onStatus: (text) => status(text),
});

const hints = new CommandHints({ prompt: ui.prompt, list: $('command-hints'), load: () => api.commands() });

/** The model picker: its options from GET /api/models; a session keeps its own model. */
async function loadModels() {
  let list;
  try {
    list = await api.models();
  } catch {
    ui.model.hidden = true;
    return;
  }
  defaultModel = list.default;
  serverProvider = list.provider ?? null;
  attachments.images = list.images === true;
  ui.model.replaceChildren();
  for (const m of list.models) {
    const option = document.createElement('option');
    option.value = m.name;
    option.textContent = m.name;
    option.title = `from ${m.from.join(', ')}`;
    ui.model.append(option);
  }
  ui.model.value = defaultModel;
  ui.model.hidden = list.models.length < 2;
}

/** Shows the session's model in the picker (another pick switches it), or the model of a
 * new session. */
function showModel(detail) {
  ui.model.disabled = false;
  if (detail?.model) {
    const other = detail.provider && detail.provider !== serverProvider;
    sessionModel = other ? `${detail.provider}:${detail.model}` : detail.model;
    if (![...ui.model.options].some((o) => o.value === sessionModel)) {
      const option = document.createElement('option');
      option.value = sessionModel;
      option.textContent = sessionModel;
      ui.model.append(option);
    }
    ui.model.value = sessionModel;
    ui.model.title = 'Model of this session: picking another switches it';
  } else {
    sessionModel = null;
    if (defaultModel) ui.model.value = defaultModel;
    ui.model.title = 'Model of a new session';
  }
}

/** A pick on an open session switches its model at once (saved; its next turns ask it). */
async function switchModel() {
  if (!sessionId || ui.model.value === sessionModel) return;
  const wanted = ui.model.value;
  try {
    const switched = await api.switchModel(sessionId, wanted);
    sessionModel = switched.model;
    sessions.refresh();
    status(switched.note ? `Model: ${switched.model} — ${switched.note}` : `Model: ${switched.model}`);
  } catch (err) {
    ui.model.value = sessionModel;
    status(err.message);
  }
}
ui.model.addEventListener('change', switchModel);

let sessionId = null;
let runId = null;
let sessionIdShownInPlan = null;

function status(text) {
  ui.status.textContent = text;
}

function setRunning(id) {
  runId = id;
  // The input stays open: during a run, Send steers it and Queue waits for its end.
  ui.send.disabled = false;
  ui.queue.hidden = id === null;
  ui.cancel.hidden = id === null;
  ui.cancel.disabled = false;
}

const poller = new PlanPoller({
  fetchPlan: (sid) => api.plan(sid),
  render: (view) => renderPlan(ui.plan, view),
  doc: document,
  onError: (err) => status(`Plan unavailable: ${err.message}`),
});

const chat = new Chat({
  log: ui.log,
  api,
  onStatus: status,
  onRunStarted: (id) => setRunning(id),
  onRunEnded: (id, how) => {
    if (id === runId) setRunning(null);
    status(how === 'failed' ? 'Run failed.' : '');
    sessions.refresh();
    poller.poke();
    showRewinds();
  },
  onPlanChanged: (sid) => {
    if (sid === sessionId) poller.poke();
  },
});

const sessions = new SessionList({
  list: $('session-list'),
  search: $('session-search'),
  api,
  onStatus: status,
  onSelect: (sid) => openSession(sid),
});

const panels = {
  memory: new MemoryPanel({ root: $('memory'), api, onStatus: status }),
  skills: new SkillsPanel({ root: $('skills'), api, onStatus: status }),
  schedules: new SchedulesPanel({ root: $('schedules'), api, onStatus: status }),
  runs: new RunsPanel({ root: $('runs'), api, onStatus: status }),
};

/** The runs tab follows the server while it is shown: read again every few seconds. */
const RUNS_EVERY_MS = 3000;
let runsTimer = null;
function followRuns(shown) {
  if (shown && runsTimer === null) {
    runsTimer = setInterval(() => panels.runs.refresh(), RUNS_EVERY_MS);
  } else if (!shown && runsTimer !== null) {
    clearInterval(runsTimer);
    runsTimer = null;
  }
}

const drawer = new Drawer({
  drawer: $('drawer'),
  opener: $('open-drawer'),
  closer: $('close-drawer'),
  tabs: [
    { name: 'plan', tab: $('tab-plan'), panel: $('panel-plan') },
    { name: 'session', tab: $('tab-session'), panel: $('panel-session') },
    { name: 'memory', tab: $('tab-memory'), panel: $('panel-memory') },
    { name: 'skills', tab: $('tab-skills'), panel: $('panel-skills') },
    { name: 'schedules', tab: $('tab-schedules'), panel: $('panel-schedules') },
    { name: 'runs', tab: $('tab-runs'), panel: $('panel-runs') },
  ],
  onChange: () => {
    poller.setDrawerOpen(drawer.isOpen());
    poller.setTabActive(drawer.active === 'plan');
    // The memory, skills, schedules and runs tabs are read when shown.
    if (drawer.isOpen()) panels[drawer.active]?.refresh();
    followRuns(drawer.isOpen() && drawer.active === 'runs');
  },
});

function showSessionTools(detail) {
  $('session-none').hidden = detail !== null;
  $('session-tools').hidden = detail === null;
  $('confirm-delete').hidden = true;
  if (!detail) return;
  $('rename').value = detail.title ?? '';
  $('export-md').href = api.exportUrl(sessionId, 'md');
  $('export-json').href = api.exportUrl(sessionId, 'json');
}

function setSession(sid, detail) {
  sessionId = sid;
  ui.title.textContent = detail?.title || (sid ? sid : 'New session');
  sessions.select(sid);
  if (sid !== sessionIdShownInPlan) {
    // Another session's plan must not linger in the panel until the next refresh.
    ui.plan.replaceChildren();
    sessionIdShownInPlan = sid;
  }
  poller.setSession(sid);
  showSessionTools(sid ? detail : null);
  showModel(sid ? detail : null);
}

async function openSession(sid) {
  closeSessionsOnNarrow();
  let detail;
  try {
    detail = await api.session(sid);
  } catch (err) {
    status(`Cannot open the session: ${err.message}`);
    return;
  }
  setSession(sid, detail);
  chat.showSession(sid, detail);
  showRewinds();
  setRunning(detail.running && detail.run_id ? detail.run_id : null);
  ui.prompt.focus();
}

/** "Rewind to here" under the prompts of the open session whose turns changed files. */
function showRewinds() {
  if (!sessionId) return;
  offerRewinds({
    log: ui.log,
    api,
    sid: sessionId,
    onStatus: status,
    onRewound: (done) => {
      sessions.refresh();
      if (done.forked) openSession(done.forked);
      else status('Files rewound.');
    },
  });
}

function newSession() {
  closeSessionsOnNarrow();
  setSession(null, null);
  chat.showSession(null, null);
  setRunning(null);
  ui.prompt.focus();
}

/** `/compact [what to keep]`: the open session's conversation summarised by the model. */
async function compact(keep) {
  if (!sessionId) {
    status('Nothing to compact: open a session first.');
    return;
  }
  ui.send.disabled = true;
  status('Summarising the conversation…');
  try {
    const done = await api.compact(sessionId, keep);
    ui.prompt.value = '';
    await openSession(sessionId);
    status(done.line);
  } catch (err) {
    status(err.message);
  } finally {
    ui.send.disabled = false;
  }
}

async function submit(queue = false) {
  const content = ui.prompt.value.trim();
  if (!content) return;
  if (/^\/compact(\s|$)/.test(content)) {
    await compact(content.slice('/compact'.length).trim());
    return;
  }
  ui.send.disabled = true;
  let started;
  let files = [];
  try {
    const picked = !sessionId && ui.model.value && ui.model.value !== defaultModel ? ui.model.value : null;
    files = attachments.take();
    started = await api.prompt(content, sessionId, picked, Attachments.wire(files), queue && runId !== null);
  } catch (err) {
    attachments.restore(files);
    status(err.message);
    ui.send.disabled = false;
    return;
  }
  ui.send.disabled = false;
  ui.prompt.value = '';
  if (started.delivered) {
    // The session runs a turn: steered into it (shown when the turn takes it), or queued.
    status(started.delivered === 'queued'
      ? `Queued (${started.position}): runs when this turn ends.`
      : 'Sent to the running turn: it reads it before its next step.');
    return;
  }
  hints.show([]);
  // A custom command's file may ask for what odek cannot keep (an unknown tool name).
  status((started.warnings ?? []).join(' '));
  if (sessionId !== started.session_id) {
    setSession(started.session_id, { title: content, model: ui.model.value || defaultModel });
  }
  chat.startRun(started.run_id, started.session_id, content);
  sessions.refresh();
}

ui.form.addEventListener('submit', (e) => {
  e.preventDefault();
  submit();
});
ui.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit(e.altKey);
  }
});
ui.queue.addEventListener('click', () => submit(true));
ui.cancel.addEventListener('click', async () => {
  const cancelling = runId;
  if (cancelling === null) return;
  ui.cancel.disabled = true;
  try {
    await api.cancel(cancelling);
    // The run may have ended while the request was on its way.
    if (runId === cancelling) status('Cancelling…');
  } catch (err) {
    if (runId === cancelling) status(err.message);
  }
});
$('new-session').addEventListener('click', newSession);

$('rename-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = $('rename').value.trim();
  if (!sessionId || !name) return;
  try {
    await api.rename(sessionId, name);
    ui.title.textContent = name;
    status('Renamed.');
    sessions.refresh();
  } catch (err) {
    status(err.message);
  }
});
$('delete-session').addEventListener('click', () => {
  $('confirm-delete').hidden = false;
  $('confirm-delete').focus();
});
$('confirm-delete').addEventListener('click', async () => {
  if (!sessionId) return;
  try {
    await api.remove(sessionId);
    status('Deleted.');
    newSession();
    sessions.refresh();
  } catch (err) {
    status(err.message);
  }
});

function narrow() {
  return window.matchMedia('(max-width: 799px)').matches;
}
function closeSessionsOnNarrow() {
  if (narrow()) {
    ui.sessions.classList.remove('open');
    ui.toggleSessions.setAttribute('aria-expanded', 'false');
  }
}
ui.toggleSessions.addEventListener('click', () => {
  const open = ui.sessions.classList.toggle('open');
  ui.toggleSessions.setAttribute('aria-expanded', String(open));
  if (open) $('new-session').focus();
});

openStream(
  (type, payload) => chat.handle(type, payload),
  (state) => {
    if (state !== 'live') status(`Event stream ${state}…`);
    else if (ui.status.textContent.startsWith('Event stream')) status('');
  },
);

api.health().then(
  (h) => {
    ui.title.title = `model ${h.model}`;
  },
  (err) => status(err.status === 401 ? 'Signed out: open the token URL odek serve printed.' : err.message),
);
newSession();
sessions.refresh();
loadModels();
hints.refresh();
