//! Sub-agents: a task split off by `delegate_tasks` runs as its own process, `odek subagent
//! --task FILE`, with a fresh context, a capped policy and the sandbox, and answers with one
//! JSON envelope on stdout.
//!
//! The lines between them — the task file, the envelope, the exit codes, the
//! questions of a trusted child — are defined in `protocol::subagent`; this module holds
//! reading the task file ([`read_task_file`]), the child's policy ([`child_policy`]) and the
//! parent's side, the `delegate_tasks` tool. The child's side is the
//! command `odek subagent` (`cli/subagent_child.rs`), a runner like any surface. The child
//! is at depth 1: it never gets `delegate_tasks`.

mod agent;
pub mod ask;
mod budget;
mod policy;
mod settings;
mod task;
mod tool;

pub use crate::protocol::subagent::{
    EXIT_CONTRACT, EXIT_DONE, EXIT_TIMEOUT, Envelope, EnvelopeStatus, SUMMARY_CHARS, TaskFile,
    TaskTools, Trust,
};
pub use agent::{AgentUseError, DelegateAgents, session_layer};
pub use policy::child_policy;
pub use settings::{TASK_VAR, task_layer};
pub use task::{TaskError, read_task_file};
pub use tool::{DelegateSettings, DelegateTasksTool, MAX_TASKS, clean_task_files, task_dir};

/// The environment variable naming the inherited descriptor the API key is read from
/// (never the key itself: a child's environment and command line hold no secret).
pub const KEY_FD_VAR: &str = "ODEK_API_KEY_FD";

/// `origin` of the sessions of sub-agents (hidden by `odek session list` unless `--all`).
pub const ORIGIN_SUBAGENT: &str = "subagent";

/// What the system prompt adds to the seed's plan sentence when the model may delegate
/// (the seed's supported pattern: sub-agents get no plan state).
pub const PLAN_DELEGATION_SENTENCE: &str = "Before delegate_tasks, mark the step in_progress and pass its id, title and constraints in the task's context (sub-agents do not see the plan); judge each result against the step.";

/// Source label of the untrusted wrapper around an untrusted task's context and guidance.
pub const DELEGATE_SOURCE: &str = "delegate";
