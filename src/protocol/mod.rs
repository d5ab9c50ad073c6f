//! The one definition of what odek says to the outside: every `odek.event/v1` event and
//! browser frame ([`Event`], one variant each, with its typed payload), the bodies of
//! `odek serve`'s responses ([`api`]) and the lines between a parent and its sub-agents
//! ([`subagent`]).
//!
//! The wire format of events is the envelope of `docs/EVENTS.md` — `schema`, `type`,
//! `run_id`, `session_id`, `iteration`, `tool`, `timestamp`, `data`, in that order — with the
//! variant's name as `type` and its payload as `data` (fields in declaration order, absent
//! options left out). Browser frames (`answer_delta`, `approval_requested`,
//! `approval_resolved`) go only to `odek serve`'s live stream, as their payload alone.
//!
//! This module knows nothing of sinks, transports or who emits what.

pub mod api;
pub mod subagent;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The schema tag of every event line.
pub const SCHEMA: &str = "odek.event/v1";

/// Every event and browser frame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Event {
    /// A run began.
    RunStarted(RunStarted),
    /// An iteration (one model call and its tools) ended.
    IterationCompleted(IterationCompleted),
    /// A tool call is about to run.
    ToolCallStarted(ToolCallStarted),
    /// A tool call succeeded.
    ToolCallCompleted(ToolCallCompleted),
    /// A tool call failed.
    ToolCallFailed(ToolCallFailed),
    /// The session was saved.
    SessionSaved(SessionSaved),
    /// The context was trimmed.
    ContextTrimmed(ContextTrimmed),
    /// An execution budget ran out.
    BudgetExceeded(BudgetExceeded),
    /// A plan was created (or replaced).
    PlanCreated(PlanCreated),
    /// A plan changed.
    PlanUpdated(PlanUpdated),
    /// The blocked-step streak fired.
    PlanBlocked(PlanBlocked),
    /// A sub-agent of `delegate_tasks` started.
    SubagentStarted(SubagentStarted),
    /// A sub-agent ended.
    SubagentFinished(SubagentFinished),
    /// A tool call's checkpoint was recorded (paths only, never contents).
    Checkpoint(CheckpointTaken),
    /// A session's files were rewound to before a checkpoint.
    Rewound(Rewound),
    /// A hook of the user's ran (its command and decision, never its output).
    Hook(HookRan),
    /// A background job ended.
    BackgroundFinished(BackgroundFinished),
    /// A model's retries were spent: the turn goes on with the next of `fallback_models`.
    ModelFallback(ModelFallback),
    /// A message the user sent while the turn ran was given to it (steering).
    UserSteer(UserSteer),
    /// A summary of the conversation is being asked for.
    CompactionStarted(CompactionStarted),
    /// The conversation was compacted.
    Compacted(Compacted),
    /// Terminal: the run produced an answer.
    RunCompleted(RunCompleted),
    /// Terminal: the run failed.
    RunFailed(RunFailed),
    /// Browser frame: streamed answer text.
    AnswerDelta(AnswerDelta),
    /// Browser frame: a run waits for an approval.
    ApprovalRequested(ApprovalRequested),
    /// Browser frame: an approval was closed.
    ApprovalResolved(ApprovalResolved),
    /// Browser frame: the model asks the user a question (`clarify`).
    ClarifyRequested(ClarifyRequested),
    /// Browser frame: a question was answered, expired or cancelled.
    ClarifyResolved(ClarifyResolved),
}

/// Every `type`, in the order of [`Event`]'s variants (the web UI subscribes to exactly
/// these; a test holds `ui/js/stream.js` and `docs/EVENTS.md` to this list).
pub const EVENT_TYPES: [&str; 28] = [
    "run_started",
    "iteration_completed",
    "tool_call_started",
    "tool_call_completed",
    "tool_call_failed",
    "session_saved",
    "context_trimmed",
    "budget_exceeded",
    "plan_created",
    "plan_updated",
    "plan_blocked",
    "subagent_started",
    "subagent_finished",
    "checkpoint",
    "rewound",
    "hook",
    "background_finished",
    "model_fallback",
    "user_steer",
    "compaction_started",
    "compacted",
    "run_completed",
    "run_failed",
    "answer_delta",
    "approval_requested",
    "approval_resolved",
    "clarify_requested",
    "clarify_resolved",
];

/// The browser frames among [`EVENT_TYPES`]: never in the ring or `--events-jsonl`.
pub const BROWSER_FRAMES: [&str; 5] = [
    "answer_delta",
    "approval_requested",
    "approval_resolved",
    "clarify_requested",
    "clarify_resolved",
];

impl Event {
    /// The `type` of the event.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::RunStarted(_) => EVENT_TYPES[0],
            Event::IterationCompleted(_) => EVENT_TYPES[1],
            Event::ToolCallStarted(_) => EVENT_TYPES[2],
            Event::ToolCallCompleted(_) => EVENT_TYPES[3],
            Event::ToolCallFailed(_) => EVENT_TYPES[4],
            Event::SessionSaved(_) => EVENT_TYPES[5],
            Event::ContextTrimmed(_) => EVENT_TYPES[6],
            Event::BudgetExceeded(_) => EVENT_TYPES[7],
            Event::PlanCreated(_) => EVENT_TYPES[8],
            Event::PlanUpdated(_) => EVENT_TYPES[9],
            Event::PlanBlocked(_) => EVENT_TYPES[10],
            Event::SubagentStarted(_) => EVENT_TYPES[11],
            Event::SubagentFinished(_) => EVENT_TYPES[12],
            Event::Checkpoint(_) => EVENT_TYPES[13],
            Event::Rewound(_) => EVENT_TYPES[14],
            Event::Hook(_) => EVENT_TYPES[15],
            Event::BackgroundFinished(_) => EVENT_TYPES[16],
            Event::ModelFallback(_) => EVENT_TYPES[17],
            Event::UserSteer(_) => EVENT_TYPES[18],
            Event::CompactionStarted(_) => EVENT_TYPES[19],
            Event::Compacted(_) => EVENT_TYPES[20],
            Event::RunCompleted(_) => EVENT_TYPES[21],
            Event::RunFailed(_) => EVENT_TYPES[22],
            Event::AnswerDelta(_) => EVENT_TYPES[23],
            Event::ApprovalRequested(_) => EVENT_TYPES[24],
            Event::ApprovalResolved(_) => EVENT_TYPES[25],
            Event::ClarifyRequested(_) => EVENT_TYPES[26],
            Event::ClarifyResolved(_) => EVENT_TYPES[27],
        }
    }

    /// True for the run's one terminal event.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::RunCompleted(_) | Event::RunFailed(_))
    }

    /// True for a frame only browsers get.
    pub fn is_browser_frame(&self) -> bool {
        BROWSER_FRAMES.contains(&self.kind())
    }

    /// The payload as a JSON value (the envelope's `data`, a frame's whole body).
    pub fn data(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => map.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }
}

/// Where an event belongs: the envelope's fields besides `type` and `data`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stamp<'a> {
    /// The run.
    pub run_id: &'a str,
    /// Its session, once it has one.
    pub session_id: Option<&'a str>,
    /// 1-based iteration (iteration and tool events).
    pub iteration: Option<u32>,
    /// Tool name (tool events).
    pub tool: Option<&'a str>,
    /// UTC, RFC 3339.
    pub timestamp: &'a str,
}

/// The envelope of an event line, fields in the documented order, with `data` as given
/// (already redacted by the caller).
pub fn envelope(kind: &str, stamp: &Stamp<'_>, data: Value) -> Value {
    let mut env = Map::new();
    env.insert("schema".into(), Value::from(SCHEMA));
    env.insert("type".into(), Value::from(kind));
    env.insert("run_id".into(), Value::from(stamp.run_id));
    if let Some(s) = stamp.session_id {
        env.insert("session_id".into(), Value::from(s));
    }
    if let Some(i) = stamp.iteration {
        env.insert("iteration".into(), Value::from(i));
    }
    if let Some(t) = stamp.tool {
        env.insert("tool".into(), Value::from(t));
    }
    env.insert("timestamp".into(), Value::from(stamp.timestamp));
    env.insert("data".into(), data);
    Value::Object(env)
}

/// One line of the stream, read back (tests, embedding programs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Line {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The run.
    pub run_id: String,
    /// Its session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The iteration.
    #[serde(default)]
    pub iteration: Option<u32>,
    /// The tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// When.
    pub timestamp: String,
    /// The event (`type` and `data`).
    #[serde(flatten)]
    pub event: Event,
}

/// `run_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStarted {
    /// Model name.
    pub model: String,
    /// Iteration cap.
    pub max_iterations: u32,
    /// True when shell commands run in the Landlock sandbox.
    pub sandbox: bool,
}

/// `iteration_completed`: tokens so far in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationCompleted {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens the provider served from its cache.
    pub cached_tokens: u64,
    /// Tool calls in this iteration.
    pub tools_called: usize,
}

/// `tool_call_started`: never the arguments themselves unless asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallStarted {
    /// The call's id.
    pub call_id: String,
    /// Hex SHA-256 of the raw argument text.
    pub args_sha256: String,
    /// Bytes of the raw argument text.
    pub args_bytes: usize,
    /// Content-free summary (`docs/EVENTS.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_summary: Option<Value>,
    /// The raw arguments (`--events-include-args` only), redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
}

/// `tool_call_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallCompleted {
    /// The call's id.
    pub call_id: String,
    /// Wall time.
    pub duration_ms: u64,
    /// Bytes of the result the model receives.
    pub result_bytes: usize,
    /// Always 0 (the original's artifacts).
    pub artifact_count: u32,
}

/// `tool_call_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallFailed {
    /// The call's id.
    pub call_id: String,
    /// Wall time.
    pub duration_ms: u64,
    /// `tool_error`.
    pub error_class: String,
}

/// `session_saved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSaved {
    /// Messages in the saved transcript.
    pub message_count: usize,
}

/// `context_trimmed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextTrimmed {
    /// `proactive` or `survival`.
    pub mode: String,
    /// Message groups dropped.
    pub dropped_groups: usize,
    /// Tool outputs shortened.
    pub truncated_results: usize,
    /// Attached texts (`--ctx` files, recalled episodes) shortened to fit the context window.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shortened_attachments: usize,
    /// The server's overflow, in its words and sizes (survival only): e.g. `llama.cpp
    /// wording "exceed_context_size_error": 25595 tokens sent, 8192 available`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `budget_exceeded`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetExceeded {
    /// `runtime`, `tool_calls`, `input_tokens`, `output_tokens` or `cost_microusd`
    /// (millionths of a US dollar).
    pub limit_name: String,
    /// The value observed.
    pub observed: u64,
    /// The limit.
    pub limit: u64,
}

/// `plan_created`: counts and version only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanCreated {
    /// Steps.
    pub steps: usize,
    /// Version after the mutation.
    pub version: u64,
}

/// `plan_updated`: counts and version only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanUpdated {
    /// Steps.
    pub steps: usize,
    /// Steps done.
    pub done: usize,
    /// Steps in progress.
    pub in_progress: usize,
    /// Steps blocked.
    pub blocked: usize,
    /// Steps pending.
    pub pending: usize,
    /// Version after the mutation.
    pub version: u64,
}

/// `plan_blocked`: the blocked-step streak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanBlocked {
    /// Steps.
    pub steps: usize,
    /// Steps blocked now.
    pub blocked: usize,
    /// Version of the mutation that completed the streak.
    pub version: u64,
}

/// A plan's counts when a limit ended its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remaining {
    /// Steps.
    pub steps: usize,
    /// Steps pending.
    pub pending: usize,
    /// Steps in progress.
    pub in_progress: usize,
    /// Steps blocked.
    pub blocked: usize,
}

/// `run_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCompleted {
    /// Wall time.
    pub duration_ms: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    /// The final answer (redacted).
    pub answer: String,
    /// The plan's counts when the answer is the partial summary of the iteration cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<Remaining>,
    /// What the run cost in US dollars, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// `run_failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFailed {
    /// Wall time (absent when the process had to exit at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What kind of failure (`docs/EVENTS.md`).
    pub error_class: String,
    /// The message.
    pub error: String,
    /// The HTTP status of a model error that had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The plan's counts when a limit ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining: Option<Remaining>,
    /// What the run cost in US dollars, when the model's price is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// `answer_delta` (browser frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerDelta {
    /// The run.
    pub run_id: String,
    /// Text to append (redacted as a stream).
    pub text: String,
    /// True when a retried answer starts over (the text so far is discarded).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart: bool,
}

/// One call an approval covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalItem {
    /// Tool name.
    pub tool: String,
    /// What it acts on (the command, the path).
    pub resource: String,
    /// Its danger class.
    pub class: String,
    /// Why it has that class.
    pub reason: String,
}

/// `approval_requested` (browser frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequested {
    /// The run.
    pub run_id: String,
    /// The approval's id (random).
    pub approval_id: String,
    /// The first call's tool.
    pub tool: String,
    /// The first call's resource.
    pub resource: String,
    /// The first call's class.
    pub class: String,
    /// Every call it covers.
    pub items: Vec<ApprovalItem>,
}

/// Whether an approved call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAction {
    /// The calls run.
    Approve,
    /// They do not.
    Deny,
}

/// Who closed an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalReason {
    /// A person answered.
    Answered,
    /// Nobody answered in time.
    Expired,
    /// The run was cancelled (or the process stopped) while it waited.
    Cancelled,
}

/// `approval_resolved` (browser frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalResolved {
    /// The run.
    pub run_id: String,
    /// The approval.
    pub approval_id: String,
    /// Whether the calls run.
    pub action: ApprovalAction,
    /// Who closed it.
    pub reason: ApprovalReason,
}

/// `subagent_started`: one of `delegate_tasks`' children began (never its goal text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentStarted {
    /// The call that started it.
    pub call_id: String,
    /// Its place in the call's tasks (1-based).
    pub index: usize,
    /// How many tasks the call has.
    pub total: usize,
}

/// `subagent_finished`: a child ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubagentFinished {
    /// The call that started it.
    pub call_id: String,
    /// Its place in the call's tasks (1-based).
    pub index: usize,
    /// How many tasks the call has.
    pub total: usize,
    /// `ok`, `error`, `timeout` or `cancelled`.
    pub status: String,
    /// Its model calls.
    pub iterations: u32,
    /// Its tool calls.
    pub tool_calls: u64,
    /// Its prompt tokens.
    pub input_tokens: u64,
    /// Its completion tokens.
    pub output_tokens: u64,
    /// How long it ran.
    pub duration_ms: u64,
}

/// A file of a checkpoint or a rewind, and what happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointFile {
    /// The file, absolute.
    pub path: String,
    /// `added`, `changed` or `deleted` (a checkpoint); `create`, `restore` or `remove` (a
    /// rewind).
    pub change: String,
}

impl CheckpointFile {
    /// `path` and what happened to it.
    pub fn new(path: &std::path::Path, change: &str) -> Self {
        CheckpointFile {
            path: path.display().to_string(),
            change: change.to_string(),
        }
    }
}

/// `checkpoint`: a tool call recorded what it changed, so that `odek rewind --to number`
/// puts it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointTaken {
    /// The call.
    pub call_id: String,
    /// Its number in the session.
    pub number: u32,
    /// The files.
    pub files: Vec<CheckpointFile>,
    /// What it does not hold, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_covered: Vec<String>,
}

/// `rewound`: a session's files went back to before checkpoint `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rewound {
    /// The checkpoint the files went back to (as they were before it).
    pub to: u32,
    /// The rewind's own checkpoint (rewinding to it undoes the rewind).
    pub checkpoint: u32,
    /// The files written or removed.
    pub files: Vec<CheckpointFile>,
    /// Files changed outside odek that were overwritten (`force`).
    pub forced: bool,
    /// What the checkpoints did not hold (left as it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_covered: Vec<String>,
}

/// `hook`: one of the user's hooks ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRan {
    /// `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`, `SessionEnd`
    /// or `Notification`.
    pub event: String,
    /// The command line (redacted like every event string).
    pub command: String,
    /// `allow`, `ask`, `deny`, `block`, `none`, or `error` (it failed and things went on).
    pub decision: String,
    /// How long it ran.
    pub duration_ms: u64,
}

/// `compaction_started`: the model is asked for a summary of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionStarted {
    /// `manual` (`/compact`, `odek session compact`) or `auto` (`compaction.mode = summary`).
    pub trigger: String,
    /// Estimated tokens of the transcript.
    pub tokens: u64,
}

/// `compacted`: the turns before the last ones were replaced by a summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compacted {
    /// `summary`, or `digest` when the summary failed and the digest was made instead.
    pub mode: String,
    /// `manual` or `auto`.
    pub trigger: String,
    /// Estimated tokens of the transcript before.
    pub before_tokens: u64,
    /// Estimated tokens after.
    pub after_tokens: u64,
    /// Messages taken out.
    pub removed_messages: usize,
}

/// `user_steer`: a message the user sent while the turn ran, given to it before a model
/// request (`iteration` in the envelope); its text redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserSteer {
    /// What the user sent (redacted).
    pub text: String,
}

/// `model_fallback`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFallback {
    /// The model whose retries were spent.
    pub from: String,
    /// The model the turn goes on with (`provider:model`).
    pub to: String,
    /// Why, e.g. `429 Too Many Requests`.
    pub reason: String,
}

/// `background_finished`: a job started by `shell` with `background: true` ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackgroundFinished {
    /// The job's number in the session.
    pub job: u32,
    /// Its command line (redacted like every event string).
    pub command: String,
    /// `exited with status N`, `killed by signal N`, `stopped`, or `stopped after N s
    /// (background.max_seconds)`.
    pub status: String,
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
}

/// `clarify_requested` (browser frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClarifyRequested {
    /// The run.
    pub run_id: String,
    /// The question's id (random).
    pub question_id: String,
    /// The question (redacted).
    pub question: String,
    /// Answers to choose from (the user may also answer in words).
    pub options: Vec<String>,
}

/// `clarify_resolved` (browser frame). The answer itself goes only to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClarifyResolved {
    /// The run.
    pub run_id: String,
    /// The question.
    pub question_id: String,
    /// Who closed it: `answered`, `expired` or `cancelled`.
    pub reason: ApprovalReason,
}

#[cfg(test)]
mod tests;
