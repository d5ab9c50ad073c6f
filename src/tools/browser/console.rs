//! The page's console: its messages, uncaught errors and odek's own notes (the guard's
//! refusals, dismissed dialogs), kept bounded between two reads of `console`.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

/// Most console lines kept between two reads, and their most bytes together.
const RING_LINES: usize = 100;
const RING_BYTES: usize = 4096;
/// Most bytes of one console line.
const LINE_BYTES: usize = 400;

/// The page's console messages, errors and odek's refusals, newest last (bounded).
#[derive(Debug, Default)]
pub struct ConsoleRing(Mutex<Ring>);

#[derive(Debug, Default)]
struct Ring {
    lines: VecDeque<String>,
    bytes: usize,
    dropped: usize,
}

impl ConsoleRing {
    /// Adds one line (cut at 400 bytes); the oldest go past 100 lines or 4 KB.
    pub fn push(&self, line: impl Into<String>) {
        self.push_line(line.into());
    }

    fn push_line(&self, mut line: String) {
        if line.len() > LINE_BYTES {
            line.truncate(crate::text::floor_char_boundary(&line, LINE_BYTES));
            line.push('…');
        }
        let Ok(mut ring) = self.0.lock() else { return };
        ring.bytes += line.len();
        ring.lines.push_back(line);
        while ring.lines.len() > RING_LINES || ring.bytes > RING_BYTES {
            let Some(old) = ring.lines.pop_front() else {
                break;
            };
            ring.bytes -= old.len();
            ring.dropped += 1;
        }
    }

    /// The lines since the last read, and forgets them.
    pub fn take(&self) -> String {
        let Ok(mut ring) = self.0.lock() else {
            return String::new();
        };
        let mut out = match ring.dropped {
            0 => String::new(),
            n => format!("[{n} earlier lines dropped]\n"),
        };
        for line in ring.lines.drain(..) {
            out.push_str(&line);
            out.push('\n');
        }
        (ring.bytes, ring.dropped) = (0, 0);
        out.pop();
        out
    }
}

pub(super) fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// A remote object as text: its value, else its description.
fn remote_text(object: &Value) -> String {
    match object.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => str_at(object, "/description").to_string() + str_at(object, "/unserializableValue"),
    }
}

/// `console.error("boom")` → `error: boom`.
pub(super) fn console_line(params: &Value) -> String {
    let args = params.get("args").and_then(Value::as_array);
    let texts: Vec<String> = args.into_iter().flatten().map(remote_text).collect();
    format!("{}: {}", str_at(params, "/type"), texts.join(" "))
}

/// An uncaught exception: `exception: Error: bad (http://…/app.js:12)`.
pub(super) fn exception_line(params: &Value) -> String {
    let details = params.get("exceptionDetails").unwrap_or(&Value::Null);
    let message = match str_at(details, "/exception/description") {
        "" => str_at(details, "/text"),
        description => description.lines().next().unwrap_or(""),
    };
    let line = details.pointer("/lineNumber").and_then(Value::as_u64);
    match (str_at(details, "/url"), line) {
        ("", _) | (_, None) => format!("exception: {message}"),
        (url, Some(n)) => format!("exception: {message} ({url}:{})", n + 1),
    }
}

/// A browser log entry (network errors, refusals): `error: Failed to load … (url)`; none
/// for the favicon the browser asks for by itself.
pub(super) fn log_line(params: &Value) -> Option<String> {
    let entry = params.get("entry").unwrap_or(&Value::Null);
    let (level, text) = (str_at(entry, "/level"), str_at(entry, "/text"));
    Some(match str_at(entry, "/url") {
        "" => format!("{level}: {text}"),
        url if url.ends_with("/favicon.ico") => return None,
        url => format!("{level}: {text} ({url})"),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_console_keeps_the_newest_lines_within_its_caps_and_is_read_once() {
        let ring = ConsoleRing::default();
        assert_eq!(ring.take(), "");
        ring.push("log: one");
        ring.push(String::from("error: two"));
        assert_eq!(ring.take(), "log: one\nerror: two");
        assert_eq!(ring.take(), "");
        for n in 0..150 {
            ring.push(format!("log: {n}"));
        }
        let read = ring.take();
        assert!(
            read.starts_with("[50 earlier lines dropped]\nlog: 50\n"),
            "{read}"
        );
        assert!(read.ends_with("log: 149"));
        ring.push("x".repeat(5000));
        let long = ring.take();
        assert_eq!(long.len(), LINE_BYTES + '…'.len_utf8());
        for n in 0..20 {
            ring.push(format!("{n:0>300}"));
        }
        let read = ring.take();
        assert!(read.len() <= RING_BYTES + 40, "{}", read.len());
        assert!(read.starts_with("[7 earlier lines dropped]"), "{read}");
    }

    #[test]
    fn console_events_read_as_one_line_each() {
        let called = json!({"type": "error", "args": [{"type": "string", "value": "boom"},
            {"type": "number", "value": 2}, {"type": "object", "description": "Object"}]});
        assert_eq!(console_line(&called), "error: boom 2 Object");
        let thrown = json!({"exceptionDetails": {"text": "Uncaught", "lineNumber": 4,
            "url": "http://127.0.0.1:9/", "exception": {"description": "Error: bad\n    at x"}}});
        assert_eq!(
            exception_line(&thrown),
            "exception: Error: bad (http://127.0.0.1:9/:5)"
        );
        let bare = json!({"exceptionDetails": {"text": "Uncaught SyntaxError"}});
        assert_eq!(exception_line(&bare), "exception: Uncaught SyntaxError");
        let log = json!({"entry": {"source": "network", "level": "error",
            "text": "Failed to load resource", "url": "http://127.0.0.1:9/x"}});
        assert_eq!(
            log_line(&log).as_deref(),
            Some("error: Failed to load resource (http://127.0.0.1:9/x)")
        );
        let favicon = json!({"entry": {"level": "error", "text": "Failed to load resource",
            "url": "http://127.0.0.1:9/favicon.ico"}});
        assert_eq!(log_line(&favicon), None);
    }
}
