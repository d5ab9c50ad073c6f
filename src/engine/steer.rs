//! Steering: what the person at the keyboard sends while a turn runs, given to the turn at
//! its next model request as a user message marked as sent during the turn.

use super::parts::{Engine, RunState};
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

impl Engine {
    /// Sets where this engine's run takes steer messages from.
    pub fn set_steering(&mut self, steering: std::sync::Arc<dyn Steering>) {
        self.steering = Some(steering);
    }

    /// Appends the steer messages waiting for this request.
    pub(super) fn take_steers(&self, iteration: u32, state: &mut RunState) {
        let Some(steering) = &self.steering else {
            return;
        };
        for text in steering.take(iteration) {
            state.ctx.push(steer_message(&text));
        }
    }
}
