//! Stamping, redacting and queueing events for the background writer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Map, Value};

use super::SCHEMA;
use super::sink::EventSink;
use crate::redact::Redactor;

/// Events waiting for the writer before new ones must wait or be dropped.
const QUEUE_CAPACITY: usize = 1024;
/// How long an emit waits for room in a full queue before dropping a non-terminal event.
const FULL_QUEUE_WAIT: Duration = Duration::from_millis(200);
/// How long `close` waits for the writer to drain.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Options of an emitter.
#[derive(Debug, Clone, Default)]
pub struct EmitterOptions {
    /// Include (redacted) raw tool arguments in `tool_call_started`.
    pub include_args: bool,
}

struct Queue {
    lines: VecDeque<String>,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    room: Condvar,
}

/// Writes `odek.event/v1` lines. Cheap to clone; all clones share one writer.
#[derive(Clone)]
pub struct Emitter {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    run_id: Mutex<String>,
    session_id: Mutex<Option<String>>,
    redactor: Arc<Redactor>,
    options: EmitterOptions,
    dropped: AtomicU64,
    terminal_written: AtomicBool,
    writer: Mutex<Option<JoinHandle<()>>>,
    write_errors: Arc<AtomicU64>,
}

impl Emitter {
    /// Starts the writer thread for `sink`.
    pub fn new(sink: Box<dyn EventSink>, redactor: Arc<Redactor>, options: EmitterOptions) -> Self {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                lines: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            room: Condvar::new(),
        });
        let write_errors = Arc::new(AtomicU64::new(0));
        let writer = spawn_writer(shared.clone(), sink, write_errors.clone());
        Emitter {
            inner: Arc::new(Inner {
                shared,
                run_id: Mutex::new(new_run_id()),
                session_id: Mutex::new(None),
                redactor,
                options,
                dropped: AtomicU64::new(0),
                terminal_written: AtomicBool::new(false),
                writer: Mutex::new(writer),
                write_errors,
            }),
        }
    }

    /// Options this emitter was made with.
    pub fn options(&self) -> &EmitterOptions {
        &self.inner.options
    }

    /// Starts a new run: a fresh run id, and the terminal-event guard re-armed.
    pub fn begin_run(&self) -> String {
        let id = new_run_id();
        if let Ok(mut r) = self.inner.run_id.lock() {
            *r = id.clone();
        }
        self.inner.terminal_written.store(false, Ordering::SeqCst);
        id
    }

    /// Sets the session id stamped on later events.
    pub fn set_session_id(&self, id: Option<String>) {
        if let Ok(mut s) = self.inner.session_id.lock() {
            *s = id;
        }
    }

    /// Emits one event. `iteration` and `tool` are omitted when `None`.
    pub fn emit(&self, kind: &str, iteration: Option<u32>, tool: Option<&str>, data: Value) {
        let terminal = kind == super::types::RUN_COMPLETED || kind == super::types::RUN_FAILED;
        if terminal && self.inner.terminal_written.swap(true, Ordering::SeqCst) {
            return; // exactly one terminal event per run
        }
        let line = self.envelope(kind, iteration, tool, data);
        self.enqueue(line, terminal);
    }

    /// Writes `run_failed` now unless the run already ended (used when the process must exit
    /// at once, e.g. a second Ctrl-C), then drains the writer.
    pub fn abort_run(&self, error_class: &str, message: &str) {
        self.emit(
            super::types::RUN_FAILED,
            None,
            None,
            serde_json::json!({"error_class": error_class, "error": message}),
        );
        self.close();
    }

    /// Events dropped because the reader was too slow.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Lines the sink failed to write.
    pub fn write_errors(&self) -> u64 {
        self.inner.write_errors.load(Ordering::Relaxed)
    }

    /// Flushes everything queued and stops the writer (idempotent).
    pub fn close(&self) {
        if let Ok(mut q) = self.inner.shared.queue.lock() {
            q.closed = true;
        }
        self.inner.shared.ready.notify_all();
        let handle = self.inner.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(handle) = handle {
            let deadline = std::time::Instant::now() + CLOSE_WAIT;
            while !handle.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if handle.is_finished() {
                let _ = handle.join();
            }
        }
    }

    fn envelope(
        &self,
        kind: &str,
        iteration: Option<u32>,
        tool: Option<&str>,
        mut data: Value,
    ) -> String {
        self.inner.redactor.redact_json(&mut data);
        let mut env = Map::new();
        env.insert("schema".into(), Value::from(SCHEMA));
        env.insert("type".into(), Value::from(kind));
        let run_id = self
            .inner
            .run_id
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default();
        env.insert("run_id".into(), Value::from(run_id));
        if let Some(s) = self.inner.session_id.lock().ok().and_then(|s| s.clone()) {
            env.insert("session_id".into(), Value::from(s));
        }
        if let Some(i) = iteration {
            env.insert("iteration".into(), Value::from(i));
        }
        if let Some(t) = tool {
            env.insert(
                "tool".into(),
                Value::from(self.inner.redactor.redact(t).into_owned()),
            );
        }
        env.insert("timestamp".into(), Value::from(timestamp()));
        env.insert("data".into(), data);
        Value::Object(env).to_string()
    }

    fn enqueue(&self, line: String, must_keep: bool) {
        let shared = &self.inner.shared;
        let Ok(mut q) = shared.queue.lock() else {
            return;
        };
        if q.closed {
            return;
        }
        if q.lines.len() >= QUEUE_CAPACITY {
            let wait = if must_keep {
                CLOSE_WAIT
            } else {
                FULL_QUEUE_WAIT
            };
            q = match shared
                .room
                .wait_timeout_while(q, wait, |q| q.lines.len() >= QUEUE_CAPACITY)
            {
                Ok((q, _)) => q,
                Err(_) => return,
            };
            if q.lines.len() >= QUEUE_CAPACITY {
                self.inner.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        q.lines.push_back(line);
        drop(q);
        shared.ready.notify_one();
    }
}

fn spawn_writer(
    shared: Arc<Shared>,
    mut sink: Box<dyn EventSink>,
    errors: Arc<AtomicU64>,
) -> Option<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("odek-events".into())
        .spawn(move || {
            loop {
                let line = {
                    let Ok(q) = shared.queue.lock() else { return };
                    let Ok(mut q) = shared
                        .ready
                        .wait_while(q, |q| q.lines.is_empty() && !q.closed)
                    else {
                        return;
                    };
                    match q.lines.pop_front() {
                        Some(l) => l,
                        None => return, // closed and drained
                    }
                };
                shared.room.notify_one();
                if sink.write_line(&line).is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .ok()
}

/// 32 lowercase hex characters.
fn new_run_id() -> String {
    crate::random::hex_id::<16>()
}

/// UTC RFC 3339 with nanoseconds.
fn timestamp() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
