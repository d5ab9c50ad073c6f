//! The `browser` tool: a headless Chromium or Chrome driven over the DevTools Protocol on a
//! pipe (`--remote-debugging-pipe`: no port, no WebSocket), one page per session.
//!
//! - [`cdp`]: the pipe's framing (one JSON object + NUL per message), calls and events.
//! - [`launch`]: finding the browser, starting it in its own process group with a fresh
//!   profile, and making sure it ends with odek.
//! - [`guard`]: every request the page makes goes through `web_fetch`'s address guard.
//! - [`page`]: the actions (open, snapshot, click, type, …); `snapshot.js` reads the page.
//! - [`console`]: the page's console messages and errors, bounded between two reads.
//! - [`tool`]: the tool: its arguments, the session's page, each action dispatched to it.

mod cdp;
mod console;
mod guard;
mod launch;
mod page;
mod tool;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::web::WebSettings;

pub use launch::find_executable;
pub use tool::{BrowserSlot, BrowserTool, program};

/// Which private addresses the page may reach without being listed (`browser.allow_local`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllowLocal {
    /// None: every loopback or private address needs `web.allow_private_hosts`.
    None,
    /// Loopback (127.0.0.0/8, ::1): the dev server on this machine.
    #[default]
    Loopback,
    /// Loopback and the private ranges (10/8, 172.16/12, 192.168/16, fc00::/7).
    Private,
}

impl AllowLocal {
    /// The setting's word (`none`, `loopback`, `private`; anything else is the default).
    pub fn from_setting(word: &str) -> AllowLocal {
        match word {
            "none" => AllowLocal::None,
            "private" => AllowLocal::Private,
            _ => AllowLocal::Loopback,
        }
    }
}

/// What the browser may reach and how long an action may take (the `browser` settings).
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    /// The Chromium or Chrome program.
    pub executable: PathBuf,
    /// Private addresses allowed without a listing.
    pub allow_local: AllowLocal,
    /// `web_fetch`'s settings: allow lists and the per-action time cap.
    pub web: Arc<WebSettings>,
    /// The most one action waits (a page load, `wait_for`).
    pub timeout: Duration,
    /// Whether the model takes images (else `screenshot` is refused).
    pub images: bool,
}
