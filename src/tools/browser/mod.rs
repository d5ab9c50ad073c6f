//! The `browser` tool: a headless Chromium or Chrome driven over the DevTools Protocol on a
//! pipe (`--remote-debugging-pipe`: no port, no WebSocket), one page per session.
//!
//! - [`cdp`]: the pipe's framing (one JSON object + NUL per message), calls and events.
//! - [`launch`]: finding the browser, starting it in its own process group with a fresh
//!   profile, and making sure it ends with odek.
//! - [`guard`]: every request the page makes goes through `web_fetch`'s address guard.
//! - [`page`]: the actions (open, snapshot, click, type, …).

#[allow(dead_code)] // API skeleton: removed once every part is wired (issue 65)
mod cdp;
#[allow(dead_code)]
mod guard;
#[allow(dead_code)]
mod launch;
#[allow(dead_code)]
mod page;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::web::WebSettings;
use super::{Tool, ToolContext, ToolError};

pub use launch::find_executable;

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

/// A session's browser: started on the first action, ended when the slot is dropped or on
/// `close`.
#[derive(Default)]
#[allow(dead_code)]
pub struct BrowserSlot(pub(crate) tokio::sync::Mutex<Option<page::Page>>);

impl std::fmt::Debug for BrowserSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrowserSlot")
    }
}

/// The `browser` tool.
pub struct BrowserTool {
    slot: Arc<BrowserSlot>,
    settings: Arc<BrowserSettings>,
}

impl BrowserTool {
    /// The tool over a session's slot.
    pub fn new(slot: Arc<BrowserSlot>, settings: Arc<BrowserSettings>) -> Self {
        BrowserTool { slot, settings }
    }
}

#[async_trait]
impl Tool for BrowserTool {
    fn name(&self) -> &str {
        "browser"
    }

    fn description(&self) -> &str {
        "Drive a headless browser, one page per session. open url; snapshot: the page as text, each element you can act on marked [ref]; click, type (text, submit: Enter after), select (value) a ref from the last snapshot or a CSS selector; press key; back; wait_for text or ref; screenshot; console: its messages and errors; close."
    }

    fn parameters(&self) -> Value {
        serde_json::json!({"type":"object","properties":{"action":{"type":"string","enum":["open","snapshot","click","type","press","select","back","wait_for","screenshot","console","close"]},"url":{"type":"string"},"ref":{"type":"string"},"selector":{"type":"string"},"text":{"type":"string"},"submit":{"type":"boolean"},"key":{"type":"string"},"value":{"type":"string"}},"required":["action"]})
    }

    async fn call(&self, _args: &str, _ctx: &ToolContext) -> Result<String, ToolError> {
        let _ = (&self.slot, &self.settings);
        Err(ToolError::new("browser: not built yet"))
    }
}
