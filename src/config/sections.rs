//! The sections of the configuration (`planning`, `limits`, `telegram`, `memory`, …): one
//! struct each, every field a setting of the table in `settings.rs`.

use serde::{Deserialize, Serialize};

use crate::plan::PlanPlacement;

/// The `schedules` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchedulesConfig {
    /// Who runs due jobs: `any` (the daemon, `odek serve` or `odek telegram`, whichever
    /// holds the home's lock), `daemon` (only `odek schedule daemon`), `off`.
    pub runner: String,
    /// Danger classes every scheduled turn may run with nobody to ask.
    pub dangerous: Vec<String>,
    /// Jobs running at once.
    pub max_concurrent: u64,
    /// The wait before a failed delivery is tried again, in milliseconds (doubled each time).
    pub delivery_retry_ms: u64,
}

/// The `instructions` section: the chain of instruction files (see docs/INSTRUCTIONS.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionsConfig {
    /// Names read in a folder without `AGENTS.md`, the first found wins (plain names).
    pub fallbacks: Vec<String>,
    /// KiB of instruction files at most, all together.
    pub max_kb: u64,
}

/// The `commands` section: custom slash commands (see docs/COMMANDS.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandsConfig {
    /// Also read the project's `.claude/commands/` (Claude Code's custom commands).
    pub import_claude: bool,
}

/// The `skills` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillsConfig {
    /// The skills block, `skill_load` and `skill_list`.
    pub enabled: bool,
    /// More folders of skills, after `<home>/skills` and the project's (global file only).
    pub dirs: Vec<String>,
    /// Skills listed in the block at most (the rest are counted).
    pub max_listed: u64,
    /// Characters of auto-loaded skill bodies at most, all together.
    pub max_auto_chars: u64,
}

/// The `memory` section: facts across sessions, episodes, optional embeddings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryConfig {
    /// The memory block, the `memory` and `session_search` tools, episodes, indexing.
    pub enabled: bool,
    /// Character budget of the `user` store.
    pub user_max_chars: u64,
    /// Character budget of each `project` store.
    pub project_max_chars: u64,
    /// Episode summaries of sessions with three user turns or more, and their recall.
    pub episodes: bool,
    /// An OpenAI-compatible `/v1/embeddings` endpoint for hybrid ranking (global file only).
    pub embeddings: EmbeddingsConfig,
}

/// `memory.embeddings`: where vectors come from (empty = lexical ranking only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct EmbeddingsConfig {
    /// The endpoint's base URL (…/v1).
    pub base_url: String,
    /// The embedding model.
    pub model: String,
    /// The endpoint's key when it is not the model endpoint (whose key goes along only to
    /// the same origin).
    pub api_key: Option<String>,
}

/// The `subagents` section: `delegate_tasks` and the `odek subagent` children it starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubagentsConfig {
    /// Whether the model gets `delegate_tasks` (never inside a sub-agent).
    pub enabled: bool,
    /// Children running at once (1–8).
    pub max_concurrency: u64,
    /// Seconds one child may run (10–3600).
    pub timeout_seconds: u64,
    /// Model calls one child may make (1–100).
    pub max_iter: u64,
}

/// The `checkpoints` section: pre-images for `odek rewind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckpointsConfig {
    /// Whether the file tools take checkpoints.
    pub enabled: bool,
    /// Files above this many MiB are not captured (the checkpoint says so).
    pub max_file_mb: u64,
    /// Git work trees above this many files are not snapshotted before a shell command.
    pub max_files: u64,
    /// Checkpoints older than this many days are removed.
    pub keep_days: u64,
    /// The stored pre-images may take this many MiB; the oldest checkpoints go first.
    pub max_mb: u64,
}

/// The `background` section: jobs started by `shell` with `background: true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackgroundConfig {
    /// Output each job keeps (its last KiB).
    pub output_kb: u64,
    /// Jobs running at once (0: no background jobs).
    pub max_jobs: u64,
    /// A job's wall time before it is stopped.
    pub max_seconds: u64,
}

/// The `web` section (`web_fetch`; global file only: a project may not widen the network).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebConfig {
    /// Hosts fetched without asking: exact names or `*.example.com`.
    pub allow_hosts: Vec<String>,
    /// Hosts the address guard lets reach loopback and private addresses.
    pub allow_private_hosts: Vec<String>,
    /// Seconds one fetch may take, redirects and body included (1–300).
    pub timeout_seconds: u64,
}

/// The `web_search` section (its instance and limits from the global file only; a project
/// may only lower the limits or pick the language and categories).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebSearchConfig {
    /// The SearXNG instance, e.g. `http://127.0.0.1:8888`; empty = no `web_search` tool.
    pub base_url: String,
    /// Results per search unless the call asks for fewer (1–20).
    pub max_results: u64,
    /// Seconds one search may take (1–300).
    pub timeout_seconds: u64,
    /// SearXNG's `language` (empty = the instance's default).
    pub language: String,
    /// SearXNG's `categories`, comma-separated (empty = the instance's default).
    pub categories: String,
}

/// The `browser` section: the `browser` tool (a project may only turn it off or narrow
/// `allow_local` to `none`; never choose the program).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrowserConfig {
    /// Offer the tool when a browser is found.
    pub enabled: bool,
    /// The Chromium or Chrome program; empty = the usual names on PATH.
    pub executable: String,
    /// Private addresses the page may reach unlisted: `none`, `loopback`, `private`.
    pub allow_local: String,
}

/// What a sandboxed shell command may do on the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// Connect and bind as usual (the approval policy governs network commands).
    #[default]
    Allow,
    /// No TCP connect or bind (Landlock does not cover UDP).
    None,
}

/// The `compaction` section: what happens when the conversation fills the context (see
/// docs/COMPACTION.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompactionConfig {
    /// Compact at all; off, trimming only drops old turns.
    pub enabled: bool,
    /// How: the rolling digest of dropped turns, or the model's summary of the conversation.
    pub mode: CompactionMode,
    /// `summary`: percent of the context budget at which the summary is made.
    pub at_percent: u64,
    /// User turns a summary keeps whole at the end of the conversation.
    pub keep_turns: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            enabled: true,
            mode: CompactionMode::Digest,
            at_percent: 85,
            keep_turns: 2,
        }
    }
}

/// `compaction.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionMode {
    /// The turns trimming drops are summarised into a rolling digest (a side call).
    Digest,
    /// Past `at_percent`, the model summarises the turns before the last `keep_turns`.
    Summary,
}

impl CompactionMode {
    /// The word of the setting and the events.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionMode::Digest => "digest",
            CompactionMode::Summary => "summary",
        }
    }
}

/// The `planning` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlanningConfig {
    /// Master switch: false removes the plan tool and every piece of plan logic.
    pub enabled: bool,
    /// Most steps a plan may have (1..=50).
    pub max_steps: u32,
    /// Largest rendered plan message in bytes (200..=8000).
    pub max_render_chars: u32,
    /// Where requests carry the plan message.
    pub placement: PlanPlacement,
}

/// The `tools` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolsConfig {
    /// When non-empty, only these tools are registered, in this order.
    pub enabled: Vec<String>,
    /// Tools never registered.
    pub disabled: Vec<String>,
}

/// The `sessions` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SessionsConfig {
    /// `odek run` saves its transcript unless `--ephemeral`.
    pub autosave: bool,
}

/// The `serve` section (only accepted from the global file: a cloned project cannot relax
/// the server's limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServeConfig {
    /// Per-client request limits.
    pub rate_limits: RateLimits,
}

/// The `telegram` section: the bot of `odek telegram`. Only the global file and
/// `ODEK_TELEGRAM_TOKEN` set it, so a cloned project can neither read the token nor widen
/// who may talk to the bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TelegramConfig {
    /// The Bot API's address (`https://api.telegram.org`; tests point it at a local fake).
    pub api_base: String,
    /// The bot's token from @BotFather (a secret: masked, redacted, hidden from shell
    /// commands).
    pub bot_token: Option<String>,
    /// Telegram user ids whose messages start turns.
    pub allowed_users: Vec<i64>,
    /// Chat ids (groups too) whose messages start turns.
    pub allowed_chats: Vec<i64>,
    /// Seconds one `getUpdates` long poll waits for news (1–50).
    pub poll_timeout: u64,
    /// Hours of silence after which a chat's next message starts a new session (0 = never).
    pub session_ttl_hours: u64,
    /// Where a `telegram` delivery goes (0 = none).
    pub default_chat_id: i64,
    /// User ids who may manage schedules with `/schedule`.
    pub admin_users: Vec<i64>,
    /// Tokens (in and out) each chat's turns may use per day (UTC); 0 = no limit.
    pub daily_token_budget: u64,
}

/// The public Bot API.
pub const TELEGRAM_API_BASE: &str = "https://api.telegram.org";

/// `serve.rate_limits`: requests per minute and client IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RateLimits {
    /// Session list, detail, plan and export reads.
    pub reads_per_minute: u32,
    /// Prompts (`POST /api/prompt`).
    pub prompts_per_minute: u32,
}

/// The `limits` section; 0 means no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LimitsConfig {
    /// Wall-clock seconds per run.
    pub max_runtime_seconds: u64,
    /// Tool calls per run.
    pub max_tool_calls: u64,
    /// Input (prompt) tokens per run.
    pub max_input_tokens: u64,
    /// Output (completion) tokens per run.
    pub max_output_tokens: u64,
    /// US dollars per run, sub-agents included, at the model's known price.
    pub max_cost_usd: f64,
}

/// The `llm` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LlmConfig {
    /// Seconds for a whole buffered call, or until a stream starts.
    pub timeout_seconds: u64,
    /// Seconds a stream may stay silent.
    pub stream_idle_timeout_seconds: u64,
    /// Attempts per call (1 = no retries).
    pub max_attempts: u32,
    /// Wait before the first retry, in milliseconds; it doubles for each further retry.
    pub retry_initial_delay_ms: u64,
}
