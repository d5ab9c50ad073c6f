//! The page and its actions.

use std::sync::Arc;

use super::BrowserSettings;
use super::launch::Browser;
use crate::llm::ImagePart;
use crate::tools::ToolError;

/// The page's console messages, errors and odek's refusals, newest last (bounded).
#[derive(Debug, Default)]
pub struct ConsoleRing {}

/// The element an action names: a ref from the last snapshot, or a CSS selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    /// `ref`: the number shown as `[n]` in the last snapshot.
    Ref(String),
    /// `selector`: a CSS selector.
    Selector(String),
}

fn not_built() -> ToolError {
    ToolError::new("browser: not built yet")
}

/// The session's one page.
pub struct Page {
    /// Its browser.
    pub browser: Browser,
    /// The page target's session id.
    pub session: String,
    /// Its console.
    pub console: Arc<ConsoleRing>,
    /// The limits.
    pub settings: Arc<BrowserSettings>,
}

impl Page {
    /// Starts a browser and opens its page (about:blank), protected by the guard.
    pub async fn start(_settings: Arc<BrowserSettings>) -> Result<Page, ToolError> {
        Err(not_built())
    }

    /// Goes to `url` (already checked by the guard) and answers its URL, title and snapshot.
    pub async fn open(&self, _url: &str) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// The page as text, each actionable element marked `[ref]`.
    pub async fn snapshot(&self) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// Clicks the element.
    pub async fn click(&self, _element: &Element) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// Types `text` into the element (replacing its value), then Enter when `submit`.
    pub async fn type_text(
        &self,
        _element: &Element,
        _text: &str,
        _submit: bool,
    ) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// Presses a key (Enter, Tab, Escape, …).
    pub async fn press(&self, _key: &str) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// Chooses the option of a select by value or label.
    pub async fn select(&self, _element: &Element, _value: &str) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// Goes back one entry in the history.
    pub async fn back(&self) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// Waits until the text is on the page, or the element is (at most the time cap).
    pub async fn wait_for(
        &self,
        _text: Option<&str>,
        _element: Option<&Element>,
    ) -> Result<String, ToolError> {
        Err(not_built())
    }

    /// A screenshot of the viewport (JPEG as a data URL).
    pub async fn screenshot(&self) -> Result<ImagePart, ToolError> {
        Err(not_built())
    }

    /// The console messages and errors since the last read.
    pub fn console(&self) -> String {
        String::new()
    }
}
