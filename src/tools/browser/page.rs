//! The page and its actions.

use std::sync::Arc;

use super::BrowserSettings;
use super::launch::Browser;
use crate::llm::ImagePart;
use crate::tools::ToolError;

/// The page's console messages, errors and odek's refusals, newest last (bounded).
#[derive(Debug, Default)]
pub struct ConsoleRing {}

/// The session's one page.
pub struct Page {
    /// Its browser.
    pub browser: Browser,
    /// The page target's session id.
    pub session: String,
    /// Its console.
    pub console: Arc<ConsoleRing>,
}

impl Page {
    /// Starts a browser and opens its page.
    pub async fn start(_settings: Arc<BrowserSettings>) -> Result<Page, ToolError> {
        Err(ToolError::new("browser: not built yet"))
    }

    /// A screenshot of the viewport.
    pub async fn screenshot(&self) -> Result<ImagePart, ToolError> {
        Err(ToolError::new("browser: not built yet"))
    }
}
