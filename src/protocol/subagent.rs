//! The lines between a parent and its sub-agent (`odek subagent`, docs/SUBAGENTS.md): the
//! task file the parent writes, the envelope the child answers with and its exit codes, and
//! the request and answer lines of a trusted child that asks its parent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::danger_policy::DangerClass;

/// Largest task file read.
pub const MAX_TASK_BYTES: u64 = 1024 * 1024;

/// What a parent hands its child on the descriptor `ODEK_API_KEY_FD` names — never in the
/// child's environment, command line or task file: the key, and each provider's extra headers
/// as the parent resolved them (a header's `${VAR}` is kept from the child's environment like
/// a key's variable, so the child could not resolve it itself).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handover {
    /// The key of the child's provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Provider id → its extra headers, with their values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, BTreeMap<String, String>>,
    /// Provider id → its key: the providers of `fallback_models` other than the child's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub keys: BTreeMap<String, String>,
}

impl Handover {
    /// True when there is nothing to hand over.
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.headers.is_empty() && self.keys.is_empty()
    }

    /// What the descriptor held: this type as JSON, or a bare key (as a person or an older
    /// parent writes it).
    pub fn parse(text: &str) -> Result<Handover, serde_json::Error> {
        let text = text.trim();
        if text.starts_with('{') {
            return serde_json::from_str(text);
        }
        Ok(Handover {
            api_key: Some(text.to_string()).filter(|k| !k.is_empty()),
            headers: BTreeMap::new(),
            keys: BTreeMap::new(),
        })
    }
}

/// How far a child is trusted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    /// Its context is wrapped untrusted, it may only read and write in the working
    /// directory, it gets no MCP tools and nobody to ask (the default).
    #[default]
    Untrusted,
    /// The parent's policy; what would ask goes to the parent's approver.
    Trusted,
}

/// One delegated task, as the child reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskFile {
    /// What to achieve.
    pub goal: String,
    /// What the child should know (the plan step, constraints, file names).
    #[serde(default)]
    pub context: String,
    /// How to go about it.
    #[serde(default)]
    pub guidance: String,
    /// How far the child is trusted.
    #[serde(default)]
    pub trust_level: Trust,
    /// The riskiest class the child may run; every class ranked above is denied.
    #[serde(default)]
    pub max_risk: Option<DangerClass>,
    /// The task's place in its batch (1-based) and the batch's size, for labels.
    pub index: usize,
    /// How many tasks the batch has.
    pub total: usize,
    /// The parent's session, recorded in the child's.
    #[serde(default)]
    pub parent_session: Option<String>,
    /// Where the child's file tools record their checkpoints: the parent's session and the
    /// turn that delegated (so `odek rewind` of the parent covers the child's edits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<CheckpointOwner>,
    /// Model calls the child may make.
    pub max_iter: u32,
    /// Wall-clock limit of the child's run, in seconds.
    pub timeout_seconds: u64,
    /// The child's share of what is left of the parent's `limits.max_cost_usd` (absent: the
    /// parent has no cost budget, or no price for its model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The parent's model (its flags are not in the child's environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The parent's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The parent's provider, when it named one (the child speaks the same wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The parent's resolved `dangerous` policy (its flags included: `--allow`, `--yolo`),
    /// the base of the child's; absent = the child's own configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<crate::danger_policy::DangerPolicy>,
    /// Whether the parent's shell commands run in the sandbox (the child's do the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// The parent's tool selection (the child offers no tool the parent does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<TaskTools>,
    /// Whether the parent plans (the child gets its own `plan` tool exactly then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<bool>,
    /// A trusted child whose parent has someone to ask: what would ask goes to the parent
    /// (request lines on stdout, answers on stdin). Otherwise nobody is asked.
    #[serde(default)]
    pub ask_parent: bool,
    /// The parent ran with `no_agents` (`--no-agents`): the child reads no instruction files
    /// either. Otherwise it reads the chain of its working directory (docs/INSTRUCTIONS.md).
    #[serde(default)]
    pub no_agents: bool,
    /// The named agent the task runs as (docs/SUBAGENTS.md), for its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The named agent's prompt: the child's `system` (its identity; odek's safety rules and
    /// runtime context are still appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
}

/// The parent's tool selection, as the task file carries it (the `tools` section's shape).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTools {
    /// When non-empty, only these tools, in this order.
    pub enabled: Vec<String>,
    /// Tools never registered.
    pub disabled: Vec<String>,
}

/// A rule of the task file that a task breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskRule {
    /// No goal.
    #[error("goal is empty")]
    EmptyGoal,
    /// The index is outside the batch.
    #[error("index {index} is not within 1..={total}")]
    Index {
        /// The task's place.
        index: usize,
        /// The batch's size.
        total: usize,
    },
    /// A zero limit.
    #[error("max_iter and timeout_seconds must be at least 1")]
    ZeroLimit,
}

impl crate::error::Classified for TaskRule {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

impl TaskFile {
    /// The limits and fields every task must respect.
    pub fn check(&self) -> Result<(), TaskRule> {
        if self.goal.trim().is_empty() {
            return Err(TaskRule::EmptyGoal);
        }
        if self.index == 0 || self.index > self.total {
            return Err(TaskRule::Index {
                index: self.index,
                total: self.total,
            });
        }
        if self.max_iter == 0 || self.timeout_seconds == 0 {
            return Err(TaskRule::ZeroLimit);
        }
        Ok(())
    }

    /// The task's label in prompts and lines: `sub-agent 2/3`, or `sub-agent 2/3 (reviewer)`
    /// for a task run as a named agent.
    pub fn label(&self) -> String {
        match &self.agent {
            Some(name) => format!("sub-agent {}/{} ({name})", self.index, self.total),
            None => format!("sub-agent {}/{}", self.index, self.total),
        }
    }
}

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

/// The session and turn checkpoints are recorded for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointOwner {
    /// The session.
    pub session: String,
    /// Its turn, from 1.
    pub turn: u32,
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
    /// Prompt tokens served from the provider's cache (in `input_tokens`); the parent prices
    /// them as cached.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache (in `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
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
            cache_read_tokens: 0,
            cache_write_tokens: 0,
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A request line: `{"odek_subagent_request": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestLine {
    /// The request.
    pub odek_subagent_request: Request,
}

/// What the child asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Its id within the child (the answer carries it back).
    pub id: u64,
    /// An approval or a question.
    #[serde(flatten)]
    pub ask: Ask,
}

/// An approval of calls, or a `clarify` question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ask {
    /// Calls that need approval.
    Approval {
        /// The calls.
        items: Vec<AskedItem>,
    },
    /// A question.
    Question {
        /// The question.
        question: String,
        /// Its options.
        options: Vec<String>,
    },
}

/// One call of an approval, as it crosses the pipe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedItem {
    /// Tool name.
    pub tool: String,
    /// What it acts on.
    pub resource: String,
    /// Its class.
    pub class: DangerClass,
    /// Why.
    pub reason: String,
    /// What trusting it trusts, when narrower than its class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The parent's answer line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerLine {
    /// The request answered.
    pub id: u64,
    /// `approve`, `deny`, `trust`, `cancelled`, `expired`, `no_user`, or `answered`.
    pub answer: String,
    /// The user's words, for an answered question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
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
