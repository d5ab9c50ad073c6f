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
  card.append(el(doc, 'p', 'rewind-title', `Rewind the files to before turn ${turn} (checkpoint ${plan.to})`));
  if (!plan.files.length) {
    card.append(el(doc, 'p', 'rewind-result', 'The files are already as they were then.'));
    offer.append(card);
    return;
  }
  const conflicts = new Set(plan.conflicts ?? []);
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
  for (const what of plan.not_covered ?? []) {
    card.append(el(doc, 'p', 'rewind-not-covered', `Not covered, left as it is: ${what}`));
  }
  const actions = el(doc, 'div', 'approval-actions');
  const go = el(doc, 'button', conflicts.size ? 'danger rewind-go' : 'primary rewind-go',
    conflicts.size ? `Overwrite ${conflicts.size} changed file(s) and rewind` : 'Rewind files');
  const cancel = el(doc, 'button', 'rewind-cancel', 'Cancel');
  go.type = 'button';
  cancel.type = 'button';
  cancel.addEventListener('click', () => card.remove());
  go.addEventListener('click', async () => {
    go.disabled = true;
    cancel.disabled = true;
    try {
      const done = await api.rewind(sid, { to: plan.to, force: conflicts.size > 0 });
      actions.replaceWith(el(doc, 'p', 'rewind-result',
        `Rewound ${done.files.length} file(s). This rewind is checkpoint ${done.checkpoint}: rewinding to it undoes it.`));
      onRewound(done);
    } catch (err) {
      onStatus(`Rewind refused: ${err.message}`);
      go.disabled = false;
      cancel.disabled = false;
    }
  });
  actions.append(go, cancel);
  card.append(actions);
  offer.append(card);
  go.focus();
}
