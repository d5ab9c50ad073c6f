// Custom slash commands in the prompt box: while the prompt is `/` and the start of a name,
// the commands whose names start so are listed under it (name, argument hint, description,
// from GET /api/commands); a click or Tab puts `/name ` in the box. The server runs the
// command when the prompt is sent (POST /api/prompt), so this is only a hint.

import { el } from './render.js';

/** The longest list shown. */
export const MAX_HINTS = 8;

/**
 * The commands `text` may be starting: the prompt is `/` and part of one word, and each
 * command's name starts with that part. Sorted by name, at most MAX_HINTS.
 */
export function matching(commands, text) {
  if (typeof text !== 'string' || !text.startsWith('/') || /\s/.test(text)) return [];
  const typed = text.slice(1).toLowerCase();
  return commands
    .filter((c) => typeof c?.name === 'string' && c.name.toLowerCase().startsWith(typed))
    .sort((a, b) => a.name.localeCompare(b.name))
    .slice(0, MAX_HINTS);
}

/** The hint list under the prompt box. */
export class CommandHints {
  /**
   * `prompt`: the textarea; `list`: the `<ul>` to fill; `load`: a function returning a
   * promise of `{commands: [{name, description, argument_hint}]}`.
   */
  constructor({ prompt, list, load }) {
    this.prompt = prompt;
    this.list = list;
    this.load = load;
    this.doc = prompt.ownerDocument;
    this.commands = [];
    this.shown = [];
    prompt.addEventListener('input', () => this.update());
    prompt.addEventListener('keydown', (e) => {
      if (e.key === 'Tab' && !e.shiftKey && this.shown.length) {
        e.preventDefault();
        this.pick(this.shown[0]);
      } else if (e.key === 'Escape' && this.shown.length) {
        this.show([]);
      }
    });
  }

  /** Reads the commands again (they are files: they may have changed). */
  async refresh() {
    try {
      const answer = await this.load();
      this.commands = Array.isArray(answer?.commands) ? answer.commands : [];
    } catch {
      this.commands = [];
    }
    this.update();
  }

  /** Lists the commands the prompt may be starting; a lone `/` reads them again first. */
  update() {
    const text = this.prompt.value;
    if (text === '/' && !this.refreshing) {
      this.refreshing = true;
      this.refresh().finally(() => {
        this.refreshing = false;
      });
    }
    this.show(matching(this.commands, text));
  }

  /** Puts `/name ` in the prompt box. */
  pick(command) {
    this.prompt.value = `/${command.name} `;
    this.show([]);
    this.prompt.focus();
  }

  show(commands) {
    this.shown = commands;
    this.list.replaceChildren();
    this.list.hidden = commands.length === 0;
    for (const c of commands) {
      const item = el(this.doc, 'li', 'command-hint');
      const button = el(this.doc, 'button', 'command-pick');
      button.type = 'button';
      button.dataset.command = c.name;
      button.append(el(this.doc, 'span', 'command-name', `/${c.name}`));
      if (c.argument_hint) button.append(el(this.doc, 'span', 'command-args', c.argument_hint));
      if (c.description) button.append(el(this.doc, 'span', 'command-description', c.description));
      button.addEventListener('click', () => this.pick(c));
      item.append(button);
      this.list.append(item);
    }
  }
}
