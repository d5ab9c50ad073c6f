// Text files attached to a prompt: read in the browser (UTF-8, at most 256 KiB each, ten at
// most), shown as removable chips, sent with the prompt; the server wraps each as untrusted
// `attachment:<name>` after the prompt's text.

import { el } from './render.js';

export const MAX_ATTACHMENT_BYTES = 256 * 1024;
export const MAX_ATTACHMENTS = 10;
/** All the attachments of one prompt together (the server's limit too). */
export const MAX_ATTACHMENTS_TOTAL = 1024 * 1024;

/** The file as `{name, text}`, or an Error saying why it cannot be attached. */
export async function readAttachment(file) {
  if (file.type && file.type.startsWith('image/')) {
    throw new Error(`${file.name}: images are not sent to the model yet; attach text files`);
  }
  if (file.size > MAX_ATTACHMENT_BYTES) {
    throw new Error(`${file.name} is ${file.size} bytes, over the ${MAX_ATTACHMENT_BYTES}-byte limit`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new Error(`${file.name} is not UTF-8 text`);
  }
  if (text.includes('\0')) throw new Error(`${file.name} is not text`);
  return { name: file.name, text };
}

/** The prompt's attachments: the file picker, the chips, what goes with the next prompt. */
export class Attachments {
  constructor({ input, button, list, onStatus }) {
    this.input = input;
    this.list = list;
    this.doc = list.ownerDocument;
    this.onStatus = onStatus ?? (() => {});
    this.files = [];
    button.addEventListener('click', () => input.click());
    input.addEventListener('change', () => this.add([...input.files]));
  }

  async add(files) {
    for (const file of files) {
      if (this.files.length >= MAX_ATTACHMENTS) {
        this.onStatus(`At most ${MAX_ATTACHMENTS} files attach to one prompt.`);
        break;
      }
      try {
        const read = await readAttachment(file);
        const others = this.files.filter((f) => f.name !== read.name);
        const total = others.reduce((n, f) => n + new TextEncoder().encode(f.text).length, 0) + file.size;
        if (total > MAX_ATTACHMENTS_TOTAL) {
          throw new Error(`${file.name}: the attachments would hold ${total} bytes together, over the ${MAX_ATTACHMENTS_TOTAL}-byte limit`);
        }
        this.files = others.concat([read]);
      } catch (err) {
        this.onStatus(err.message);
      }
    }
    this.input.value = '';
    this.render();
  }

  render() {
    const chips = this.files.map((f) => {
      const li = el(this.doc, 'li', 'chip');
      li.append(el(this.doc, 'span', '', `📄 ${f.name}`));
      const remove = el(this.doc, 'button', 'icon-button', '✕');
      remove.type = 'button';
      remove.setAttribute('aria-label', `Remove ${f.name}`);
      remove.addEventListener('click', () => {
        this.files = this.files.filter((x) => x !== f);
        this.render();
      });
      li.append(remove);
      return li;
    });
    this.list.replaceChildren(...chips);
  }

  /** The attachments for the prompt being sent; the list empties. */
  take() {
    const taken = this.files;
    this.files = [];
    this.render();
    return taken;
  }

  /** Puts attachments back (the prompt could not be sent). */
  restore(files) {
    this.files = files.concat(this.files);
    this.render();
  }
}
