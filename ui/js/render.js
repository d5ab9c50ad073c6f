// Rendering helpers. Model and tool text reaches the DOM only through textContent.

import { toolEmoji } from './emoji.js';

/** A new element with classes and (optional) text, set through textContent. */
export function el(doc, tag, className, text) {
  const node = doc.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A short, content-free summary of a tool call's arguments (`args_summary` of the event). */
export function summarizeArgs(summary) {
  if (!summary || typeof summary !== 'object') return '';
  const parts = [];
  for (const key of ['verb', 'argv0', 'path']) {
    if (typeof summary[key] === 'string' && summary[key]) parts.push(summary[key]);
  }
  return parts.join(' ');
}

/**
 * One row per tool call: emoji, tool name, summary and a status that changes from
 * running to ok or failed. Returns the row; `setToolStatus` updates it.
 */
export function toolRow(doc, { tool, summary = '', status = 'running' }) {
  const row = el(doc, 'li', 'tool-row');
  row.dataset.tool = tool;
  const emoji = el(doc, 'span', 'tool-emoji', toolEmoji(tool));
  emoji.setAttribute('aria-hidden', 'true');
  row.append(emoji, el(doc, 'span', 'tool-name', tool));
  if (summary) row.append(el(doc, 'span', 'tool-summary', summary));
  row.append(el(doc, 'span', 'tool-status'));
  setToolStatus(row, status);
  return row;
}

const STATUS_TEXT = { running: 'running…', ok: 'done', failed: 'failed' };

/** Marks a tool row `running`, `ok` or `failed`, with an optional duration in ms. */
export function setToolStatus(row, status, durationMs) {
  row.dataset.status = status;
  let text = STATUS_TEXT[status] ?? status;
  if (typeof durationMs === 'number') text += ` · ${(durationMs / 1000).toFixed(1)}s`;
  row.querySelector('.tool-status').textContent = text;
}

/** A chat bubble: `role` is `user`, `assistant` or `notice`. */
export function bubble(doc, role, text) {
  const node = el(doc, 'div', `msg msg-${role}`, text);
  node.dataset.role = role;
  return node;
}

/**
 * The row of one sub-agent of a `delegate_tasks` call, nested under the call's row:
 * `sub-agent 2/3` and a status (`subagent_started` carries no goal text, so none is shown).
 * Returns the existing row when the call already has one for that index.
 */
export function subagentRow(doc, parent, { index, total }) {
  let list = parent.querySelector(':scope > .subagents');
  if (!list) {
    list = el(doc, 'ul', 'subagents');
    list.setAttribute('aria-label', 'sub-agents');
    parent.append(list);
  }
  const key = String(index);
  for (const row of list.children) if (row.dataset.index === key) return row;
  const row = el(doc, 'li', 'subagent-row');
  row.dataset.index = key;
  row.dataset.status = 'running';
  row.append(el(doc, 'span', 'subagent-name', `sub-agent ${index}/${total}`), el(doc, 'span', 'tool-status', 'running…'));
  // In task order, whatever order they start in.
  const next = [...list.children].find((r) => Number(r.dataset.index) > index);
  list.insertBefore(row, next ?? null);
  return row;
}

/** The figures of an ended sub-agent: `ok · 3 model calls · 2 tools · 1,200 tokens · 3.4s`. */
export function subagentStatus(data) {
  const n = (v) => (Number.isFinite(v) ? v : 0);
  const plural = (count, one) => `${count.toLocaleString('en-US')} ${one}${count === 1 ? '' : 's'}`;
  const parts = [typeof data.status === 'string' && data.status ? data.status : 'ended'];
  parts.push(plural(n(data.iterations), 'model call'));
  parts.push(plural(n(data.tool_calls), 'tool'));
  parts.push(`${(n(data.input_tokens) + n(data.output_tokens)).toLocaleString('en-US')} tokens`);
  if (Number.isFinite(data.duration_ms)) parts.push(`${(data.duration_ms / 1000).toFixed(1)}s`);
  return parts.join(' · ');
}

/** Marks a sub-agent row ended with its figures; anything but `ok` shows as failed. */
export function endSubagentRow(row, data) {
  row.dataset.status = data.status === 'ok' ? 'ok' : 'failed';
  row.querySelector('.tool-status').textContent = subagentStatus(data);
}
