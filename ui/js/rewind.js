// "Rewind to here": under each prompt of a saved session whose turn (or a later one) changed
// files, a button that first shows what a rewind would do — every file, files changed since
// outside odek, what the checkpoints do not hold — and only writes on confirmation. Paths
// and counts reach the DOM through textContent only.

import { el } from './render.js';

const CHANGE_SIGN = { create: '+', restore: '~', remove: '−' };

/**
 * Adds the buttons to the prompts of `log` (`.msg-user[data-turn]`) for session `sid`.
 * `onRewound(result)` is called after a rewind.
 */
export async function offerRewinds({ log, api, sid, onStatus, onRewound }) {
  let list;
  try {
    list = await api.checkpoints(sid);
  } catch {
    return; // no checkpoints to offer (an old server, a deleted session)
  }
  const turns = (list.checkpoints ?? []).map((c) => c.turn);
  if (!turns.length) return;
  const doc = log.ownerDocument;
  for (const prompt of log.querySelectorAll('.msg-user[data-turn]')) {
    const turn = Number(prompt.dataset.turn);
    if (!turns.some((t) => t >= turn)) continue;
    if (prompt.nextElementSibling?.classList.contains('rewind-offer')) continue;
    const offer = el(doc, 'div', 'rewind-offer');
    const button = el(doc, 'button', 'link rewind-here', 'Rewind to here');
    button.type = 'button';
    button.dataset.turn = String(turn);
    button.setAttribute('aria-label', `Rewind the files to before turn ${turn}`);
    button.addEventListener('click', () => preview({ doc, offer, api, sid, turn, onStatus, onRewound }));
    offer.append(button);
    prompt.after(offer);
  }
}

async function preview({ doc, offer, api, sid, turn, onStatus, onRewound }) {
  offer.querySelector('.rewind-card')?.remove();
  let plan;
  try {
    plan = await api.rewind(sid, { turn, dry_run: true });
  } catch (err) {
    onStatus(`Cannot rewind: ${err.message}`);
    return;
  }
  const card = el(doc, 'div', 'rewind-card');
  card.setAttribute('role', 'group');
  card.setAttribute('aria-label', `Rewind to before turn ${turn}`);
  card.append(el(doc, 'p', 'rewind-title', `Rewind to before turn ${turn} (checkpoint ${plan.to})`));
  const conflicts = new Set(plan.conflicts ?? []);
  if (plan.files.length) {
    const files = el(doc, 'ul', 'rewind-files');
    for (const f of plan.files) {
      const li = el(doc, 'li', conflicts.has(f.path) ? 'conflict' : '');
      li.append(
        el(doc, 'span', 'rewind-change', `${CHANGE_SIGN[f.change] ?? '~'} ${f.change}`),
        el(doc, 'code', 'rewind-path', f.path),
      );
      if (conflicts.has(f.path)) li.append(el(doc, 'span', 'rewind-conflict', 'changed since outside odek'));
      files.append(li);
    }
    card.append(files);
  } else {
    card.append(el(doc, 'p', 'rewind-result', 'The files are already as they were then.'));
  }
  for (const what of plan.not_covered ?? []) {
    card.append(el(doc, 'p', 'rewind-not-covered', `Not covered, left as it is: ${what}`));
  }
  const actions = el(doc, 'div', 'approval-actions');
  const overwrite = conflicts.size ? `Overwrite ${conflicts.size} changed file(s) and rewind` : 'Rewind files';
  const go = button(doc, conflicts.size ? 'danger rewind-go' : 'primary rewind-go', overwrite);
  const both = button(doc, 'rewind-both', 'Files and conversation');
  const talk = button(doc, 'rewind-conversation', 'Conversation only');
  const cancel = button(doc, 'rewind-cancel', 'Cancel');
  const all = [go, both, talk, cancel];
  if (!plan.files.length) {
    go.hidden = true;
    both.hidden = true;
  }
  cancel.addEventListener('click', () => card.remove());
  const run = async (request) => {
    for (const b of all) b.disabled = true;
    try {
      const done = await api.rewind(sid, request);
      const said = [];
      if (done.checkpoint) said.push(`Rewound ${done.files.length} file(s). This rewind is checkpoint ${done.checkpoint}: rewinding to it undoes it.`);
      if (done.forked) said.push(`The conversation continues in a new session with the first ${done.fork_at} turn(s).`);
      actions.replaceWith(el(doc, 'p', 'rewind-result', said.join(' ')));
      onRewound(done);
    } catch (err) {
      onStatus(`Rewind refused: ${err.message}`);
      for (const b of all) b.disabled = false;
    }
  };
  const force = conflicts.size > 0;
  go.addEventListener('click', () => run({ to: plan.to, force }));
  both.addEventListener('click', () => run({ to: plan.to, force, conversation: true }));
  talk.addEventListener('click', () => run({ turn, files: false, conversation: true }));
  actions.append(go, both, talk, cancel);
  card.append(actions);
  offer.append(card);
  (plan.files.length ? go : talk).focus();
}

function button(doc, className, text) {
  const b = el(doc, 'button', className, text);
  b.type = 'button';
  return b;
}
