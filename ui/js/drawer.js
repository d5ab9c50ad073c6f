// The management drawer: Alt+M opens and closes it, Escape closes it, its tabs follow the
// WAI-ARIA tabs pattern (arrow keys, Home, End). Focus moves into it and back out.

export class Drawer {
  constructor({ drawer, opener, closer, tabs, onChange }) {
    this.drawer = drawer;
    this.opener = opener;
    this.tabs = tabs; // [{tab, panel, name}]
    this.onChange = onChange ?? (() => {});
    this.returnFocus = null;
    this.active = tabs[0].name;
    const doc = drawer.ownerDocument;
    opener.addEventListener('click', () => this.toggle());
    closer.addEventListener('click', () => this.close());
    doc.addEventListener('keydown', (e) => {
      if (e.altKey && !e.ctrlKey && !e.metaKey && (e.code === 'KeyM' || e.key === 'm' || e.key === 'M')) {
        e.preventDefault();
        this.toggle();
      } else if (e.key === 'Escape' && this.isOpen()) {
        e.preventDefault();
        this.close();
      }
    });
    tabs.forEach(({ tab, name }, i) => {
      tab.addEventListener('click', () => this.activate(name, true));
      tab.addEventListener('keydown', (e) => {
        const last = tabs.length - 1;
        const next = { ArrowRight: i === last ? 0 : i + 1, ArrowLeft: i === 0 ? last : i - 1, Home: 0, End: last }[e.key];
        if (next === undefined) return;
        e.preventDefault();
        this.activate(tabs[next].name, true);
      });
    });
  }

  isOpen() {
    return !this.drawer.hidden;
  }

  toggle() {
    if (this.isOpen()) this.close();
    else this.open();
  }

  open() {
    if (this.isOpen()) return;
    this.returnFocus = this.drawer.ownerDocument.activeElement;
    this.drawer.hidden = false;
    this.drawer.ownerDocument.body.classList.add('drawer-open');
    this.opener.setAttribute('aria-expanded', 'true');
    this.currentTab().tab.focus();
    this.onChange();
  }

  close() {
    if (!this.isOpen()) return;
    this.drawer.hidden = true;
    this.drawer.ownerDocument.body.classList.remove('drawer-open');
    this.opener.setAttribute('aria-expanded', 'false');
    const back = this.returnFocus;
    this.returnFocus = null;
    if (back && typeof back.focus === 'function' && back.isConnected) back.focus();
    else this.opener.focus();
    this.onChange();
  }

  currentTab() {
    return this.tabs.find((t) => t.name === this.active);
  }

  activate(name, focus) {
    this.active = name;
    for (const t of this.tabs) {
      const on = t.name === name;
      t.tab.setAttribute('aria-selected', String(on));
      t.tab.tabIndex = on ? 0 : -1;
      t.panel.hidden = !on;
      if (on && focus) t.tab.focus();
    }
    this.onChange();
  }
}
