//! The terminal as an observer of the engine: a spinner while waiting, streamed answer text,
//! one line per finished tool call, retries and warnings — and the approval prompt.
//!
//! This file is the folder's face: the terminal itself, its options and its one lock are in
//! `base.rs`, what the lock guards and the answer stream's writes in `state.rs`, the spinner
//! thread in `spinner.rs`, the glyphs and tool lines in `glyphs.rs`, streamed and final
//! answers in `answer.rs`, the REPL's printer in `sink.rs`, the approval and `clarify` prompts in `prompts.rs`, and the engine's
//! events in `events.rs`.

mod answer;
mod base;
mod events;
mod glyphs;
mod prompts;
pub mod sink;
mod spinner;
mod state;

pub use base::{Terminal, TerminalOptions};
pub use glyphs::{Glyphs, locale_is_utf8, process_locale_is_utf8};
pub use prompts::TerminalApprover;
pub use state::AnswerStream;
