//! The one JSON object a child writes last on stdout, and its exit codes.

use serde::{Deserialize, Serialize};

/// The envelope was written; its status says how the task went.
pub const EXIT_DONE: u8 = 0;
/// The child's time limit ended the run.
pub const EXIT_TIMEOUT: u8 = 2;
/// A contract error: the task file or the configuration could not be used.
pub const EXIT_CONTRACT: u8 = 3;
/// Longest summary, in characters.
pub const SUMMARY_CHARS: usize = 500;

/// How a task went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeStatus {
    /// An answer.
    Ok,
    /// No answer: the run failed, or the task could not start.
    Error,
    /// The time limit ended it.
    Timeout,
    /// It was cancelled.
    Cancelled,
}

impl EnvelopeStatus {
    /// The status as the envelope spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EnvelopeStatus::Ok => "ok",
            EnvelopeStatus::Error => "error",
            EnvelopeStatus::Timeout => "timeout",
            EnvelopeStatus::Cancelled => "cancelled",
        }
    }
}

/// What a child answers (redacted before it is written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// How it went.
    pub status: EnvelopeStatus,
    /// The answer's first 500 characters.
    pub summary: String,
    /// The whole answer.
    pub answer: String,
    /// Files the child's file tools changed, in the order first changed.
    pub files_changed: Vec<String>,
    /// Model calls.
    pub iterations: u32,
    /// Tool calls.
    pub tool_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// The child's session.
    pub session_id: String,
    /// Why there is no answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Envelope {
    /// The envelope of a task that could not start.
    pub fn contract_error(error: &str) -> Envelope {
        Envelope {
            status: EnvelopeStatus::Error,
            summary: String::new(),
            answer: String::new(),
            files_changed: Vec::new(),
            iterations: 0,
            tool_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            session_id: String::new(),
            error: Some(error.to_string()),
        }
    }

    /// The summary of an answer: at most 500 characters (`…` included when cut).
    pub fn summary_of(answer: &str) -> String {
        crate::text::fit(answer.trim(), SUMMARY_CHARS).into_owned()
    }

    /// The exit code that goes with the envelope.
    pub fn exit_code(&self) -> u8 {
        match self.status {
            EnvelopeStatus::Timeout => EXIT_TIMEOUT,
            _ => EXIT_DONE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_word_is_the_serialised_one() {
        for status in [
            EnvelopeStatus::Ok,
            EnvelopeStatus::Error,
            EnvelopeStatus::Timeout,
            EnvelopeStatus::Cancelled,
        ] {
            let json = serde_json::to_value(status).expect("json");
            assert_eq!(json, status.as_str());
        }
    }
}
