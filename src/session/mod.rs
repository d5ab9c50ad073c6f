//! Sessions: JSON transcripts on disk under `<home>/sessions/`.
//!
//! One file `<id>.json` per conversation plus `index.json`, an array of [`SessionSummary`]
//! that keeps `list` fast however many sessions exist. Every write goes through a temp file
//! in the same directory, `fsync`, rename and a directory `fsync`, so a crash leaves either
//! the old or the new file and never a torn one. Secrets are redacted in the written copy
//! only (content, reasoning, tool-call arguments, task). Index updates are serialised across
//! processes by an exclusive `flock` on `<sessions>/.index.lock`.

pub mod audit;
mod error;
mod files;
mod fork;
pub(crate) use files::DirLock;
mod id;
mod index;
mod journal;
mod lock;
mod redaction;
mod store;
mod trim;
mod writer;

pub use error::SessionError;
pub use fork::Forked;
pub use id::{MAX_ID_LEN, is_standard_id, new_session_id, validate_id};
pub use lock::{Holder, SessionLock};
pub use store::{RunRecords, SessionStore};
pub use trim::trim_transcript;
pub use writer::SessionWriter;

use serde::{Deserialize, Serialize};

use crate::llm::{Message, Role};
use crate::plan::PlanState;

/// Where a session was started: `origin` of sessions made by the command line.
pub const ORIGIN_CLI: &str = "cli";

/// `origin` of sessions made by `odek serve`.
pub const ORIGIN_SERVE: &str = "serve";

/// `origin` of sessions made by `odek telegram`.
pub const ORIGIN_TELEGRAM: &str = "telegram";
/// `origin` of a scheduled job's run (`odek schedule`).
pub const ORIGIN_SCHEDULE: &str = "schedule";

/// Largest session file that is written or loaded (32 MiB).
pub const MAX_SESSION_BYTES: u64 = 32 * 1024 * 1024;

/// Longest index title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// One saved conversation, exactly as stored in `<id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// `YYYYMMDD-<32 hex>`; also the file stem.
    pub id: String,
    /// When the session was created (RFC 3339 UTC, millisecond precision).
    pub created_at: String,
    /// When the session was last saved (RFC 3339 UTC, millisecond precision).
    pub updated_at: String,
    /// Model the session talks to (`continue` keeps it).
    #[serde(default)]
    pub model: String,
    /// Endpoint the session was made with (`continue` keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The provider the session was made with, when one was named (`continue` keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Where it was started: `cli`, `serve` or `telegram` (absent in files of the Go
    /// original and of earlier versions, which count as `cli`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Number of user messages; recounted on every save.
    #[serde(default)]
    pub turns: u32,
    /// The first user message, or a label such as `interactive session`.
    #[serde(default)]
    pub task: String,
    /// A name the user gave the session (`POST /api/sessions/{id}`); listed instead of the
    /// task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The transcript, in the chat-completions wire format.
    pub messages: Vec<Message>,
    /// Prompt tokens used over the session's life.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens used over the session's life.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens the provider served from its prompt cache over the session's life
    /// (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// One record per run (turn): what it cost and what it did with its plan, for
    /// `odek usage`. Absent in files of the Go original and of earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunRecord>,
    /// The plan's structured state (redacted like the messages), so a plan whose render
    /// overflowed `max_render_chars` still resumes exactly. Absent in files of the Go
    /// original: those resume from the newest plan message that parses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanState>,
    /// How many journal lines this file holds, folded in (see `journal.rs`); 0 for a file
    /// that was never journaled.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub revision: u64,
    /// Whether shell commands ran in the sandbox; `continue` keeps a sandboxed session
    /// sandboxed (the Go original writes it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
    /// What allowed every class but `blocked` without asking (`--yolo`,
    /// `ODEK_DANGEROUS_ACTION=allow`), when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dangerous_override: Option<String>,
    /// For a sub-agent's session (`origin: "subagent"`): the session that delegated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// For a scheduled run's session (`origin: "schedule"`): the job's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The plan as each turn left it, recorded when it changed (so a fork at a turn takes
    /// the plan of then). Absent in files of the Go original and of earlier versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_plans: Vec<TurnPlan>,
    /// For a fork (`odek session fork`, `rewind --conversation`): where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
}

/// The plan as a turn left it (`None`: no plan).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnPlan {
    /// The turn, from 1.
    pub turn: u32,
    /// The plan when it ended.
    pub plan: Option<PlanState>,
}

/// The session and turn a fork was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The session forked.
    pub session: String,
    /// The turns it kept (the fork continues after this one).
    pub turn: u32,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One run (turn) of a session: when it ended, which model answered, what it cost, and
/// what it did with its plan. Numbers and the model's name only — no text of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRecord {
    /// When the run ended (RFC 3339 UTC, millisecond precision).
    pub at: String,
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    /// Model calls of the loop.
    pub iterations: u32,
    /// Tool calls.
    pub tool_calls: u64,
    /// Plans created (`create` calls).
    pub plans_created: u64,
    /// Other version-bumping plan changes.
    pub plans_updated: u64,
    /// Transitions of a step to `blocked`.
    pub plans_blocked: u64,
    /// Times the blocked-step streak fired (`plan_blocked` events).
    pub blocked_streaks: u64,
    /// Steps done when the run ended.
    pub steps_done: u64,
    /// Steps in the plan when the run ended.
    pub steps_total: u64,
    /// Bytes of plan message sent to the model by the run's requests.
    pub plan_bytes: u64,
    /// What the run cost in millionths of a US dollar, when its model's price was known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_microusd: Option<u64>,
    /// Completion tokens spent reasoning (in `output_tokens`), when the provider said.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// The model that answered, as its provider names it (absent in runs saved before
    /// models were recorded: `odek usage` counts the session's model then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A compaction's record (`/compact`, `odek session compact`): the summary request's
    /// tokens and cost, not a turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compaction: bool,
}

impl Session {
    /// The index entry describing this session.
    pub fn summary(&self) -> SessionSummary {
        SessionSummary {
            id: self.id.clone(),
            title: shorten_title(self.name.as_deref().unwrap_or(&self.task)),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            turns: self.turns,
            model: self.model.clone(),
            origin: self.origin.clone(),
        }
    }

    /// A copy of everything but the transcript, the run records and the plan (cheap however
    /// long the history).
    pub fn metadata(&self) -> Session {
        Session {
            id: self.id.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            provider: self.provider.clone(),
            origin: self.origin.clone(),
            turns: self.turns,
            task: self.task.clone(),
            name: self.name.clone(),
            messages: Vec::new(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cached_tokens: self.cached_tokens,
            runs: Vec::new(),
            plan: None,
            revision: self.revision,
            sandbox: self.sandbox,
            dangerous_override: self.dangerous_override.clone(),
            parent_session: self.parent_session.clone(),
            schedule: self.schedule.clone(),
            turn_plans: Vec::new(),
            forked_from: self.forked_from.clone(),
        }
    }

    /// The session's current plan, for the surfaces that show it (REST, Telegram): the
    /// saved structured state when there is one, else the newest plan message that parses
    /// (against the absolute cap of 50 steps). Never changes the session.
    pub fn current_plan(&self) -> Option<PlanState> {
        match &self.plan {
            Some(state) if state.version > 0 => Some(state.clone()),
            _ => crate::plan::extract_plan(
                self.messages
                    .iter()
                    .map(|m| (m.role.as_str(), m.content.as_str())),
            ),
        }
    }

    /// True when the session was started by the command line (or its origin is unknown, as
    /// in files of the Go original).
    pub fn is_cli(&self) -> bool {
        self.origin.as_deref().is_none_or(|o| o == ORIGIN_CLI)
    }
}

/// One `index.json` entry: enough to list sessions without opening their files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// The task, shortened to at most 200 characters (redacted like the file).
    #[serde(default)]
    pub title: String,
    /// Creation time (RFC 3339 UTC).
    #[serde(default)]
    pub created_at: String,
    /// Last save time (RFC 3339 UTC).
    #[serde(default)]
    pub updated_at: String,
    /// Number of user messages.
    #[serde(default)]
    pub turns: u32,
    /// Model of the session (empty in indexes written by the Go original).
    #[serde(default)]
    pub model: String,
    /// Where the session was started (`cli`, `serve`, `telegram`; absent = `cli`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

impl SessionSummary {
    /// True when the session was started by the command line (or its origin is unknown).
    pub fn is_cli(&self) -> bool {
        self.origin.as_deref().is_none_or(|o| o == ORIGIN_CLI)
    }
}

/// The result of [`SessionStore::list`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionList {
    /// Sessions, most recently updated first: shared with the store's copy of the index it
    /// came from, so listing again (serve answers many lists) copies nothing.
    pub sessions: std::sync::Arc<[SessionSummary]>,
    /// One line per file that could not be used (corrupt, unreadable, oversized), naming it.
    pub problems: Vec<String>,
}

/// The most recent sessions and how many exist ([`SessionStore::list_recent`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionPage {
    /// Up to the requested number of sessions, most recently updated first.
    pub sessions: Vec<SessionSummary>,
    /// How many sessions there are in all.
    pub total: usize,
    /// One line per file that could not be used, naming it.
    pub problems: Vec<String>,
}

/// Message counts around [`SessionStore::trim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimOutcome {
    /// Messages before trimming.
    pub before: usize,
    /// Messages after trimming (may be a little under the request, to keep groups whole).
    pub after: usize,
}

/// What [`SessionStore::save`] did beyond writing the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaveReport {
    /// Size of the written file in bytes.
    pub bytes_written: u64,
    /// Messages dropped (oldest groups first) to keep the file under [`MAX_SESSION_BYTES`];
    /// they were dropped from the in-memory session too, so memory and disk agree.
    pub trimmed_messages: usize,
    /// Ready-to-print lines for the user (size trimming, an index that could not be updated).
    pub warnings: Vec<String>,
}

/// What opens a user message sent while a turn ran (a steer, docs/STEERING.md): it belongs to
/// that turn and starts none. Byte-stable: saved steers read the same on every request.
pub const STEER_NOTE: &str = "[Sent by the user while you were working on this turn]\n";

/// Number of user messages in a transcript that start a turn (a session's `turns`): every
/// one but the steers.
pub fn count_turns(messages: &[Message]) -> u32 {
    let users = messages
        .iter()
        .filter(|m| m.role == Role::User && !m.content.starts_with(STEER_NOTE))
        .count();
    u32::try_from(users).unwrap_or(u32::MAX)
}

/// `text` in at most [`MAX_TITLE_CHARS`] characters, ending in `…` when cut.
fn shorten_title(text: &str) -> String {
    crate::text::fit(text, MAX_TITLE_CHARS).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_count_user_messages() {
        let messages = vec![
            Message::system("s"),
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        assert_eq!(count_turns(&messages), 2);
        assert_eq!(count_turns(&[]), 0);
    }

    #[test]
    fn titles_are_shortened_to_200_characters() {
        assert_eq!(shorten_title("short"), "short");
        let exact = "é".repeat(MAX_TITLE_CHARS);
        assert_eq!(shorten_title(&exact), exact);
        let long = shorten_title(&"é".repeat(MAX_TITLE_CHARS + 1));
        assert_eq!(long.chars().count(), MAX_TITLE_CHARS);
        assert!(long.ends_with('…'));
    }
}
