// The conversation: past messages of the open session, and live turns built from the
// event stream — streamed answer text, one row per tool call, approval and question cards.

import { setMarkdown } from './markdown.js';
import { bubble, el, endSubagentRow, setToolStatus, subagentRow, summarizeArgs, toolRow } from './render.js';

/** Frames for runs this page does not know yet are kept this long (a prompt's answer can
 * arrive after its first frames). */
const MAX_PENDING_RUNS = 50;
const MAX_PENDING_FRAMES = 2000;
/** What opens a message sent during a turn, as saved (odek's `engine::STEER_NOTE`). */
const STEER_NOTE = '[Sent by the user while you were working on this turn]\n';

export class Chat {
  constructor({ log, api, onRunEnded, onRunStarted, onPlanChanged, onStatus }) {
    this.log = log;
    this.doc = log.ownerDocument;
    this.api = api;
    this.onRunEnded = onRunEnded ?? (() => {});
    this.onRunStarted = onRunStarted ?? (() => {});
    this.onPlanChanged = onPlanChanged ?? (() => {});
    this.onStatus = onStatus ?? (() => {});
    this.sessionId = null;
    this.turns = new Map(); // run_id → turn view
    this.pending = new Map(); // run_id → frames seen before the run was known
    this.activeRun = null;
    this.promptCount = 0;
  }

  /** Shows a session's saved conversation (or an empty one for `null`). */
  showSession(sessionId, detail) {
    this.sessionId = sessionId;
    this.turns.clear();
    this.log.replaceChildren();
    this.promptCount = 0; // the session's turns: each prompt starts one
    if (!detail) return;
    const running = detail.running && detail.run_id ? detail.run_id : null;
    const rows = new Map();
    for (const m of detail.messages ?? []) {
      if (m.role === 'user') {
        const prompt = bubble(this.doc, 'user', userText(m.content));
        prompt.dataset.turn = String(++this.promptCount);
        this.log.append(prompt);
      } else if (m.role === 'assistant') {
        if (typeof m.content === 'string' && m.content.trim()) {
          const answer = bubble(this.doc, 'assistant', '');
          setMarkdown(answer, m.content);
          this.log.append(answer);
        }
        if (Array.isArray(m.tool_calls) && m.tool_calls.length) {
          const list = el(this.doc, 'ul', 'tools');
          for (const call of m.tool_calls) {
            const row = toolRow(this.doc, { tool: call.function?.name ?? 'tool', status: 'ok' });
            rows.set(call.id, row);
            list.append(row);
          }
          this.log.append(list);
        }
      } else if (m.role === 'tool' && rows.has(m.tool_call_id)) {
        const text = typeof m.content === 'string' ? m.content : '';
        if (text.startsWith('error:')) setToolStatus(rows.get(m.tool_call_id), 'failed');
      }
    }
    if (running) {
      // Its frames from now on land here; the saved part is above.
      const turn = this.turn(running, null);
      const early = this.pending.get(running) ?? [];
      this.pending.delete(running);
      for (const [type, payload] of early) this.apply(turn, type, payload);
    }
    this.scroll();
  }

  /** A run this page started: shows the prompt and takes the frames that came first. */
  startRun(runId, sessionId, content) {
    this.sessionId = sessionId;
    const turn = this.turn(runId, content);
    this.activeRun = runId;
    this.onRunStarted(runId);
    const early = this.pending.get(runId) ?? [];
    this.pending.delete(runId);
    for (const [type, payload] of early) this.apply(turn, type, payload);
    return turn;
  }

  /** One frame from the stream. */
  handle(type, payload) {
    const runId = payload.run_id;
    if (!runId) return;
    let turn = this.turns.get(runId);
    if (!turn && this.sessionId && payload.session_id === this.sessionId && type === 'run_started') {
      // A run of this session started elsewhere (another tab, or the API).
      turn = this.turn(runId, null);
    }
    if (!turn) {
      if (runId === this.activeRun && (type === 'run_completed' || type === 'run_failed')) {
        // The page switched to another session while its own run went on.
        this.activeRun = null;
        this.onRunEnded(runId, type === 'run_completed' ? 'completed' : 'failed');
        return;
      }
      this.keepForLater(runId, type, payload);
      return;
    }
    this.apply(turn, type, payload);
  }

  keepForLater(runId, type, payload) {
    if (!this.pending.has(runId)) {
      if (this.pending.size >= MAX_PENDING_RUNS) {
        this.pending.delete(this.pending.keys().next().value);
      }
      this.pending.set(runId, []);
    }
    const frames = this.pending.get(runId);
    if (frames.length < MAX_PENDING_FRAMES) frames.push([type, payload]);
  }

  turn(runId, content) {
    const section = el(this.doc, 'article', 'turn');
    section.dataset.runId = runId;
    if (content !== null) {
      const prompt = bubble(this.doc, 'user', content);
      prompt.dataset.turn = String(++this.promptCount);
      section.append(prompt);
    }
    const tools = el(this.doc, 'ul', 'tools');
    const answer = bubble(this.doc, 'assistant', '');
    answer.classList.add('streaming');
    section.append(tools, answer);
    this.log.append(section);
    const turn = { runId, section, tools, answer, rows: new Map(), streamed: false, ended: false };
    this.turns.set(runId, turn);
    this.scroll();
    return turn;
  }

  apply(turn, type, payload) {
    const data = payload.data ?? {};
    switch (type) {
      case 'answer_delta':
        if (payload.restart) turn.answer.textContent = '';
        turn.answer.textContent += payload.text ?? '';
        turn.streamed = true;
        break;
      case 'tool_call_started': {
        const row = toolRow(this.doc, {
          tool: payload.tool ?? 'tool',
          summary: summarizeArgs(data.args_summary),
        });
        turn.rows.set(data.call_id, row);
        turn.tools.append(row);
        break;
      }
      case 'tool_call_completed':
      case 'tool_call_failed': {
        const row = turn.rows.get(data.call_id);
        if (row) setToolStatus(row, type === 'tool_call_completed' ? 'ok' : 'failed', data.duration_ms);
        break;
      }
      case 'subagent_started':
      case 'subagent_finished': {
        const parent = turn.rows.get(data.call_id);
        if (!parent || !Number.isInteger(data.index) || !Number.isInteger(data.total)) break;
        const row = subagentRow(this.doc, parent, data);
        if (type === 'subagent_finished') endSubagentRow(row, data);
        break;
      }
      case 'plan_created':
      case 'plan_updated':
      case 'plan_blocked':
        this.onPlanChanged(payload.session_id);
        break;
      case 'approval_requested':
        this.approvalCard(turn, payload);
        break;
      case 'approval_resolved':
        this.resolveCard(turn, payload);
        break;
      case 'clarify_requested':
        this.questionCard(turn, payload);
        break;
      case 'clarify_resolved':
        this.resolveQuestion(turn, payload);
        break;
      case 'user_steer': {
        // A message sent during the run, taken before its next request.
        const steer = bubble(this.doc, 'user', `↳ ${data.text ?? ''}`);
        steer.classList.add('steer');
        turn.answer.before(steer);
        break;
      }
      case 'model_fallback':
      case 'compacted':
        // What every surface shows: a notice in the turn, above its answer.
        turn.answer.before(bubble(this.doc, 'notice', noticeText(type, data)));
        break;
      case 'run_completed': {
        // Streamed as plain text; rendered as Markdown once complete.
        const text = typeof data.answer === 'string' && data.answer ? data.answer : turn.answer.textContent;
        if (text) setMarkdown(turn.answer, text);
        turn.section.append(el(this.doc, 'div', 'answer-stats', answerStats(data)));
        this.endRun(turn, 'completed');
        break;
      }
      case 'run_failed':
        if (data.error_class === 'context_canceled') {
          turn.section.append(bubble(this.doc, 'notice', 'Cancelled.'));
          this.endRun(turn, 'cancelled');
        } else {
          const cost = costText(data.cost_usd);
          const spent = cost ? ` (spent ${cost})` : '';
          turn.section.append(bubble(this.doc, 'notice', `Run failed: ${data.error ?? data.error_class ?? 'error'}${spent}`));
          this.endRun(turn, 'failed');
        }
        break;
      default:
        break;
    }
    this.scroll();
  }

  endRun(turn, status) {
    if (turn.ended) return;
    turn.ended = true;
    turn.answer.classList.remove('streaming');
    if (!turn.answer.textContent) turn.answer.remove();
    for (const card of turn.section.querySelectorAll('.approval:not(.resolved)')) {
      this.markResolved(card, 'deny');
    }
    for (const card of turn.section.querySelectorAll('.clarify:not(.resolved)')) {
      this.closeQuestion(card);
    }
    if (this.activeRun === turn.runId) this.activeRun = null;
    this.onRunEnded(turn.runId, status);
  }

  approvalCard(turn, payload) {
    const card = el(this.doc, 'div', 'approval');
    card.dataset.approvalId = payload.approval_id;
    card.setAttribute('role', 'group');
    card.setAttribute('aria-label', 'Approval needed');
    const items = Array.isArray(payload.items) && payload.items.length
      ? payload.items
      : [{ tool: payload.tool, resource: payload.resource, class: payload.class }];
    card.append(el(this.doc, 'p', 'approval-title', 'Approval needed'));
    const list = el(this.doc, 'ul', 'approval-items');
    for (const item of items) {
      const li = el(this.doc, 'li');
      li.append(
        el(this.doc, 'span', 'approval-class', item.class ?? ''),
        el(this.doc, 'span', 'tool-name', item.tool ?? ''),
        el(this.doc, 'code', 'approval-resource', item.resource ?? ''),
      );
      list.append(li);
    }
    const approve = el(this.doc, 'button', 'primary approve', 'Approve');
    const deny = el(this.doc, 'button', 'danger deny', 'Deny');
    approve.type = 'button';
    deny.type = 'button';
    const answer = async (action) => {
      approve.disabled = true;
      deny.disabled = true;
      try {
        await this.api.answer(turn.runId, payload.approval_id, action);
      } catch (err) {
        this.onStatus(`Approval not sent: ${err.message}`);
        if (err.status !== 409) {
          approve.disabled = false;
          deny.disabled = false;
        }
      }
    };
    approve.addEventListener('click', () => answer('approve'));
    deny.addEventListener('click', () => answer('deny'));
    const actions = el(this.doc, 'div', 'approval-actions');
    actions.append(approve, deny);
    card.append(list, actions);
    turn.section.insertBefore(card, turn.answer);
    approve.focus();
  }

  resolveCard(turn, payload) {
    const card = turn.section.querySelector(`.approval[data-approval-id="${CSS.escape(String(payload.approval_id))}"]`);
    if (card) this.markResolved(card, payload.action, payload.reason);
  }

  markResolved(card, action, reason) {
    card.classList.add('resolved');
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    const note = card.querySelector('.approval-result') ?? el(this.doc, 'p', 'approval-result');
    note.textContent = resolutionText(action, reason);
    card.append(note);
  }

  /** A question of the `clarify` tool: its options as buttons, and a free answer. */
  questionCard(turn, payload) {
    const card = el(this.doc, 'div', 'clarify');
    card.dataset.questionId = String(payload.question_id);
    card.setAttribute('role', 'group');
    card.setAttribute('aria-label', 'Question');
    const title = el(this.doc, 'p', 'clarify-title');
    const emoji = el(this.doc, 'span', 'clarify-emoji', '❓ ');
    emoji.setAttribute('aria-hidden', 'true');
    title.append(emoji, 'Question');
    card.append(title, el(this.doc, 'p', 'clarify-text', payload.question ?? ''));
    const reply = (text) => this.sendReply(turn, payload.question_id, card, text);
    const options = Array.isArray(payload.options)
      ? payload.options.filter((o) => typeof o === 'string' && o)
      : [];
    if (options.length) {
      const list = el(this.doc, 'div', 'clarify-options');
      for (const option of options) {
        const button = el(this.doc, 'button', 'clarify-option', option);
        button.type = 'button';
        button.addEventListener('click', () => reply(option));
        list.append(button);
      }
      card.append(list);
    }
    const form = el(this.doc, 'form', 'clarify-form');
    const input = el(this.doc, 'input', 'clarify-input');
    input.type = 'text';
    input.placeholder = 'Your answer';
    input.setAttribute('aria-label', 'Your answer');
    const send = el(this.doc, 'button', 'primary clarify-send', 'Send');
    send.type = 'submit';
    form.append(input, send);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (text) reply(text);
    });
    card.append(form);
    turn.section.insertBefore(card, turn.answer);
    input.focus();
  }

  /** Sends an answer; the card stays locked until `clarify_resolved` closes it. */
  async sendReply(turn, questionId, card, text) {
    setControls(card, false);
    card.querySelector('.clarify-error')?.remove();
    try {
      await this.api.reply(turn.runId, questionId, text);
    } catch (err) {
      this.onStatus(`Answer not sent: ${err.message}`);
      if (card.classList.contains('resolved')) return;
      card.append(el(this.doc, 'p', 'clarify-error', `Answer not sent: ${err.message}`));
      if (err.status !== 409) setControls(card, true);
    }
  }

  resolveQuestion(turn, payload) {
    const id = String(payload.question_id);
    const card = [...turn.section.querySelectorAll('.clarify')].find((c) => c.dataset.questionId === id);
    if (card) this.closeQuestion(card, payload.reason);
  }

  /** Closes a question card; no `reason` means the turn ended with it open. */
  closeQuestion(card, reason) {
    card.classList.add('resolved');
    setControls(card, false);
    card.querySelector('.clarify-error')?.remove();
    const note = card.querySelector('.clarify-result') ?? el(this.doc, 'p', 'clarify-result');
    note.textContent = questionText(reason);
    card.append(note);
  }

  scroll() {
    this.log.scrollTop = this.log.scrollHeight;
  }
}

/** What a closed approval card says: the answer, or why nobody's answer counted. */
export function resolutionText(action, reason) {
  if (action === 'approve') return 'Approved';
  if (reason === 'expired') return 'Expired: no answer in time';
  if (reason === 'cancelled') return 'Cancelled with the run';
  return 'Denied';
}

/** What a closed question card says. */
export function questionText(reason) {
  if (reason === 'answered') return 'Answered.';
  if (reason === 'expired') return 'No answer in time: the agent decided on its own.';
  if (reason === 'cancelled') return 'Cancelled: the turn was stopped.';
  return 'The turn ended.';
}

/** Enables or disables a card's buttons and inputs. */
function setControls(card, enabled) {
  for (const control of card.querySelectorAll('button, input')) control.disabled = !enabled;
}

/**
 * A saved user message's text: a string as it is; the parts of a message with images as
 * their text and a line per image (`🖼 image`), never the image's data.
 */
export function userText(content) {
  if (typeof content === 'string') {
    return content.startsWith(STEER_NOTE) ? `↳ ${content.slice(STEER_NOTE.length)}` : content;
  }
  if (!Array.isArray(content)) return '';
  const texts = content.filter((p) => p?.type === 'text' && typeof p.text === 'string').map((p) => p.text);
  const images = content.filter((p) => p?.type === 'image_url').length;
  if (images) texts.push(images === 1 ? '🖼 1 image' : `🖼 ${images} images`);
  return texts.join('\n');
}

/** A run's cost as odek prints it: 4 decimals under a dollar, 2 above; `''` when unknown. */
export function costText(usd) {
  if (!Number.isFinite(usd) || usd < 0) return '';
  return usd < 1 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/**
 * The figures of a finished answer: `4.2 s · 3,600 in (2,000 cached) · 30 out · $0.0123`; the
 * cost only when the run carries one (a model with a known price), never a guess.
 */
export function answerStats(data) {
  const n = (v) => (Number.isFinite(v) ? v : 0).toLocaleString('en-US');
  const parts = [];
  if (Number.isFinite(data.duration_ms)) parts.push(`${(data.duration_ms / 1000).toFixed(1)} s`);
  const cached = Number.isFinite(data.cached_tokens) && data.cached_tokens > 0 ? ` (${n(data.cached_tokens)} cached)` : '';
  parts.push(`${n(data.input_tokens)} in${cached}`);
  parts.push(`${n(data.output_tokens)} out`);
  const cost = costText(data.cost_usd);
  if (cost) parts.push(cost);
  return parts.join(' · ');
}

/** The notice of a fallback or a compaction (the terminal's line, from the event's data). */
export function noticeText(type, data) {
  if (type === 'model_fallback') {
    return `${data.reason ?? 'The model failed'} — retries spent on ${data.from ?? '?'}, falling back to ${data.to ?? '?'}`;
  }
  const how = data.mode === 'summary' ? 'summarised' : 'digested (the summary failed)';
  return `Conversation ${how}: ${data.removed_messages ?? 0} message(s) replaced, about ${data.before_tokens ?? '?'} → ${data.after_tokens ?? '?'} tokens`;
}
