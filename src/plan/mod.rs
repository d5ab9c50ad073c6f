//! The structured plan: the state the model keeps with the `plan` tool, the store that
//! serialises its mutations, the renderer that turns it into the protected
//! `[Current plan:` system message, and the strict parser that reads that message back on
//! resume.
//!
//! A leaf module: it knows nothing about the engine, the model client or sessions. The
//! engine owns one [`PlanStore`] (shared with the tool), calls [`render`] after every tool
//! batch, wraps the body with [`wrap_plan_message`], and on resume feeds the transcript to
//! [`parse_plan_message`] / [`extract_plan`]. See `docs/PLANNING.md`.

mod args;
mod events;
mod parse;
mod render;
mod state;
mod store;
mod text;
mod validate;

#[cfg(test)]
mod tests;

pub use args::{NewStep, PlanArgs, StepUpdate, decode_args};
pub use events::PlanEvent;
pub use parse::{
    PLAN_WRAPPER_SOURCE, PlanParseError, extract_plan, is_plan_message, parse_plan_message,
};
pub use render::{
    NO_ACTIVE_PLAN, PLAN_MESSAGE_PREFIX, TRUNCATION_MARKER, collapsed_header, header_line, render,
    step_line,
};
pub use state::{
    ABSOLUTE_MAX_STEPS, BLOCKED_STREAK, DEFAULT_MAX_RENDER_CHARS, DEFAULT_MAX_STEPS, MAX_ID_BYTES,
    MAX_RENDER_CHARS, MAX_TITLE_BYTES, MIN_RENDER_CHARS, PlanActivity, PlanCounts, PlanLimits,
    PlanPlacement, PlanState, PlanStep, StepStatus,
};
pub use store::{ChangeCallback, PlanStore};
pub use text::{go_quote, normalize_text};
pub use validate::{PlanError, StepProblem};

/// The plan message as the engine stores it: the header line stays plain (recognition
/// depends on it) and the step lines go inside the untrusted wrapper with source `plan`.
/// A single-line (collapsed) render has no body and is returned unchanged.
pub fn wrap_plan_message(rendered: &str, nonce: &str) -> String {
    match rendered.split_once('\n') {
        Some((header, body)) => {
            let wrapped = crate::untrusted::wrap_with_nonce(nonce, PLAN_WRAPPER_SOURCE, body);
            format!("{header}\n{wrapped}")
        }
        None => rendered.to_owned(),
    }
}
