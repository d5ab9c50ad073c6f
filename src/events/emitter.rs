//! Stamping, redacting and queueing events for the background writer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::sink::EventSink;
use crate::protocol::{Event, RunFailed, Stamp, envelope};
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
    /// Lines ever queued, and lines the writer has finished with (written or failed).
    queued: u64,
    done: u64,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
    room: Condvar,
    /// Signalled after every line the writer finished with.
    written: Condvar,
}

/// The process's event stream: one sink and one background writer thread, shared by every
/// run (concurrent turns of `serve` included). Cheap to clone. Each run writes through its
/// own [`Emitter`] from [`EventWriter::run`].
#[derive(Clone)]
pub struct EventWriter {
    inner: Arc<WriterInner>,
}

struct WriterInner {
    shared: Arc<Shared>,
    redactor: Arc<Redactor>,
    options: EmitterOptions,
    dropped: AtomicU64,
    writer: Mutex<Option<JoinHandle<()>>>,
    write_errors: Arc<AtomicU64>,
}

/// The events of one run: its run id, its session id and its terminal-event guard, over the
/// shared [`EventWriter`]. Cheap to clone; clones belong to the same run.
#[derive(Clone)]
pub struct Emitter {
    writer: EventWriter,
    run: Arc<RunContext>,
}

struct RunContext {
    run_id: String,
    session_id: Option<String>,
    terminal_written: AtomicBool,
}

impl EventWriter {
    /// Starts the writer thread for `sink`.
    pub fn new(sink: Box<dyn EventSink>, redactor: Arc<Redactor>, options: EmitterOptions) -> Self {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                lines: VecDeque::new(),
                closed: false,
                queued: 0,
                done: 0,
            }),
            ready: Condvar::new(),
            room: Condvar::new(),
            written: Condvar::new(),
        });
        let write_errors = Arc::new(AtomicU64::new(0));
        let writer = spawn_writer(shared.clone(), sink, write_errors.clone());
        EventWriter {
            inner: Arc::new(WriterInner {
                shared,
                redactor,
                options,
                dropped: AtomicU64::new(0),
                writer: Mutex::new(writer),
                write_errors,
            }),
        }
    }

    /// The emitter of run `run_id`: its id and the session's on every event, and its own
    /// guard for the one terminal event.
    pub fn run(&self, run_id: &str, session_id: Option<String>) -> Emitter {
        Emitter {
            writer: self.clone(),
            run: Arc::new(RunContext {
                run_id: run_id.to_string(),
                session_id,
                terminal_written: AtomicBool::new(false),
            }),
        }
    }

    /// Options this writer was made with.
    pub fn options(&self) -> &EmitterOptions {
        &self.inner.options
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

    /// Queues a line for the writer. A full queue makes an ordinary event wait up to 200 ms
    /// for room and then drops it; a terminal event is never dropped: it is queued whatever
    /// the queue holds, and the call returns once the writer has written it (the run's end
    /// is on disk, or in the pipe, before the program goes on).
    fn enqueue(&self, line: String, terminal: bool) {
        let shared = &self.inner.shared;
        let Ok(mut q) = shared.queue.lock() else {
            return;
        };
        if q.closed {
            return;
        }
        if !terminal && q.lines.len() >= QUEUE_CAPACITY {
            q = match shared
                .room
                .wait_timeout_while(q, FULL_QUEUE_WAIT, |q| q.lines.len() >= QUEUE_CAPACITY)
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
        q.queued += 1;
        let seq = q.queued;
        shared.ready.notify_one();
        if terminal && self.writer_running() {
            drop(shared.written.wait_while(q, |q| q.done < seq && !q.closed));
        }
    }

    fn writer_running(&self) -> bool {
        self.inner
            .writer
            .lock()
            .map(|w| w.as_ref().is_some_and(|h| !h.is_finished()))
            .unwrap_or(false)
    }
}

impl Emitter {
    /// This run's id (32 hex).
    pub fn run_id(&self) -> &str {
        &self.run.run_id
    }

    /// Options of the underlying writer.
    pub fn options(&self) -> &EmitterOptions {
        self.writer.options()
    }

    /// Emits one event. `iteration` and `tool` are omitted when `None`. A run's second
    /// terminal event is dropped: each run ends exactly once.
    pub fn emit(&self, event: Event, iteration: Option<u32>, tool: Option<&str>) {
        let terminal = event.is_terminal();
        if terminal && self.run.terminal_written.swap(true, Ordering::SeqCst) {
            return;
        }
        let line = self.line(&event, iteration, tool);
        self.writer.enqueue(line, terminal);
    }

    /// Writes `run_failed` now unless the run already ended (used when the process must exit
    /// at once, e.g. a second Ctrl-C), then drains the writer.
    pub fn abort_run(&self, error_class: &str, message: &str) {
        self.emit(
            Event::RunFailed(RunFailed {
                duration_ms: None,
                error_class: error_class.to_string(),
                error: message.to_string(),
                http_status: None,
                remaining: None,
                cost_usd: None,
            }),
            None,
            None,
        );
        self.writer.close();
    }

    /// The event as its stream line: the envelope, every string of `data` redacted.
    fn line(&self, event: &Event, iteration: Option<u32>, tool: Option<&str>) -> String {
        let redactor = &self.writer.inner.redactor;
        let mut data = event.data();
        redactor.redact_json(&mut data);
        let tool = tool.map(|t| redactor.redact(t));
        let timestamp = crate::util::timestamp::now_rfc3339_precise();
        let stamp = Stamp {
            run_id: &self.run.run_id,
            session_id: self.run.session_id.as_deref(),
            iteration,
            tool: tool.as_deref(),
            timestamp: &timestamp,
        };
        envelope(event.kind(), &stamp, data).to_string()
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
                if let Ok(mut q) = shared.queue.lock() {
                    q.done += 1;
                }
                shared.written.notify_all();
            }
        })
        .ok()
}

/// An event writer whose lines are parsed and collected, for tests.
#[cfg(test)]
pub(crate) fn collecting_writer() -> (EventWriter, Arc<Mutex<Vec<serde_json::Value>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink_lines = lines.clone();
    let sink = super::CallbackSink(Box::new(move |line: &str| {
        if let (Ok(mut l), Ok(v)) = (sink_lines.lock(), serde_json::from_str(line)) {
            l.push(v);
        }
    }));
    let writer = EventWriter::new(
        Box::new(sink),
        Arc::new(Redactor::new()),
        EmitterOptions::default(),
    );
    (writer, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SCHEMA;

    fn completed(answer: &str) -> Event {
        Event::RunCompleted(crate::protocol::RunCompleted {
            duration_ms: 1,
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            answer: answer.into(),
            remaining: None,
            cost_usd: None,
        })
    }

    #[test]
    fn runs_on_one_writer_keep_their_own_ids_and_terminal_guard() {
        let (writer, lines) = collecting_writer();
        let a = writer.run("ra", Some("session-a".into()));
        let b = writer.run("rb", Some("session-b".into()));
        assert_ne!(a.run_id(), b.run_id());
        for e in [&a, &b, &a, &b] {
            e.emit(completed("a"), None, None);
        }
        writer.close();
        let lines = lines.lock().expect("lines").clone();
        assert_eq!(lines.len(), 2, "one terminal event per run: {lines:?}");
        assert_eq!(lines[0]["run_id"], a.run_id());
        assert_eq!(lines[0]["session_id"], "session-a");
        assert_eq!(lines[1]["run_id"], b.run_id());
        assert_eq!(lines[1]["session_id"], "session-b");
    }

    #[test]
    fn a_run_without_a_session_has_no_session_id() {
        let (writer, lines) = collecting_writer();
        writer.run("r", None).emit(
            Event::RunStarted(crate::protocol::RunStarted {
                model: "m".into(),
                max_iterations: 1,
                sandbox: false,
            }),
            None,
            None,
        );
        writer.close();
        let lines = lines.lock().expect("lines").clone();
        assert!(lines[0].get("session_id").is_none(), "{:?}", lines[0]);
        assert_eq!(lines[0]["schema"], SCHEMA);
    }

    #[test]
    fn the_terminal_event_is_queued_past_a_full_queue_and_written_before_emit_returns() {
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink_lines = lines.clone();
        let gate = Mutex::new(gate);
        let sink = crate::events::CallbackSink(Box::new(move |line: &str| {
            // The reader is stuck until the test lets it go.
            let _ = gate.lock().map(|g| g.recv());
            if let Ok(mut l) = sink_lines.lock() {
                l.push(line.to_string());
            }
        }));
        let writer = EventWriter::new(
            Box::new(sink),
            Arc::new(Redactor::new()),
            EmitterOptions::default(),
        );
        let run = writer.run("r", None);
        for _ in 0..=QUEUE_CAPACITY {
            run.emit(
                Event::SessionSaved(crate::protocol::SessionSaved { message_count: 1 }),
                Some(1),
                None,
            );
        }
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (ended_flag, terminal) = (ended.clone(), run.clone());
        let emitting = std::thread::spawn(move || {
            terminal.emit(completed("a"), None, None);
            ended_flag.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !ended.load(Ordering::SeqCst),
            "emit waits for the terminal event to be written"
        );
        for _ in 0..QUEUE_CAPACITY + 2 {
            let _ = release.send(());
        }
        emitting.join().expect("emit returns");
        let written = lines.lock().expect("lines").clone();
        assert!(
            written.last().is_some_and(|l| l.contains("run_completed")),
            "the terminal event was written, last"
        );
        writer.close();
    }
}
