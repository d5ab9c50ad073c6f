// Light, dark, or the system's: kept in this browser (localStorage), applied as
// `data-theme` on <html> (no attribute = follow prefers-color-scheme).

const KEY = 'odek.theme';
export const THEMES = ['system', 'light', 'dark'];

/** The saved choice, `system` when none or unreadable. */
export function savedTheme(storage) {
  try {
    const value = storage?.getItem(KEY);
    return THEMES.includes(value) ? value : 'system';
  } catch {
    return 'system';
  }
}

/** Applies `theme` to the document and saves it. */
export function applyTheme(doc, storage, theme) {
  const value = THEMES.includes(theme) ? theme : 'system';
  if (value === 'system') delete doc.documentElement.dataset.theme;
  else doc.documentElement.dataset.theme = value;
  try {
    storage?.setItem(KEY, value);
  } catch {
    // Private windows may refuse storage; the choice then lasts for this page.
  }
  return value;
}

/** Wires a <select> to the theme. */
export function themePicker(select, storage) {
  const doc = select.ownerDocument;
  select.value = applyTheme(doc, storage, savedTheme(storage));
  select.addEventListener('change', () => applyTheme(doc, storage, select.value));
}
