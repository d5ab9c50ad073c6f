//! The browser's safety: every request any of its targets makes is paused and checked by
//! `web_fetch`'s address guard; downloads, dialogs, popups and file pickers are off.

use std::sync::Arc;

use reqwest::Url;

use super::BrowserSettings;
use super::cdp::Cdp;
use super::page;
use crate::tools::ToolError;

/// Whether the browser may load `url`: Ok, or the refusal naming the rule.
pub async fn verdict(_url: &Url, _settings: &BrowserSettings) -> Result<(), ToolError> {
    Err(ToolError::new("browser: not built yet"))
}

/// Makes every target of `cdp` pause its requests for [`verdict`] (refusals are written to
/// `console`).
pub fn protect(_cdp: &Arc<Cdp>, _settings: Arc<BrowserSettings>, _console: Arc<page::ConsoleRing>) {
}
