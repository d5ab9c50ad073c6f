//! The DevTools Protocol on a pipe: each message one JSON object followed by a NUL byte;
//! odek writes commands on the browser's fd 3 and reads replies and events from its fd 4.
//!
//! A thread of its own reads the browser's messages: a reply (it has an `id`) completes the
//! call waiting on it; an event (it has a `method`) is given to every handler, in the order
//! the browser sent them, on that thread (see [`Cdp::on_event`]).

use std::collections::HashMap;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use crate::tools::ToolError;

/// What every call answers once the browser's end of the pipe is closed.
pub const ENDED: &str = "browser: the browser ended";

/// The most one message may hold before the browser counts as broken (a screenshot is a
/// few hundred KB).
const MAX_MESSAGE: usize = 64 << 20;

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
pub struct Cdp {
    writer: Mutex<PipeWriter>,
    next_id: AtomicU64,
    calls: Mutex<Calls>,
    handlers: Mutex<Vec<EventHandler>>,
    timeout: Duration,
}

/// The calls waiting for their reply, by id; `ended` once the browser's end closed.
#[derive(Default)]
struct Calls {
    waiting: HashMap<u64, oneshot::Sender<Value>>,
    ended: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Cdp {
    /// A connection that writes commands to `writer` and reads the browser's messages from
    /// `reader` on a thread of its own, which runs inside the current tokio runtime (when
    /// there is one), so handlers may `tokio::spawn`. A call waits at most `timeout`.
    pub fn new(
        writer: PipeWriter,
        reader: PipeReader,
        timeout: Duration,
    ) -> std::io::Result<Arc<Cdp>> {
        let cdp = Arc::new(Cdp {
            writer: Mutex::new(writer),
            next_id: AtomicU64::new(1),
            calls: Mutex::new(Calls::default()),
            handlers: Mutex::new(Vec::new()),
            timeout,
        });
        let weak = Arc::downgrade(&cdp);
        let runtime = tokio::runtime::Handle::try_current().ok();
        std::thread::Builder::new()
            .name("odek-browser".into())
            .spawn(move || {
                let _entered = runtime.as_ref().map(tokio::runtime::Handle::enter);
                read_messages(reader, &weak);
                if let Some(cdp) = weak.upgrade() {
                    cdp.end();
                }
            })?;
        Ok(cdp)
    }

    /// Sends `method` with `params` to `session` (none = the browser) and waits for its reply
    /// (at most the connection's time cap): its `result`, or the browser's error as a
    /// [`ToolError`].
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, ToolError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = Map::new();
        message.insert("id".into(), id.into());
        message.insert("method".into(), method.into());
        message.insert("params".into(), params);
        if let Some(session) = session {
            message.insert("sessionId".into(), session.into());
        }
        let mut bytes = Value::Object(message).to_string().into_bytes();
        bytes.push(0);
        let (sender, reply) = oneshot::channel();
        {
            let mut calls = lock(&self.calls);
            if calls.ended {
                return Err(ToolError::new(ENDED));
            }
            calls.waiting.insert(id, sender);
        }
        // Forgets the call however this future ends (answered, timed out, dropped).
        let _forget = Forget { cdp: self, id };
        if lock(&self.writer).write_all(&bytes).is_err() {
            return Err(ToolError::new(ENDED));
        }
        match tokio::time::timeout(self.timeout, reply).await {
            Ok(Ok(reply)) => answer(method, reply),
            Ok(Err(_)) => Err(ToolError::new(ENDED)),
            Err(_) => Err(ToolError::new(format!(
                "browser: {method} had no answer in {} s (the page or the browser hangs; \
                 `close` ends the browser)",
                self.timeout.as_secs_f32()
            ))),
        }
    }

    /// Adds a handler every later event is given to. Handlers run one after the other on
    /// the connection's reader thread, so they see events in order and must return at
    /// once: one that waits (a call to the browser, a DNS lookup) spawns a task for it
    /// (`tokio::spawn` works there), or no reply or event is read meanwhile.
    pub fn on_event(&self, handler: EventHandler) {
        lock(&self.handlers).push(handler);
    }

    /// The browser's end closed: every waiting call and every later one fails.
    fn end(&self) {
        let mut calls = lock(&self.calls);
        calls.ended = true;
        calls.waiting.clear();
    }

    /// One message from the browser: a reply to its call, or an event to the handlers.
    fn deliver(self: &Arc<Self>, mut message: Value) {
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let waiting = lock(&self.calls).waiting.remove(&id);
            if let Some(sender) = waiting {
                let _ = sender.send(message);
            }
            return;
        }
        let Some(Value::String(method)) = message.get_mut("method").map(Value::take) else {
            return;
        };
        let event = CdpEvent {
            method,
            params: message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or_default(),
            session: message
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        let handlers = lock(&self.handlers).clone();
        for handler in handlers {
            handler(self, event.clone());
        }
    }
}

/// Removes a call from the waiting ones when dropped.
struct Forget<'a> {
    cdp: &'a Cdp,
    id: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(&self.cdp.calls).waiting.remove(&self.id);
    }
}

/// A reply's `result`, or its `error` (message and data) as a [`ToolError`].
fn answer(method: &str, mut reply: Value) -> Result<Value, ToolError> {
    if let Some(error) = reply.get("error") {
        let text = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed");
        let mut message = format!("browser: {method}: {text}");
        if let Some(data) = error.get("data").and_then(Value::as_str) {
            message.push_str(" (");
            message.push_str(data);
            message.push(')');
        }
        return Err(ToolError::new(message));
    }
    Ok(reply.get_mut("result").map(Value::take).unwrap_or_default())
}

/// Reads NUL-separated messages until the browser's end closes (or the connection is
/// dropped), delivering each one that parses as JSON.
fn read_messages(mut reader: PipeReader, cdp: &Weak<Cdp>) {
    let mut buffer: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => return,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        // Only the new bytes can hold a NUL: what was there before had none.
        let mut scan = buffer.len();
        buffer.extend_from_slice(&chunk[..read]);
        let mut start = 0;
        while let Some(at) = memchr::memchr(0, &buffer[scan..]) {
            let end = scan + at;
            let Some(cdp) = cdp.upgrade() else {
                return;
            };
            if let Ok(message) = serde_json::from_slice::<Value>(&buffer[start..end]) {
                cdp.deliver(message);
            }
            start = end + 1;
            scan = start;
        }
        buffer.drain(..start);
        if buffer.len() > MAX_MESSAGE {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
