// The session list: every saved session (the CLI's too), newest first, searchable.

import { el } from './render.js';

export class SessionList {
  constructor({ list, search, api, onSelect, onStatus }) {
    this.list = list;
    this.doc = list.ownerDocument;
    this.api = api;
    this.onSelect = onSelect;
    this.onStatus = onStatus ?? (() => {});
    this.current = null;
    this.query = '';
    this.seq = 0;
    let timer = null;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        this.query = search.value.trim();
        this.refresh();
      }, 250);
    });
  }

  async refresh() {
    const seq = ++this.seq;
    let data;
    try {
      data = await this.api.sessions(this.query);
    } catch (err) {
      this.onStatus(`Sessions unavailable: ${err.message}`);
      return;
    }
    if (seq !== this.seq) return;
    const items = (data.sessions ?? []).map((s) => this.item(s));
    if (!items.length) {
      items.push(el(this.doc, 'li', 'muted', this.query ? 'No session matches.' : 'No sessions yet.'));
    }
    this.list.replaceChildren(...items);
  }

  item(session) {
    const li = el(this.doc, 'li');
    const button = el(this.doc, 'button', 'session-item');
    button.type = 'button';
    button.dataset.sessionId = session.id;
    if (session.id === this.current) button.setAttribute('aria-current', 'true');
    const title = el(this.doc, 'span', 'session-name', session.title || session.id);
    const when = String(session.updated_at ?? '').replace('T', ' ').slice(0, 16);
    const meta = el(this.doc, 'span', 'session-meta', `${when} · ${session.origin ?? ''}${session.running ? ' · running' : ''}`);
    button.append(title, meta);
    button.addEventListener('click', () => this.onSelect(session.id));
    li.append(button);
    return li;
  }

  /** Marks `sessionId` as the open one. */
  select(sessionId) {
    this.current = sessionId;
    for (const b of this.list.querySelectorAll('.session-item')) {
      if (b.dataset.sessionId === sessionId) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
  }
}
