// Files attached to a prompt: text files read in the browser (UTF-8, at most 256 KiB each,
// ten at most), and images (PNG, JPEG, GIF, WebP, at most 4 MiB together) when the model
// takes them; shown as removable chips, sent with the prompt. The server wraps each text as
// untrusted `attachment:<name>` after the prompt's text and sends images as image parts.

import { el } from './render.js';

export const MAX_ATTACHMENT_BYTES = 256 * 1024;
export const MAX_ATTACHMENTS = 10;
/** All the attachments of one prompt together (the server's limit too). */
export const MAX_ATTACHMENTS_TOTAL = 1024 * 1024;
/** The images of one prompt together, before base64 (the server's limit too). */
export const MAX_IMAGES_TOTAL = 4 * 1024 * 1024;
/** The images the server takes (it checks their bytes too). */
export const IMAGE_TYPES = Object.freeze(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** The bytes as base64. */
export function toBase64(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

/**
 * The file as `{name, text}` (or `{name, image, size}` for an image when `images`, the model
 * taking them), or an Error saying why it cannot be attached.
 */
export async function readAttachment(file, { images = false } = {}) {
  if (file.type && file.type.startsWith('image/')) {
    if (!images) {
      throw new Error(`${file.name}: the model does not take images (setting \`images\`); attach text files`);
    }
    if (!IMAGE_TYPES.includes(file.type)) throw new Error(`${file.name}: only PNG, JPEG, GIF and WebP images`);
    if (file.size > MAX_IMAGES_TOTAL) {
      throw new Error(`${file.name} is ${file.size} bytes, over the ${MAX_IMAGES_TOTAL}-byte limit`);
    }
    const bytes = new Uint8Array(await file.arrayBuffer());
    return { name: file.name, image: toBase64(bytes), size: bytes.length };
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
    /** Whether images attach (the model takes them: `GET /api/models`' `images`). */
    this.images = false;
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
        const read = await readAttachment(file, { images: this.images });
        const others = this.files.filter((f) => f.name !== read.name);
        if ('image' in read) {
          const total = others.reduce((n, f) => n + (f.size ?? 0), 0) + read.size;
          if (total > MAX_IMAGES_TOTAL) {
            throw new Error(`${file.name}: the images would hold ${total} bytes together, over the ${MAX_IMAGES_TOTAL}-byte limit`);
          }
        } else {
          const texts = others.filter((f) => 'text' in f);
          const total = texts.reduce((n, f) => n + new TextEncoder().encode(f.text).length, 0) + file.size;
          if (total > MAX_ATTACHMENTS_TOTAL) {
            throw new Error(`${file.name}: the attachments would hold ${total} bytes together, over the ${MAX_ATTACHMENTS_TOTAL}-byte limit`);
          }
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
      li.append(el(this.doc, 'span', '', `${'image' in f ? '🖼' : '📄'} ${f.name}`));
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

  /** The attachments for the prompt being sent, as the server takes them; the list empties. */
  take() {
    const taken = this.files;
    this.files = [];
    this.render();
    return taken;
  }

  /** What goes in `POST /api/prompt`'s `attachments`. */
  static wire(files) {
    return files.map((f) => ('image' in f ? { name: f.name, image: f.image } : { name: f.name, text: f.text }));
  }

  /** Puts attachments back (the prompt could not be sent). */
  restore(files) {
    this.files = files.concat(this.files);
    this.render();
  }
}
