//! What a run starts from ([`Conversation`]) and how it ended ([`RunOutcome`]: the answer or
//! its error, the plan's counts and telemetry, usage, how the answer was cut).

use std::time::Duration;

use super::error::RunError;
use crate::llm::{Message, Usage};
use crate::plan::{PlanActivity, PlanState};

/// What a run starts from.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// System prompt, history and the new input.
    pub messages: Vec<Message>,
    /// How many of `messages` are saved already; the rest is saved when the run starts.
    pub saved_len: usize,
    /// The plan's structured state saved with the conversation; `None` = rebuild the plan
    /// from the newest plan message that parses (transcripts of the Go original).
    pub saved_plan: Option<PlanState>,
    /// `startup` or `resume` when this run starts the session in this process (the
    /// `SessionStart` hooks run), else `None`.
    pub session_start: Option<&'static str>,
}

impl Conversation {
    /// A conversation of which nothing is saved yet and no plan state is known.
    pub fn new(messages: Vec<Message>) -> Self {
        Conversation {
            messages,
            saved_len: 0,
            saved_plan: None,
            session_start: Some("startup"),
        }
    }
}

/// The plan's step counts when a limit ended the run (`data.remaining` of the terminal
/// event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RemainingSteps {
    /// Steps in the plan.
    pub steps: usize,
    /// Steps not started.
    pub pending: usize,
    /// Steps in progress.
    pub in_progress: usize,
    /// Blocked steps.
    pub blocked: usize,
}

impl RemainingSteps {
    pub(super) fn of(plan: &PlanState) -> Self {
        let c = plan.counts();
        RemainingSteps {
            steps: plan.steps.len(),
            pending: c.pending,
            in_progress: c.in_progress,
            blocked: c.blocked,
        }
    }
}

/// What a run did with its plan: the store's activity, the final step counts and the bytes
/// of plan message sent to the model (saved with the session, rolled up by `odek usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanTelemetry {
    /// Creates, updates, blocked transitions and streaks.
    pub activity: PlanActivity,
    /// Steps done at the end of the run.
    pub steps_done: u64,
    /// Steps in the plan at the end of the run.
    pub steps_total: u64,
    /// Bytes of plan message carried by the run's requests.
    pub plan_bytes_sent: u64,
}

/// How a run ended, with everything the caller needs to save and report it.
#[derive(Debug)]
pub struct RunOutcome {
    /// The final transcript (what was saved).
    pub messages: Vec<Message>,
    /// The plan's final state (`None` when planning is off).
    pub plan: Option<PlanState>,
    /// The answer, or why there is none.
    pub result: Result<String, RunError>,
    /// True when the answer is the partial summary made at the iteration cap.
    pub partial: bool,
    /// The closing summary when a limit ended the run without an answer (`result` is the
    /// error; the summary is the transcript's last message): a budget, or the iteration cap
    /// when the model could not report but the plan has open steps.
    pub summary: Option<String>,
    /// Tokens used by the run.
    pub usage: Usage,
    /// What they cost in US dollars, when the model's price is known.
    pub cost_usd: Option<f64>,
    /// Iterations made.
    pub iterations: u32,
    /// Tool calls made.
    pub tool_calls: u64,
    /// What the run did with its plan (`None` when planning is off).
    pub plan_telemetry: Option<PlanTelemetry>,
    /// Wall time.
    pub duration: Duration,
    /// Why the model stopped writing the final answer, when not of its own accord.
    pub answer_cut: Option<AnswerCut>,
}

/// A final answer the model did not end itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerCut {
    /// The output-token limit (`finish_reason: "length"`): the answer is cut short.
    Length,
    /// The provider's filter or the model's refusal (`finish_reason: "content_filter"`).
    Refusal,
}

impl AnswerCut {
    /// The cut a final answer's `finish_reason` says, if any.
    pub(super) fn of(finish_reason: Option<&str>) -> Option<AnswerCut> {
        match finish_reason? {
            "length" => Some(AnswerCut::Length),
            "content_filter" => Some(AnswerCut::Refusal),
            _ => None,
        }
    }
}
