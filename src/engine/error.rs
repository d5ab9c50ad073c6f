//! Why a run did not produce an answer: [`RunError`], its hint and its event class.

use crate::error::{Classified, ErrorKind};
use crate::llm::LlmError;

/// Cost budgets are counted in millionths of a dollar (the events' whole numbers).
const MICRODOLLARS: f64 = 1_000_000.0;

/// Why a run did not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Ctrl-C (or the embedding program) cancelled the run.
    #[error("interrupted")]
    Cancelled,
    /// The model call failed (its message includes the client error's, so the client
    /// error is not also reported as the cause).
    #[error("iteration {iteration}: {error}")]
    Model {
        /// 1-based iteration.
        iteration: u32,
        /// The client error.
        error: LlmError,
    },
    /// The request did not fit the context window and no trim could make it (the task or
    /// its attachments alone are too large, or the server's window is smaller than assumed).
    #[error(
        "iteration {iteration}: the request does not fit the model's context window and no more can be trimmed ({overflow}); set context_window (config.json or ODEK_CONTEXT_WINDOW) to the context size the server serves, or give the model a larger context"
    )]
    ContextOverflow {
        /// 1-based iteration.
        iteration: u32,
        /// What the server said.
        overflow: crate::llm::Overflow,
    },
    /// A `UserPromptSubmit` hook blocked the prompt: the model was not asked.
    #[error("the prompt was blocked by a hook: {0}")]
    PromptBlocked(String),
    /// The iteration cap was reached and no summary could be made.
    #[error("reached max iterations ({0}) without final answer")]
    MaxIterations(u32),
    /// An execution budget ran out.
    #[error("execution budget exceeded: {}", budget_text(limit, *observed, *max))]
    Budget {
        /// Which limit (`runtime`, `tool_calls`, `input_tokens`, `output_tokens`,
        /// `cost_microusd` — millionths of a dollar).
        limit: &'static str,
        /// The value reached.
        observed: u64,
        /// The limit.
        max: u64,
    },
}

/// A budget's figures as people read them: dollars for the cost, else the numbers.
fn budget_text(limit: &str, observed: u64, max: u64) -> String {
    if limit == "cost_microusd" {
        let dollars = |v: u64| crate::llm::pricing::dollars(v as f64 / MICRODOLLARS);
        return format!("cost {} (limit {})", dollars(observed), dollars(max));
    }
    format!("{limit} observed {observed} (limit {max})")
}

/// A run's end decides the command line's exit: interrupted (130), a budget (4), else 1.
impl Classified for RunError {
    fn kind(&self) -> ErrorKind {
        match self {
            RunError::Cancelled => ErrorKind::Interrupted,
            RunError::Budget { .. } => ErrorKind::Budget,
            RunError::Model { error, .. } => error.kind(),
            RunError::ContextOverflow { .. }
            | RunError::MaxIterations(_)
            | RunError::PromptBlocked(_) => ErrorKind::Config,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            RunError::Model { error, .. } => error.hint(),
            RunError::MaxIterations(_) => {
                Some("raise max_iterations (--max-iter N), or give a smaller task")
            }
            RunError::PromptBlocked(_) => Some(
                "odek hooks list shows the hooks; odek hooks test UserPromptSubmit shows what they decide",
            ),
            RunError::Budget { .. } => {
                Some("raise the limit that ran out: its --max-… flag, or limits.* in config.json")
            }
            RunError::Cancelled | RunError::ContextOverflow { .. } => None,
        }
    }
}

impl RunError {
    /// The `error_class` of the event stream.
    pub fn error_class(&self) -> &'static str {
        match self {
            RunError::Cancelled => "context_canceled",
            RunError::Model { error, .. } => error.error_class(),
            RunError::ContextOverflow { .. } => "provider_request",
            RunError::MaxIterations(_) => "error",
            RunError::PromptBlocked(_) => "hook_blocked",
            RunError::Budget { .. } => "execution_budget",
        }
    }
}
