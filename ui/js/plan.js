// The drawer's plan tab: the seed's read-only plan panel and its polling lifecycle.
// Step text comes from the model, so it reaches the DOM only through textContent.

import { el } from './render.js';

/** How often the panel asks for the plan while it is visible. */
export const POLL_MS = 5000;
/** Notes longer than this many characters are cut and end with `…`. */
export const NOTE_MAX = 80;
/** The reply when a session has no plan (the same words as Telegram's /plan_status). */
export const NO_PLAN = 'No active plan in this session.';

export const GLYPHS = Object.freeze({
  done: '✅',
  in_progress: '🔄',
  pending: '⬜',
  blocked: '⛔',
});

const STATUS_LABEL = Object.freeze({
  done: 'done',
  in_progress: 'in progress',
  pending: 'pending',
  blocked: 'blocked',
});

/** The glyph of a step status; unknown statuses show as pending. */
export function glyph(status) {
  return Object.hasOwn(GLYPHS, status) ? GLYPHS[status] : GLYPHS.pending;
}

/** `📋 Plan — vN · X/Y done[ · Z blocked]`. */
export function planHeader(view) {
  const steps = Array.isArray(view.steps) ? view.steps : [];
  const done = steps.filter((s) => s.status === 'done').length;
  const blocked = steps.filter((s) => s.status === 'blocked').length;
  let header = `📋 Plan — v${view.version ?? 0} · ${done}/${steps.length} done`;
  if (blocked > 0) header += ` · ${blocked} blocked`;
  return header;
}

/** A note cut at `max` characters (whole code points) with `…` when it was longer. */
export function truncateNote(note, max = NOTE_MAX) {
  const chars = Array.from(String(note ?? ''));
  if (chars.length <= max) return chars.join('');
  return chars.slice(0, max).join('') + '…';
}

/** Renders the `GET …/plan` answer (or null: no session) into `container`. */
export function renderPlan(container, view) {
  const doc = container.ownerDocument;
  if (!view || !view.found) {
    container.replaceChildren(el(doc, 'p', 'plan-empty', NO_PLAN));
    return;
  }
  const header = el(doc, 'p', 'plan-header', planHeader(view));
  const list = el(doc, 'ol', 'plan-steps');
  for (const step of view.steps ?? []) {
    const row = el(doc, 'li', 'plan-step');
    const status = Object.hasOwn(GLYPHS, step.status) ? step.status : 'pending';
    row.dataset.status = status;
    const mark = el(doc, 'span', 'plan-glyph', glyph(status));
    mark.setAttribute('role', 'img');
    mark.setAttribute('aria-label', STATUS_LABEL[status]);
    row.append(mark, el(doc, 'code', 'plan-id', step.id), el(doc, 'span', 'plan-title', step.title));
    if (step.note) {
      const note = el(doc, 'span', 'plan-note', truncateNote(step.note));
      note.title = String(step.note);
      row.append(note);
    }
    list.append(row);
  }
  container.replaceChildren(header, list);
}

/**
 * Polls the plan every POLL_MS while the panel is visible — drawer open, plan tab active
 * and document visible — and only then. Becoming visible, switching session and the
 * document becoming visible again refresh at once; anything else stops the timer.
 *
 * `fetchPlan(sessionId)` resolves to the view; `render(view)` draws it; `doc` is the
 * document whose visibility counts; `timers` provides setInterval/clearInterval.
 */
export class PlanPoller {
  constructor({ fetchPlan, render, doc, timers = globalThis, interval = POLL_MS, onError }) {
    this.fetchPlan = fetchPlan;
    this.render = render;
    this.doc = doc;
    this.timers = timers;
    this.interval = interval;
    this.onError = onError ?? (() => {});
    this.sessionId = null;
    this.drawerOpen = false;
    this.tabActive = false;
    this.timer = null;
    this.generation = 0;
    this.inFlight = false;
    this.again = false;
    this.onVisibility = () => this.update(true);
    doc.addEventListener('visibilitychange', this.onVisibility);
  }

  /** True while the panel can be seen. */
  visible() {
    return this.drawerOpen && this.tabActive && this.doc.visibilityState === 'visible';
  }

  setDrawerOpen(open) {
    const was = this.visible();
    this.drawerOpen = Boolean(open);
    this.update(!was);
  }

  setTabActive(active) {
    const was = this.visible();
    this.tabActive = Boolean(active);
    this.update(!was);
  }

  setSession(sessionId) {
    if (sessionId === this.sessionId) return;
    this.sessionId = sessionId ?? null;
    this.generation += 1;
    this.inFlight = false;
    this.again = false;
    this.update(true);
  }

  /** Refreshes at once when visible (a run changed the plan). */
  poke() {
    if (this.visible()) this.refresh();
  }

  /** Starts or stops the timer; `refreshNow` asks once immediately when visible. */
  update(refreshNow) {
    if (!this.visible()) {
      this.stop();
      return;
    }
    if (refreshNow) this.refresh();
    if (this.timer === null) {
      this.timer = this.timers.setInterval(() => this.refresh(), this.interval);
    }
  }

  stop() {
    if (this.timer !== null) {
      this.timers.clearInterval(this.timer);
      this.timer = null;
    }
  }

  async refresh() {
    if (!this.visible()) return;
    if (this.sessionId === null) {
      this.render(null);
      return;
    }
    if (this.inFlight) {
      // The answer on its way may predate a change: ask once more when it is in.
      this.again = true;
      return;
    }
    const generation = this.generation;
    this.inFlight = true;
    this.again = false;
    try {
      const view = await this.fetchPlan(this.sessionId);
      if (generation === this.generation && this.visible()) this.render(view);
    } catch (err) {
      if (generation === this.generation) this.onError(err);
    } finally {
      if (generation === this.generation) {
        this.inFlight = false;
        if (this.again) {
          this.again = false;
          this.refresh();
        }
      }
    }
  }

  destroy() {
    this.stop();
    this.doc.removeEventListener('visibilitychange', this.onVisibility);
  }
}
