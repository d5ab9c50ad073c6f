//! The bodies of `odek serve`'s responses (`docs/SERVE.md`), one type each.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ApprovalItem;

/// Every failure: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
}

/// `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
    /// odek's version.
    pub version: String,
    /// Seconds since the server started.
    pub uptime_seconds: u64,
    /// The model of new sessions.
    pub model: String,
    /// Whether runs keep a plan.
    pub planning: bool,
    /// Runs running now.
    pub runs_running: usize,
}

/// `POST /api/logout`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignedOut {
    /// True when a live browser credential was revoked.
    pub signed_out: bool,
}

/// `POST /api/prompt` (202).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptAccepted {
    /// The new run.
    pub run_id: String,
    /// Its session (new or continued).
    pub session_id: String,
    /// Always `running`.
    pub status: RunStatus,
    /// The custom command the prompt runs (`review` for `/review …`), when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// What the command's file asks that odek cannot keep (an `allowed-tools` name it does
    /// not know), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// For a prompt to a session running a turn here: `steered` (given to that run, whose
    /// id `run_id` is, at its next model request) or `queued` (a turn of its own once the
    /// run ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<String>,
    /// A queued prompt's place in the session's queue (1 = next).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
}

/// How a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still going.
    Running,
    /// Ended with an answer.
    Completed,
    /// Cancelled (`POST …/cancel`, or the server shutting down).
    Cancelled,
    /// An execution budget ran out.
    BudgetExceeded,
    /// Ended with an error.
    Failed,
}

/// A run's public state (`GET /api/runs/{id}`); every text redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    /// The run id (also on its events).
    pub run_id: String,
    /// Its session.
    pub session_id: String,
    /// Who started it: `cli`, `serve`, `telegram`, `schedule`, `subagent` or `mcp`.
    #[serde(default)]
    pub origin: String,
    /// How it stands.
    pub status: RunStatus,
    /// When it started (RFC 3339 UTC).
    pub started_at: String,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The final answer (or the partial summary at the iteration cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// True when `answer` is the partial summary made at the iteration cap.
    pub partial: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The closing summary when a budget ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Model calls made.
    pub iterations: u32,
    /// Tool calls made.
    pub tool_calls: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    /// Approvals waiting for an answer.
    pub pending_approvals: usize,
    /// Questions (`clarify`) waiting for an answer.
    pub pending_questions: usize,
    /// The background jobs of its session while it runs (they end with the run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobView>,
}

/// A background job as the runs list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobView {
    /// Its number in the session.
    pub id: u32,
    /// Its command line (redacted).
    pub command: String,
    /// `running`, or how it ended (`exited with status 0`, `stopped`, …).
    pub status: String,
    /// Seconds it has run (or ran).
    pub seconds: u64,
    /// The last lines of its output (redacted).
    pub tail: String,
}

/// `GET /api/runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunList {
    /// Runs listed.
    pub count: usize,
    /// Running runs and the last ended ones, newest first.
    pub runs: Vec<RunView>,
}

/// `POST /api/runs/{id}/cancel` (202).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelAccepted {
    /// The run.
    pub run_id: String,
    /// Always `cancelling`.
    pub status: String,
}

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for an answer.
    Pending,
    /// Approved: the calls ran.
    Approved,
    /// Denied by a person.
    Denied,
    /// Nobody answered in time.
    Expired,
    /// The run was cancelled (or the server stopped) while it waited.
    Cancelled,
}

/// One approval a run asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalView {
    /// Its id (random).
    pub approval_id: String,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// The calls it covers.
    pub items: Vec<ApprovalItem>,
}

/// `GET /api/runs/{id}/approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalList {
    /// The run.
    pub run_id: String,
    /// Oldest first.
    pub approvals: Vec<ApprovalView>,
}

/// `POST /api/runs/{id}/approvals/{aid}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAnswered {
    /// The run.
    pub run_id: String,
    /// The approval.
    pub approval_id: String,
    /// `approve` or `deny`.
    pub action: super::ApprovalAction,
}

/// Where a question (`clarify`) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    /// Waiting for an answer.
    Pending,
    /// Answered.
    Answered,
    /// Nobody answered in time: the model decides alone.
    Expired,
    /// The run was cancelled (or the server stopped) while it waited.
    Cancelled,
}

/// One question a run asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Its id (random).
    pub question_id: String,
    /// Where it stands.
    pub status: QuestionStatus,
    /// The question (redacted).
    pub question: String,
    /// Answers to choose from.
    pub options: Vec<String>,
}

/// `GET /api/runs/{id}/questions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionList {
    /// The run.
    pub run_id: String,
    /// Oldest first.
    pub questions: Vec<QuestionView>,
}

/// `POST /api/runs/{id}/questions/{qid}` (the answer is not repeated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionAnswered {
    /// The run.
    pub run_id: String,
    /// The question.
    pub question_id: String,
    /// Always `answered`.
    pub status: QuestionStatus,
}

/// `GET /api/events`: event lines with their position in the stream (`event_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    /// Events listed.
    pub count: usize,
    /// Oldest first.
    pub events: Vec<Value>,
}

/// One tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolView {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its JSON schema.
    pub parameters: Value,
}

/// `GET /api/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolList {
    /// Tools.
    pub count: usize,
    /// In the order the model gets them.
    pub tools: Vec<ToolView>,
}

/// A session in the list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionItem {
    /// Its id.
    pub id: String,
    /// Its name, or its task.
    pub title: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
    /// User turns.
    pub turns: u32,
    /// Its model.
    pub model: String,
    /// `cli`, `serve` or `telegram`.
    pub origin: String,
    /// True while a turn of it runs here.
    pub running: bool,
}

/// `GET /api/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    /// This page, newest first.
    pub sessions: Vec<SessionItem>,
    /// Sessions skipped.
    pub offset: usize,
    /// Page size.
    pub limit: usize,
    /// Sessions matching the query.
    pub count: usize,
    /// The query (trimmed).
    pub query: String,
}

/// `DELETE /api/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deleted {
    /// The session deleted.
    pub deleted: String,
}

/// One checkpoint in `GET /api/sessions/{id}/checkpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointItem {
    /// Its number (what a rewind goes back to before).
    pub number: u32,
    /// The session's turn it was taken in.
    pub turn: u32,
    /// When (RFC 3339 UTC).
    pub at: String,
    /// The tool, or `rewind`.
    pub tool: String,
    /// For a rewind: the checkpoint it went back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound_to: Option<u32>,
    /// The files (`added`, `changed`, `deleted`).
    pub files: Vec<super::CheckpointFile>,
    /// What it does not hold, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_covered: Vec<String>,
}

/// `GET /api/sessions/{id}/checkpoints`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointList {
    /// The session.
    pub session_id: String,
    /// Every checkpoint, oldest first.
    pub checkpoints: Vec<CheckpointItem>,
    /// A rewind that was interrupted: its target (only a rewind to it is accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_rewind_to: Option<u32>,
}

/// `POST /api/sessions/{id}/rewind`: `to` (a checkpoint) or `turn` (its first checkpoint
/// from that turn on); `dry_run` shows what would be done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewindRequest {
    /// Put the files back as they were before this checkpoint.
    #[serde(default)]
    pub to: Option<u32>,
    /// Or: as they were before this turn.
    #[serde(default)]
    pub turn: Option<u32>,
    /// Overwrite files changed outside odek since.
    #[serde(default)]
    pub force: bool,
    /// Only say what would be done.
    #[serde(default)]
    pub dry_run: bool,
    /// Put the files back (default true).
    #[serde(default)]
    pub files: Option<bool>,
    /// Also continue the conversation from before that turn as a new session (a fork).
    #[serde(default)]
    pub conversation: bool,
}

/// The answer of `POST /api/sessions/{id}/rewind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RewindResult {
    /// The checkpoint the files go (or went) back to before (none: the files are left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    /// Whether files were written (false for a dry run, or when nothing differed).
    pub done: bool,
    /// The rewind's own checkpoint, when done (a rewind to it undoes this one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u32>,
    /// The files (`create`, `restore`, `remove`).
    pub files: Vec<super::CheckpointFile>,
    /// Files changed outside odek since (a rewind without `force` stops on them).
    pub conflicts: Vec<String>,
    /// What the checkpoints do not hold (left as it is).
    pub not_covered: Vec<String>,
    /// With `conversation`: the turns the fork keeps (it continues after them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_at: Option<u32>,
    /// With `conversation`, when done: the new session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked: Option<String>,
}

/// A step of the plan view: `note` left out when empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStepView {
    /// Step id.
    pub id: String,
    /// Title.
    pub title: String,
    /// `pending`, `in_progress`, `done` or `blocked`.
    pub status: String,
    /// Note, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `GET /api/sessions/{id}/plan`: the seed's read-only plan view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanView {
    /// The session.
    pub session_id: String,
    /// Plan version (0 without a plan).
    pub version: u64,
    /// Steps, never null.
    pub steps: Vec<PlanStepView>,
    /// False when the session has no plan.
    pub found: bool,
}

/// `GET /api/memory`: the facts (pending writes too), and what each store uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryList {
    /// The facts, oldest first.
    pub facts: Vec<Fact>,
    /// The project whose `project` facts are listed (the server's working directory).
    pub project: String,
    /// Characters of active facts per store, and each budget.
    pub stores: Vec<MemoryStoreUse>,
    /// Pending writes waiting for review.
    pub pending: usize,
}

/// One store's use of its budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryStoreUse {
    /// `user` or `project`.
    pub target: MemoryTarget,
    /// Characters used by active facts.
    pub used: usize,
    /// The budget.
    pub budget: usize,
}

/// `GET|POST /api/memory/{id}`, `POST /api/memory` (201), `POST /api/memory/{id}/accept`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryFact {
    /// The fact as it stands (for an accepted `remove`: as it was).
    pub fact: Fact,
}

/// A memory store (`memory::` keeps them; the API, exports and imports name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryTarget {
    /// About the person: preferences, style (global).
    User,
    /// About this working tree: commands, conventions (keyed by the project root).
    Project,
}

impl MemoryTarget {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryTarget::User => "user",
            MemoryTarget::Project => "project",
        }
    }

    /// Parses `user` or `project`.
    pub fn parse(s: &str) -> Option<MemoryTarget> {
        match s {
            "user" => Some(MemoryTarget::User),
            "project" => Some(MemoryTarget::Project),
            _ => None,
        }
    }
}

/// Whether models see a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FactStatus {
    /// In every memory block.
    Active,
    /// A write waiting for a person: in no block.
    Pending,
}

impl FactStatus {
    /// `active` or `pending`.
    pub fn as_str(self) -> &'static str {
        match self {
            FactStatus::Active => "active",
            FactStatus::Pending => "pending",
        }
    }
}

/// One memory fact, or one pending write: as `memory::` stores it, the API shows it and an
/// export writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Its number.
    pub id: i64,
    /// Its store.
    pub target: MemoryTarget,
    /// The project root of a `project` fact (empty for `user`).
    #[serde(default)]
    pub project: String,
    /// The text (redacted before it was stored).
    pub content: String,
    /// Active or pending.
    pub status: FactStatus,
    /// What a pending write does when accepted: `add`, `replace` or `remove` (`add` when an
    /// imported file leaves it out).
    #[serde(default = "default_fact_action")]
    pub action: String,
    /// The fact a pending `replace` or `remove` applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<i64>,
    /// The session whose turn wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `model`, `user` or `import`.
    pub source: String,
    /// When it was written.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
}

fn default_fact_action() -> String {
    "add".into()
}

/// `DELETE /api/memory/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryDeleted {
    /// The fact deleted.
    pub deleted: i64,
}

/// `GET /api/search?q=&limit=`: sessions by what was said in them, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResults {
    /// The query.
    pub query: String,
    /// The matching sessions.
    pub sessions: Vec<SessionHit>,
}

/// One session a search found (`memory::`'s session index, `session_search`, the API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHit {
    /// Session id.
    pub id: String,
    /// When it was last saved.
    pub date: String,
    /// Its title (name or first task).
    pub title: String,
    /// `cli`, `serve`, `telegram`, `schedule`, `subagent` (none for older files).
    pub origin: Option<String>,
    /// The best-matching passage, the match in «…».
    pub snippet: String,
    /// BM25 score (lower is better), or the hybrid rank when embeddings are on.
    pub score: f64,
    /// True when the session took in external content (web, MCP, sub-agents): what it says
    /// may carry that content along.
    pub external: bool,
}

/// One scheduled job as `GET /api/schedules` and `odek schedule list --json` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleView {
    /// Its name.
    pub name: String,
    /// The cron expression.
    pub cron: String,
    /// Its time zone (IANA name, or `system`), or why it cannot be read.
    pub zone: String,
    /// Whether runners run it.
    pub enabled: bool,
    /// The next fire time (in its zone), when enabled.
    pub next_run: Option<String>,
    /// When it last started (RFC 3339).
    pub last_run: Option<String>,
    /// How that ended (`ok`, `failed: …`, `delivery failed: …`, `cancelled`).
    pub last_outcome: Option<String>,
    /// The session of that run.
    pub last_session: Option<String>,
    /// Fire times skipped because a run was still going.
    pub skipped: u64,
    /// Where its answers go.
    pub deliver: String,
    /// Its working directory.
    pub dir: String,
    /// What its turns may do with nobody to ask.
    pub policy: String,
    /// The task.
    pub task: String,
}

/// One skill of `GET /api/skills` (and `odek skill list --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillView {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Where it was found (`home`, `project`, `project (.agents)`, `skills.dirs`).
    pub origin: &'static str,
    /// Its folder.
    pub dir: String,
    /// True when the model sees it.
    pub offered: bool,
    /// True when its text reaches the model unwrapped.
    pub trusted: bool,
    /// In words: offered, auto-loaded, or why not offered.
    pub status: String,
}

/// `GET /api/skills`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillList {
    /// The valid skills, first of a name only.
    pub skills: Vec<SkillView>,
    /// `SKILL.md` files that break a rule: the file and the rule.
    pub broken: Vec<BrokenSkill>,
}

/// A `SKILL.md` that breaks a rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokenSkill {
    /// The file.
    pub file: String,
    /// The rule it breaks.
    pub rule: String,
}

/// One custom slash command (`odek commands list --json`; see docs/COMMANDS.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandView {
    /// Its name, without the slash (`review`, `frontend:build`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// What to type after the name, when its file says.
    pub argument_hint: Option<String>,
    /// Where it comes from: `user`, `project`, `claude` or `skill`.
    pub source: &'static str,
    /// Its file (a skill's folder).
    pub path: String,
    /// The model it asks, when it sets one.
    pub model: Option<String>,
    /// Its `allowed-tools` as written, when it sets them.
    pub allowed_tools: Option<Vec<String>>,
    /// True when it runs now (false: a project command that narrows and is not trusted).
    pub runnable: bool,
    /// In words: runs, or what to review and run first.
    pub status: String,
}

/// A command file hidden by a built-in command or a command of the same name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShadowedCommand {
    /// Its name.
    pub name: String,
    /// Where it comes from.
    pub source: &'static str,
    /// Its file.
    pub path: String,
    /// What hides it, in words (`the built-in /undo`, `/review in …`).
    pub by: String,
}

/// `odek commands list --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandList {
    /// The commands, sorted by name.
    pub commands: Vec<CommandView>,
    /// The hidden ones.
    pub shadowed: Vec<ShadowedCommand>,
    /// Files skipped and why, one line each.
    pub warnings: Vec<String>,
}

/// `GET /api/models`: what the web UI's model picker offers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelList {
    /// The configured `model`: what a new session uses unless another is picked.
    pub default: String,
    /// Every model on offer, the default first, each once.
    pub models: Vec<ModelEntry>,
    /// True when the endpoint answered `GET /models`.
    pub endpoint_listed: bool,
    /// True when the model takes images (the `images` setting): the web UI attaches them.
    pub images: bool,
    /// The configured provider: a session on another one names its model `PROVIDER:MODEL`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// `POST /api/sessions/{id}/compact`: what the compaction did (docs/COMPACTION.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionCompacted {
    /// The session.
    pub session_id: String,
    /// `summary`, or `digest` when the summary failed and the digest replaced it.
    pub mode: &'static str,
    /// Estimated tokens of the transcript before.
    pub before_tokens: u64,
    /// Estimated tokens after.
    pub after_tokens: u64,
    /// Messages taken out.
    pub removed_messages: usize,
    /// The fork that keeps the conversation before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup: Option<String>,
    /// The line the web UI shows.
    pub line: String,
}

/// `POST /api/sessions/{id}/model`: the session's model after the switch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSwitched {
    /// The session.
    pub session_id: String,
    /// Its model, `PROVIDER:MODEL` when on another provider than the server's.
    pub model: String,
    /// What moved (`this session moves from … to …`, and the state dropped); absent when
    /// nothing changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One model of [`ModelList`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEntry {
    /// Its name, as sent in requests.
    pub name: String,
    /// Where it comes from: `model` (the setting), `models` (the list setting), `endpoint`.
    pub from: Vec<&'static str>,
}

/// `GET /api/schedules`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduleList {
    /// The jobs, in the order they were added.
    pub schedules: Vec<ScheduleView>,
}
