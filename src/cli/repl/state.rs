//! The REPL read loop's state and messages (the loop is in `live.rs`).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::Sender;

use rustyline::error::ReadlineError;

use crate::runtime::{RuntimeError, TurnOutcome};

/// What the loop hears: a read of the line editor, or the end of a turn.
pub(super) enum Event {
    Read(Read),
    Ended(Box<Result<TurnOutcome, RuntimeError>>, Option<String>),
}

/// One read of the line editor.
pub(super) enum Read {
    /// A line, and whether it was sent with Alt+Enter.
    Line(String, bool),
    /// Ctrl-C, and whether the line was empty.
    Interrupted(bool),
    Eof,
    Failed(ReadlineError),
}

/// The loop's state kept on the REPL.
#[derive(Default)]
pub(super) struct Live {
    /// Where a turn's end is told (set while the loop runs).
    pub(super) events: Option<Sender<Event>>,
    /// The running turn: its run id and its Ctrl-C watcher.
    pub(super) running: Option<(String, tokio::task::JoinHandle<()>)>,
    /// Where a prompt's answer goes (approvals, `clarify`) while lines are read in a turn.
    pub(super) replies: Option<Sender<String>>,
    /// Lines for the next turns that came as a turn was ending.
    pub(super) waiting: std::collections::VecDeque<String>,
    /// The REPL ends once the running turn has.
    pub(super) leaving: bool,
    /// The number of the turn a line would start (the prompt shown follows it).
    pub(super) number: Arc<AtomicUsize>,
    /// The session's turns when the running turn started (its own message is saved during
    /// the turn: counting it again would skip a number).
    pub(super) turns_before: usize,
}

impl Live {
    /// True while a turn runs.
    pub(super) fn is_running(&self) -> bool {
        self.running.is_some()
    }
}
