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
