//! The DevTools Protocol on a pipe: each message one JSON object followed by a NUL byte;
//! odek writes commands on the browser's fd 3 and reads replies and events from its fd 4.

use std::sync::Arc;

use serde_json::Value;

use crate::tools::ToolError;

/// An event the browser sent: its method, parameters and the session it belongs to (none =
/// the browser itself).
#[derive(Debug, Clone)]
pub struct CdpEvent {
    /// E.g. `Fetch.requestPaused`.
    pub method: String,
    /// Its parameters.
    pub params: Value,
    /// The target session it came from.
    pub session: Option<String>,
}

/// What handles events.
pub type EventHandler = Arc<dyn Fn(&Arc<Cdp>, CdpEvent) + Send + Sync>;

/// One connection to a browser.
pub struct Cdp {}

impl Cdp {
    /// Sends `method` with `params` to `session` (none = the browser) and waits for its reply.
    pub async fn call(
        &self,
        _session: Option<&str>,
        _method: &str,
        _params: Value,
    ) -> Result<Value, ToolError> {
        Err(ToolError::new("browser: not built yet"))
    }

    /// Adds a handler every event is given to.
    pub fn on_event(&self, _handler: EventHandler) {}
}
