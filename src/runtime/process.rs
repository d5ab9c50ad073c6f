//! The one process start-up every turn-running command shares — `run`, `continue`,
//! `repl`, `serve`, `telegram`, `mcp serve`, `subagent` and the schedule runner (`schedule
//! daemon`, `schedule run`): the async runtime → the redactor → the event writer → the
//! runtime → the one supervisor of the process; the MCP servers start when the surface asks
//! ([`Process::start_mcp`]). Nothing else in odek builds a supervisor.
//!
//! The [`Process`] holds the event writer through a guard that flushes and closes it on
//! every way out — a normal end, an error return, a panic unwinding — so the terminal event
//! of a run is never lost, and says on stderr how many lines were dropped or could not be
//! written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{ModelSource, Runtime, RuntimeError, RuntimeOptions, Supervisor, build_redactor_with};
use crate::config::Config;
use crate::events::{EmitterOptions, EventSink, EventWriter};
use crate::redact::Redactor;

/// How long shutdown waits for cancelled turns to save, on every surface.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// What a command hands the start-up.
pub struct StartOptions {
    /// The resolved configuration.
    pub config: Config,
    /// The odek home.
    pub home: PathBuf,
    /// The tools' working directory.
    pub cwd: PathBuf,
    /// HTTP endpoint or replay file.
    pub model_source: ModelSource,
    /// Also record every answer to this file (`--record`).
    pub record: Option<PathBuf>,
    /// Where events go, if anywhere.
    pub events: Option<Box<dyn EventSink>>,
    /// Include raw tool arguments in `tool_call_started` (`--events-include-args`).
    pub include_args: bool,
    /// Secrets of this process besides the configured ones (the server's token).
    pub extra_secrets: Vec<String>,
    /// Where the process's async tasks run.
    pub threads: Threads,
}

/// Where a process's async tasks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threads {
    /// On worker threads, one per core: a surface that serves many at once (`serve`,
    /// `telegram`), or whose background work goes on while it waits for the user (the REPL:
    /// its jobs' time limits, its MCP servers).
    #[default]
    Pool,
    /// On the command's own thread, while it waits for its turn: a command that runs one
    /// turn and exits (`run`, `continue`, a sub-agent's child). No hand-off between threads
    /// at each step of the loop (docs/PERFORMANCE.md, "The loop's cost"); blocking work
    /// still goes to tokio's blocking threads.
    Caller,
}

impl StartOptions {
    /// The options of `config` with nothing else: the model over HTTP, no events.
    pub fn new(config: Config, home: PathBuf, cwd: PathBuf) -> StartOptions {
        StartOptions {
            config,
            home,
            cwd,
            model_source: ModelSource::Http,
            record: None,
            events: None,
            include_args: false,
            extra_secrets: Vec::new(),
            threads: Threads::Pool,
        }
    }
}

/// A started process: see the module docs.
pub struct Process {
    /// The runtime every turn is built from.
    pub runtime: Arc<Runtime>,
    /// Where every turn runs.
    pub supervisor: Supervisor,
    /// This process's redactor.
    pub redactor: Arc<Redactor>,
    /// Keeps the event writer open until the process ends.
    events: EventsGuard,
    /// The async runtime every task of the process runs on (dropped last).
    tokio: tokio::runtime::Runtime,
}

/// Most threads for blocking work (file reads and writes, session loads): tokio's default,
/// 512, let `odek serve` under 50 connections start ~130 of them, each keeping its own
/// allocator heap (docs/PERFORMANCE.md, "Weight"); more than this queue for a moment.
const MAX_BLOCKING_THREADS: usize = 16;

/// A multi-threaded async runtime as every command uses it: the [`Process`]'s, and the one
/// of a command that runs no turn (`mcp list`, `session search`).
pub fn async_runtime() -> Result<tokio::runtime::Runtime, RuntimeError> {
    tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .enable_all()
        .build()
        .map_err(RuntimeError::AsyncRuntime)
}

/// An async runtime that runs every task on the thread that calls `block_on`.
fn caller_runtime() -> Result<tokio::runtime::Runtime, RuntimeError> {
    tokio::runtime::Builder::new_current_thread()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .enable_all()
        .build()
        .map_err(RuntimeError::AsyncRuntime)
}

impl Process {
    /// Builds the async runtime, the redactor, the event writer, the runtime and the
    /// supervisor.
    pub fn start(opts: StartOptions) -> Result<Process, RuntimeError> {
        let tokio = match opts.threads {
            Threads::Pool => async_runtime()?,
            Threads::Caller => caller_runtime()?,
        };
        let started = {
            let _inside = tokio.enter();
            Process::build(opts)
        };
        let (runtime, supervisor, redactor, events) = started?;
        Ok(Process {
            runtime,
            supervisor,
            redactor,
            events,
            tokio,
        })
    }

    fn build(
        opts: StartOptions,
    ) -> Result<(Arc<Runtime>, Supervisor, Arc<Redactor>, EventsGuard), RuntimeError> {
        let secrets: Vec<&str> = opts.extra_secrets.iter().map(String::as_str).collect();
        let redactor = build_redactor_with(&opts.config, &secrets);
        crate::redact::set_process_redactor(redactor.clone());
        let events = opts.events.map(|sink| {
            EventWriter::new(
                sink,
                redactor.clone(),
                EmitterOptions {
                    include_args: opts.include_args,
                },
            )
        });
        let guard = EventsGuard {
            events: events.clone(),
            closed: std::sync::atomic::AtomicBool::new(false),
        };
        let runtime = Runtime::build(
            opts.config,
            RuntimeOptions {
                home: opts.home,
                cwd: opts.cwd,
                model_source: opts.model_source,
                record: opts.record,
                events,
                redactor: redactor.clone(),
            },
        )?;
        let supervisor = Supervisor::new(SHUTDOWN_GRACE, redactor.clone());
        Ok((Arc::new(runtime), supervisor, redactor, guard))
    }

    /// Runs `work` to its end on the process's async runtime (from outside it).
    pub fn block_on<F: std::future::Future>(&self, work: F) -> F::Output {
        self.tokio.block_on(work)
    }

    /// The process's async runtime, for work spawned from outside it.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.tokio.handle()
    }

    /// Starts the configured MCP servers (once); returns the warnings of those that did
    /// not start, redacted.
    pub async fn start_mcp(&self) -> Vec<String> {
        self.runtime
            .start_mcp()
            .await
            .iter()
            .map(|w| self.redactor.redact(w).into_owned())
            .collect()
    }

    /// The event writer, when events go somewhere.
    pub fn events(&self) -> Option<&EventWriter> {
        self.events.events.as_ref()
    }

    /// Flushes and closes the event writer now and reports what it lost (the guard would
    /// at the end; a command that prints its answer last calls this first).
    pub fn close_events(&self) {
        self.events.close();
    }
}

/// Flushes and closes the event writer when dropped, reporting what was lost (once).
struct EventsGuard {
    events: Option<EventWriter>,
    closed: std::sync::atomic::AtomicBool,
}

impl EventsGuard {
    fn close(&self) {
        let Some(events) = &self.events else {
            return;
        };
        if self.closed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        events.close();
        for line in loss_report(events.dropped(), events.write_errors()) {
            eprintln!("{line}");
        }
    }
}

impl Drop for EventsGuard {
    fn drop(&mut self) {
        self.close();
    }
}

/// What the event stream lost, one line each kind (none when nothing was).
pub fn loss_report(dropped: u64, write_errors: u64) -> Vec<String> {
    let mut lines = Vec::new();
    if dropped > 0 {
        lines.push(format!(
            "odek: warning: {dropped} event(s) were dropped because the reader was too slow"
        ));
    }
    if write_errors > 0 {
        lines.push(format!(
            "odek: events-jsonl: {write_errors} line(s) could not be written"
        ));
    }
    lines
}
