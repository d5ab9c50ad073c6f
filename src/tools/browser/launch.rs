//! Finding and starting the browser.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::BrowserSettings;
use super::cdp::Cdp;
use crate::tools::ToolError;

/// A running browser: its connection, and what ends it (its process group, the profile
/// folder) when dropped.
pub struct Browser {
    /// The connection.
    pub cdp: Arc<Cdp>,
}

/// Starts the browser headless with a fresh profile.
pub async fn launch(_settings: &BrowserSettings) -> Result<Browser, ToolError> {
    Err(ToolError::new("browser: not built yet"))
}

/// The browser to use: `configured` when given, else the first of the usual names on PATH
/// (and the macOS app paths). None = no browser, the tool is not offered.
pub fn find_executable(configured: Option<&Path>) -> Option<PathBuf> {
    configured.map(Path::to_path_buf)
}
