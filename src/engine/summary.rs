//! The closing summary made when a limit ends a run before the answer — the iteration cap
//! or an execution budget: one tool-less side call over the tail of the transcript, and the
//! plan's open steps after it.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::RunError;
use super::parts::{Engine, RunState};
use crate::llm::{ChatRequest, Message, Role};
use crate::plan::PlanState;

/// Messages of the tail the summariser sees.
const TAIL_MESSAGES: usize = 30;
/// Bytes kept of each of them.
const SNIPPET_BYTES: usize = 2000;
/// The side call may take this long.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(60);
/// How far past a runtime budget the side call may go (the report is worth a little time).
const SUMMARY_GRACE_AFTER_RUNTIME: Duration = Duration::from_secs(15);
/// Marker that starts the closing summary at the iteration cap.
pub const PARTIAL_SUMMARY_MARKER: &str = "[Iteration budget reached — partial summary]";
/// Marker of the closing summary of the runtime budget.
pub const TIME_SUMMARY_MARKER: &str = "[Time budget reached — partial summary]";
/// Marker of the closing summary of the tool-call and token budgets.
pub const BUDGET_SUMMARY_MARKER: &str = "[Execution budget reached — partial summary]";
/// Said in place of the model's report when the side call failed.
pub const NO_REPORT: &str = "(No report: the model could not be asked for a summary.)";
/// Untrusted source of the remaining-steps block (step titles and notes are model-written).
pub const PLAN_REMAINING_SOURCE: &str = "plan_remaining";

const SUMMARY_INSTRUCTIONS: &str = "You are summarising an agent run that stopped because it reached a limit (iterations, time, tool calls or tokens) before finishing. From the transcript excerpt below, write a short report for the user: what the task was, what was done (files changed, commands run, findings), what remains unfinished, and the next concrete steps. Do not call tools. Be factual; do not claim work that the excerpt does not show.";

/// Which limit ended the run.
#[derive(Debug, Clone, Copy)]
pub(super) enum Limit {
    /// `max_iterations`.
    Iterations,
    /// An execution budget (`runtime`, `tool_calls`, `input_tokens`, `output_tokens`).
    Budget(&'static str),
}

impl Limit {
    /// The limit behind `error`, when a limit ended the run.
    pub(super) fn of(error: &RunError) -> Option<Limit> {
        match error {
            RunError::MaxIterations(_) => Some(Limit::Iterations),
            RunError::Budget { limit, .. } => Some(Limit::Budget(limit)),
            _ => None,
        }
    }

    fn marker(self) -> &'static str {
        match self {
            Limit::Iterations => PARTIAL_SUMMARY_MARKER,
            Limit::Budget("runtime") => TIME_SUMMARY_MARKER,
            Limit::Budget(_) => BUDGET_SUMMARY_MARKER,
        }
    }
}

/// What a limit left: the text, and whether the model's report is in it.
pub(super) struct ClosingSummary {
    /// Marker, report (or [`NO_REPORT`]) and the remaining-steps block.
    pub text: String,
    /// True when the model made the report.
    pub reported: bool,
}

impl Engine {
    /// The closing summary: the marker, the model's report and, when the plan has steps
    /// that are not done, the remaining-steps block (made locally, so it is there even
    /// when the model could not report). `Ok(None)` when there is neither a report nor an
    /// open step; `Err(Cancelled)` on Ctrl-C.
    pub(super) async fn closing_summary(
        &self,
        state: &mut RunState,
        limit: Limit,
        cancel: &CancellationToken,
    ) -> Result<Option<ClosingSummary>, RunError> {
        let report = self.side_summary(state, cancel).await?;
        let block = self
            .plan
            .as_ref()
            .and_then(|p| remaining_block(&p.snapshot()));
        if report.is_none() && block.is_none() {
            return Ok(None);
        }
        let reported = report.is_some();
        let mut text = format!(
            "{}\n\n{}",
            limit.marker(),
            report.as_deref().unwrap_or(NO_REPORT)
        );
        if let Some(block) = block {
            text.push_str("\n\n");
            text.push_str(&block);
        }
        Ok(Some(ClosingSummary { text, reported }))
    }

    /// How long the side call may take: [`SUMMARY_TIMEOUT`], within
    /// [`SUMMARY_GRACE_AFTER_RUNTIME`] of the end of a runtime budget.
    fn summary_timeout(&self, state: &RunState) -> Duration {
        match self.deadline(state.started) {
            None => SUMMARY_TIMEOUT,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                SUMMARY_TIMEOUT.min(left + SUMMARY_GRACE_AFTER_RUNTIME)
            }
        }
    }

    async fn side_summary(
        &self,
        state: &mut RunState,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, RunError> {
        let messages = vec![
            Message::system(SUMMARY_INSTRUCTIONS),
            Message::user(transcript_excerpt(state.ctx.messages())),
        ];
        let request = ChatRequest {
            messages: (&messages).into(),
            tools: &[],
            stream: false,
            max_tokens: Some(1024),
            on_retry: None,
        };
        let timeout = self.summary_timeout(state);
        let call = tokio::time::timeout(timeout, self.model.complete(&request, None));
        let response = tokio::select! {
            r = call => r,
            _ = cancel.cancelled() => return Err(RunError::Cancelled),
        };
        match response {
            Ok(Ok(r)) => {
                self.charge(state, &r.usage);
                let report = r.message.content.trim();
                Ok((!report.is_empty()).then(|| report.to_string()))
            }
            Ok(Err(e)) => {
                tracing::warn!("closing summary failed: {e}");
                Ok(None)
            }
            Err(_) => {
                tracing::warn!("closing summary timed out after {timeout:?}");
                Ok(None)
            }
        }
    }
}

/// The plan's steps that are not done, as a block for the closing summary: a header with
/// counts only, then the step lines inside the untrusted wrapper. `None` when every step
/// is done or there is no plan.
pub fn remaining_block(plan: &PlanState) -> Option<String> {
    let open: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.status != crate::plan::StepStatus::Done)
        .map(crate::plan::step_line)
        .collect();
    if open.is_empty() {
        return None;
    }
    let c = plan.counts();
    Some(format!(
        "Remaining plan steps (v{}: {} of {} not done — {} in progress, {} pending, {} blocked):\n{}",
        plan.version,
        open.len(),
        plan.steps.len(),
        c.in_progress,
        c.pending,
        c.blocked,
        crate::untrusted::wrap(PLAN_REMAINING_SOURCE, &open.join("\n"))
    ))
}

/// The last [`TAIL_MESSAGES`] non-system messages as `role: text` lines, each shortened.
fn transcript_excerpt(messages: &[Message]) -> String {
    let tail: Vec<&Message> = messages
        .iter()
        .filter(|m| m.role != Role::System)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .take(TAIL_MESSAGES)
        .collect();
    let mut out = String::from("Transcript excerpt (oldest first):\n\n");
    for m in tail.into_iter().rev() {
        out.push_str(&super::output::excerpt_line(m, SNIPPET_BYTES));
        out.push_str("\n\n");
    }
    out
}
