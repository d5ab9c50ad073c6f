// Model answers rendered as Markdown: marked parses (GitHub flavour), DOMPurify sanitizes,
// both bundled with the page (ui/vendor, `make ui-vendor`), nothing from elsewhere. Raw HTML
// in the text is shown as text, never parsed; links keep only http(s) and mailto addresses;
// images become links (the CSP would not load them anyway). Code blocks get a copy button.

import { Marked } from '../vendor/marked.js';
import createDOMPurify from '../vendor/purify.js';

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text) => String(text ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]);

/** Addresses a link may keep. */
export const SAFE_URL = /^(?:https?:|mailto:)/i;

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    // HTML the model writes is shown as the text it is.
    html({ text }) {
      return escapeHtml(text);
    },
    image({ href, text }) {
      const label = escapeHtml(text || href);
      return SAFE_URL.test(href ?? '') ? `<a href="${escapeHtml(href)}">🖼 ${label}</a>` : label;
    },
  },
});

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  ALLOWED_TAGS: [
    'a', 'blockquote', 'br', 'code', 'del', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr',
    'input', 'li', 'ol', 'p', 'pre', 'strong', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul',
  ],
  ALLOWED_ATTR: ['href', 'title', 'align', 'start', 'type', 'checked', 'disabled'],
  // DOMPurify's own URI rules apply first; the hook below then keeps http(s) and mailto only.
};

const purifiers = new WeakMap();

/** One DOMPurify per window (the page's, or a test's jsdom). */
function purifier(win) {
  let p = purifiers.get(win);
  if (!p) {
    p = createDOMPurify(win);
    p.addHook('afterSanitizeAttributes', (node) => {
      if (node.nodeName === 'A') {
        if (!SAFE_URL.test(node.getAttribute('href') ?? '')) node.removeAttribute('href');
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
      if (node.nodeName === 'INPUT' && node.getAttribute('type') !== 'checkbox') node.remove();
    });
    purifiers.set(win, p);
  }
  return p;
}

/** The Markdown `text` as a sanitized fragment of `doc`, code blocks with a copy button. */
export function renderMarkdown(doc, text) {
  const html = marked.parse(String(text ?? ''));
  const fragment = purifier(doc.defaultView).sanitize(html, PURIFY);
  const out = doc.importNode(fragment, true);
  for (const pre of out.querySelectorAll('pre')) {
    const box = doc.createElement('div');
    box.className = 'code-block';
    const copy = doc.createElement('button');
    copy.type = 'button';
    copy.className = 'copy';
    copy.textContent = 'Copy';
    copy.setAttribute('aria-label', 'Copy the code');
    copy.addEventListener('click', () => copyText(doc, pre.textContent, copy));
    pre.replaceWith(box);
    box.append(copy, pre);
  }
  for (const input of out.querySelectorAll('input')) input.disabled = true;
  // The newlines marked leaves between blocks are not part of the text.
  for (const node of [...out.childNodes]) {
    if (node.nodeType === 3 && !node.textContent.trim()) node.remove();
  }
  return out;
}

/** Replaces `node`'s content with the rendering of `text`. */
export function setMarkdown(node, text) {
  node.replaceChildren(renderMarkdown(node.ownerDocument, text));
  node.classList.add('markdown');
}

async function copyText(doc, text, button) {
  try {
    await doc.defaultView.navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Copy failed';
  }
  doc.defaultView.setTimeout(() => {
    button.textContent = 'Copy';
  }, 1500);
}
