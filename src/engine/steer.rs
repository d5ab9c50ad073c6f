//! Steering: what the person at the keyboard sends while a turn runs, given to the turn at
//! its next model request as a user message marked as sent during the turn.

use crate::llm::Message;

/// Where a running turn's steer messages wait (the runtime's per-session inbox). The engine
/// takes them before each model request.
pub trait Steering: Send + Sync {
    /// The messages sent since the last call, oldest first, taken out of the inbox;
    /// `iteration` is the model request they go into.
    fn take(&self, iteration: u32) -> Vec<String>;
}

/// What opens a steer message, so the model reads it as sent while it worked (kept with the
/// session's turn counting, which leaves steers out).
pub use crate::session::STEER_NOTE;

/// A steer message as the transcript keeps it.
pub fn steer_message(text: &str) -> Message {
    Message::user(format!("{STEER_NOTE}{text}"))
}
