//! Hooks: the user's own programs run at fixed points of a session, in Claude Code's
//! protocol, so that a team's existing scripts run unchanged (see docs/HOOKS.md).
//!
//! - The configuration is Claude Code's shape: per event, a list of
//!   `{"matcher": "<regex over the tool name>", "hooks": [{"type": "command", "command":
//!   "…", "timeout": 60}]}`.
//! - A hook reads one JSON object on standard input (`session_id`, `transcript_path`,
//!   `cwd`, `hook_event_name`, and for tool events `tool_name` — Claude Code's name when the
//!   tool has one — `odek_tool_name`, `tool_input`, `tool_response`).
//! - Exit 0 goes on (standard output may hold a JSON decision); exit 2 blocks, standard
//!   error being the reason the model reads. odek's departure: a `PreToolUse` hook that
//!   fails any other way (exit 1, a signal, past its timeout, invalid JSON) blocks the call
//!   too, unless `hooks.fail_open`.
//!
//! This module parses, matches, runs and reads hooks; it knows nothing of the loop that
//! calls it.

mod hook;
mod protocol;
mod run;

#[cfg(test)]
mod tests;

pub use hook::{Hook, compile};
pub use protocol::{
    Decision, Outcome, claude_name, hook_tool_name, tool_input_for_hook, tool_input_from_hook,
    tool_inputs_for_hook,
};
pub use run::{HookReport, HookRun};

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A hook's timeout when its entry names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The points a hook runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEvent {
    /// Before a tool call (may block it, rewrite its input, or ask).
    PreToolUse,
    /// After a tool call (may add context for the model, or tell it why the result is
    /// refused).
    PostToolUse,
    /// When a prompt is submitted (may block it, or add context).
    UserPromptSubmit,
    /// When the model gives its final answer (may send it back to work, with a reason).
    Stop,
    /// When a session starts or resumes (may add context).
    SessionStart,
    /// When a session's surface lets it go.
    SessionEnd,
    /// When an approval or a `clarify` question waits for the user.
    Notification,
}

impl HookEvent {
    /// Every event, in the order of the documentation.
    pub const ALL: [HookEvent; 7] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// Its name, as in the configuration and `hook_event_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Option<HookEvent> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the event is about a tool (its matcher applies).
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse)
    }
}

/// One `{"matcher", "hooks"}` entry of an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatcherEntry {
    /// A regular expression over the tool name (odek's or Claude Code's); empty or `*`:
    /// every tool. Ignored by the events that are not about a tool.
    #[serde(default)]
    pub matcher: String,
    /// The commands, run one after another.
    pub hooks: Vec<HookCommand>,
}

/// One command of an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// Always `command`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Run by `sh -c` in the session's working directory.
    pub command: String,
    /// Seconds before it is killed with its process group (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// Per event name, its entries.
pub type HooksConfig = BTreeMap<String, Vec<MatcherEntry>>;

/// The `hooks` section: Claude Code's per-event lists, and odek's two options beside them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HooksSettings {
    /// A `PreToolUse` hook that fails (not exit 0 or 2) lets the call through, as in Claude
    /// Code; odek's default blocks it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fail_open: bool,
    /// A project's `.claude/settings.json` hooks count as its hooks file (once trusted).
    #[serde(default, skip_serializing_if = "is_false")]
    pub import_claude: bool,
    /// The events' entries.
    #[serde(flatten)]
    pub events: HooksConfig,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Why a hooks configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HooksError {
    /// An event odek does not know.
    #[error(
        "hooks: unknown event {0:?} (known: PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart, SessionEnd, Notification)"
    )]
    UnknownEvent(String),
    /// A matcher that is not a regular expression.
    #[error("hooks.{event}: matcher {matcher:?} is not a regular expression: {reason}")]
    BadMatcher {
        /// The event.
        event: String,
        /// The matcher.
        matcher: String,
        /// Why.
        reason: String,
    },
    /// A hook of another type than `command`, or without a command.
    #[error("hooks.{event}: {reason}")]
    BadCommand {
        /// The event.
        event: String,
        /// Why.
        reason: String,
    },
}

impl crate::error::Classified for HooksError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "see docs/HOOKS.md for the events, matchers and hooks odek runs; `odek hooks list` shows what it read",
        )
    }
}
