//! The `odek.event/v1` stream: one JSON object per line describing a run, for dashboards, CI
//! scripts and embedding programs.
//!
//! One [`EventWriter`] per process owns the sink and a background writer thread, so a slow
//! reader never stalls the loop for long and two lines never interleave. Each run gets its
//! own [`Emitter`] from it, which stamps the envelope (schema, the run's id, its session id,
//! timestamp), redacts every string in the payload and guards the run's one terminal event;
//! concurrent runs share only the writer. [`EventsObserver`] turns engine
//! events into stream events; plan events come from the plan store's change callback.

mod emitter;
mod observer;
mod sink;

#[cfg(test)]
pub(crate) use emitter::collecting_writer;
pub use emitter::{Emitter, EmitterOptions, EventWriter};
pub use observer::EventsObserver;
pub use sink::{CallbackSink, EventSink, JsonlFileSink, StdoutSink, open_jsonl_file};

/// The schema tag of every event.
pub const SCHEMA: &str = "odek.event/v1";

/// Event types this program emits.
pub mod types {
    /// A run began.
    pub const RUN_STARTED: &str = "run_started";
    /// An iteration (one model call and its tools) ended.
    pub const ITERATION_COMPLETED: &str = "iteration_completed";
    /// A tool call is about to run.
    pub const TOOL_CALL_STARTED: &str = "tool_call_started";
    /// A tool call succeeded.
    pub const TOOL_CALL_COMPLETED: &str = "tool_call_completed";
    /// A tool call failed.
    pub const TOOL_CALL_FAILED: &str = "tool_call_failed";
    /// The session was saved.
    pub const SESSION_SAVED: &str = "session_saved";
    /// The context was trimmed.
    pub const CONTEXT_TRIMMED: &str = "context_trimmed";
    /// An execution budget ran out.
    pub const BUDGET_EXCEEDED: &str = "budget_exceeded";
    /// Terminal: the run produced an answer.
    pub const RUN_COMPLETED: &str = "run_completed";
    /// Terminal: the run failed.
    pub const RUN_FAILED: &str = "run_failed";
    /// A plan was created (or replaced).
    pub const PLAN_CREATED: &str = "plan_created";
    /// A plan changed.
    pub const PLAN_UPDATED: &str = "plan_updated";
}
