//! The partial summary made when the iteration cap is reached: one tool-less side call over
//! the tail of the transcript.

use super::{Engine, RunError, RunState};
use crate::llm::{ChatRequest, Message, Role};

/// Messages of the tail the summariser sees.
const TAIL_MESSAGES: usize = 30;
/// Bytes kept of each of them.
const SNIPPET_BYTES: usize = 2000;
/// Marker that starts the partial answer.
pub const PARTIAL_SUMMARY_MARKER: &str = "[Iteration budget reached — partial summary]";

const SUMMARY_INSTRUCTIONS: &str = "You are summarising an agent run that stopped because it reached its iteration limit before finishing. From the transcript excerpt below, write a short report for the user: what the task was, what was done (files changed, commands run, findings), what remains unfinished, and the next concrete steps. Do not call tools. Be factual; do not claim work that the excerpt does not show.";

impl Engine {
    /// Asks the model for a summary of where the run stands; the error when that fails too.
    pub(super) async fn partial_summary(
        &self,
        state: &mut RunState,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<String, RunError> {
        let max = self.settings.max_iterations;
        let messages = vec![
            Message::system(SUMMARY_INSTRUCTIONS),
            Message::user(transcript_excerpt(state.ctx.messages())),
        ];
        let request = ChatRequest {
            messages: &messages,
            tools: &[],
            stream: false,
            max_tokens: Some(1024),
            on_retry: None,
        };
        let response = tokio::select! {
            r = self.model.complete(&request, None) => r,
            _ = cancel.cancelled() => return Err(RunError::Cancelled),
        };
        match response {
            Ok(r) if !r.message.content.trim().is_empty() => {
                state.usage.add(&r.usage);
                Ok(format!(
                    "{PARTIAL_SUMMARY_MARKER}\n\n{}",
                    r.message.content.trim()
                ))
            }
            _ => Err(RunError::MaxIterations(max)),
        }
    }
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
