//! The `odek.event/v1` stream: one JSON object per line describing a run, for dashboards, CI
//! scripts and embedding programs.
//!
//! One [`EventWriter`] per process owns the sink and a background writer thread, so a slow
//! reader never stalls the loop for long and two lines never interleave. Each run gets its
//! own [`Emitter`] from it, which stamps the envelope (schema, the run's id, its session id,
//! timestamp), redacts every string in the payload and guards the run's one terminal event;
//! concurrent runs share only the writer. [`EventsObserver`] turns engine
//! events into stream events; plan events come from the plan store's change callback. What
//! the events are is defined once, in [`crate::protocol`].

mod emitter;
mod observer;
mod sink;

#[cfg(test)]
pub(crate) use emitter::collecting_writer;
pub use emitter::{Emitter, EmitterOptions, EventWriter};
pub use observer::EventsObserver;
pub use sink::{CallbackSink, EventSink, JsonlFileSink, StdoutSink, open_jsonl_file};

pub use crate::protocol::SCHEMA;
