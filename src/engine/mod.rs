//! The ReAct loop: ask the model, run the tool calls it requests (in parallel, results in call
//! order), feed the results back, until it answers without tools or a limit is reached.
//!
//! This file is the folder's face: declarations and re-exports. The loop is `run.rs`; the
//! engine, its parts and a run's state `parts.rs`; what a run starts from and how it ended
//! `outcome.rs`; the settings and budgets `settings.rs`, their checks `budgets.rs`; the
//! hooks around the prompt and the answer `hook_phases.rs`; one model call `model_call.rs`;
//! saving `persist.rs`; why a run failed `error.rs`.

pub mod attachments;
mod batch;
mod budgets;
pub mod compaction;
pub mod context;
mod error;
mod fit;
mod hints;
mod hook_phases;
mod model_call;
pub mod observer;
mod outcome;
pub mod output;
mod parts;
mod persist;
mod run;
mod settings;
mod steer;
mod summary;

pub use error::RunError;
pub use observer::{EngineEvent, Fanout, IMAGE_SOURCE, NoopObserver, Observer};
pub use outcome::{AnswerCut, Conversation, PlanTelemetry, RemainingSteps, RunOutcome};
pub use parts::{Engine, EngineParts, ResultNotes};
pub use persist::{PersistError, PersistFn};
pub use settings::{Budgets, EngineSettings};
pub use steer::{STEER_NOTE, Steering, steer_message};

#[cfg(test)]
mod tests;
