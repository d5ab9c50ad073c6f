//! Layered configuration: built-in defaults → global `<home>/config.json` → project
//! `./odek.json` → `ODEK_*` environment → command-line flags.
//!
//! Every key is one row of the settings table ([`settings::SETTINGS`]); every layer is a list
//! of values by row (unset keys fall through). The project layer's values pass their row's
//! rule first (it may only lower limits or opt out), the layers are merged onto the defaults
//! while the source of every key is recorded, and finally out-of-range values are clamped
//! with a warning. The engine and tools only ever see the resolved [`Config`].

mod env;
mod error;
mod file;
mod layers;
pub mod providers;
pub mod settings;
pub mod template;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::policy::DangerPolicy;

pub use env::parse_bool;
pub use error::{ConfigError, MAX_CONFIG_BYTES};
pub use file::substitute_env;
pub use layers::{Overrides, known_keys};

/// Name of the project configuration file, looked up in the working directory.
pub const PROJECT_FILE: &str = "odek.json";
/// Name of the global configuration file inside the odek home directory.
pub const GLOBAL_FILE: &str = "config.json";
/// Default model name.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// Default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com/v1";
/// Values accepted by `thinking`.
pub const THINKING_LEVELS: &[&str] = &["enabled", "disabled", "low", "medium", "high"];

/// The resolved configuration the program runs with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The provider named by `provider`/`--provider` (`None` = the endpoint of `base_url`,
    /// spoken in Chat Completions, as before providers).
    pub provider: Option<String>,
    /// Custom providers, and changes to built-in ones, by id (global file only).
    pub providers: BTreeMap<String, providers::ProviderConfig>,
    /// The user's hooks, in Claude Code's shape (global file only).
    pub hooks: crate::hooks::HooksSettings,
    /// Prices per million tokens by model prefix, over the built-in ones (global file only).
    pub pricing: BTreeMap<String, crate::llm::pricing::Price>,
    /// Model name sent to the endpoint.
    pub model: String,
    /// OpenAI-compatible endpoint, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// API key (never printed unmasked).
    pub api_key: Option<String>,
    /// Replacement for the built-in system prompt.
    pub system: Option<String>,
    /// Sampling temperature; `None` leaves it to the server.
    pub temperature: Option<f64>,
    /// Thinking / reasoning effort setting.
    pub thinking: Option<String>,
    /// Iterations (model calls) per run before the partial summary.
    pub max_iterations: u32,
    /// Tool calls of one batch that run at the same time.
    pub max_tool_parallel: u32,
    /// Stream answers as they are generated.
    pub stream: bool,
    /// Summarise dropped turns into a rolling digest when trimming.
    pub compaction: bool,
    /// Context window in tokens; 0 = discover from the server or the model table.
    pub context_window: u64,
    /// Plain output without ANSI colours.
    pub no_color: bool,
    /// More models the web UI's picker offers beside `model`.
    pub models: Vec<String>,
    /// The model takes images (image parts from Telegram photos and web UI attachments).
    pub images: bool,
    /// Final answers as the model wrote them (no Markdown rendering on a terminal).
    pub raw: bool,
    /// Do not read `./AGENTS.md` project instructions.
    pub no_agents: bool,
    /// The structured plan.
    pub planning: PlanningConfig,
    /// Approval policy for dangerous tool calls.
    pub dangerous: DangerPolicy,
    /// Which tools are registered.
    pub tools: ToolsConfig,
    /// Session persistence.
    pub sessions: SessionsConfig,
    /// Execution budgets (0 = off).
    pub limits: LimitsConfig,
    /// Model-client behaviour.
    pub llm: LlmConfig,
    /// `odek serve` (global file only).
    pub serve: ServeConfig,
    /// `odek telegram` (global file and `ODEK_TELEGRAM_TOKEN` only).
    pub telegram: TelegramConfig,
    /// MCP servers whose tools the model gets, by name (global file only; a project file
    /// may only disable one).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Set when every class but `blocked` is allowed by `--yolo` or
    /// `ODEK_DANGEROUS_ACTION=allow`: what did it. Recorded in the session.
    pub dangerous_override: Option<String>,
    /// Run shell commands in the sandbox (Landlock on Linux, Seatbelt on macOS) where the
    /// system offers it.
    pub sandbox: bool,
    /// Where the sandbox is wanted but this system offers none, refuse shell commands (and
    /// a project's hooks) instead of running them without it.
    pub sandbox_required: bool,
    /// Paths the sandbox also lets shell commands write beneath (`~` is the home directory).
    pub sandbox_allow_write: Vec<String>,
    /// Network access of sandboxed shell commands.
    pub sandbox_network: SandboxNetwork,
    /// `web_fetch`: hosts that never ask, hosts allowed to private addresses, time limit.
    pub web: WebConfig,
    /// `web_search`: the SearXNG instance (none = no such tool).
    pub web_search: WebSearchConfig,
    /// `delegate_tasks` and its children.
    pub subagents: SubagentsConfig,
    /// What the file tools capture for `odek rewind` (see docs/UNDO.md).
    pub checkpoints: CheckpointsConfig,
    /// Background jobs of `shell` (see docs/BACKGROUND.md).
    pub background: BackgroundConfig,
    /// Facts, the session index, episodes (`<home>/odek.db`).
    pub memory: MemoryConfig,
    /// Skills in the `SKILL.md` format (see docs/SKILLS.md).
    pub skills: SkillsConfig,
    /// Scheduled jobs (see docs/SCHEDULES.md).
    pub schedules: SchedulesConfig,
}

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

pub use crate::plan::PlanPlacement;

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

/// One entry of `mcp_servers`: a server started as a child process (`command`) or reached
/// over streamable HTTP (`url`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpServerConfig {
    /// The program to start (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment (odek's own secrets are never passed on).
    pub env: BTreeMap<String, String>,
    /// The server's endpoint (streamable HTTP transport), e.g. `http://127.0.0.1:3001/mcp`.
    pub url: Option<String>,
    /// Headers sent with every HTTP request (e.g. `Authorization`); values are secrets.
    pub headers: BTreeMap<String, String>,
    /// Seconds to connect, and for each tool call (1–600).
    pub timeout_seconds: u64,
    /// The server's tools (names as the server gives them) that run without approval;
    /// every other call is gated as `code_execution`.
    pub auto_approve: Vec<String>,
    /// Configured but not started.
    pub disabled: bool,
}

/// Headers the streamable-HTTP transport sets itself.
const MCP_RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Default of [`McpServerConfig::timeout_seconds`].
pub const MCP_DEFAULT_TIMEOUT_SECONDS: u64 = 30;

impl McpServerConfig {
    fn from_partial(p: &PartialMcpServer) -> McpServerConfig {
        McpServerConfig {
            command: p.command.clone(),
            args: p.args.clone().unwrap_or_default(),
            env: p.env.clone().unwrap_or_default(),
            url: p.url.clone(),
            headers: p.headers.clone().unwrap_or_default(),
            timeout_seconds: p.timeout_seconds.unwrap_or(MCP_DEFAULT_TIMEOUT_SECONDS),
            auto_approve: p.auto_approve.clone().unwrap_or_default(),
            disabled: p.disabled.unwrap_or(false),
        }
    }

    /// The parts of `url` that are credentials: the user-info of `https://user:pw@host/…`
    /// and every query value (`?token=…`), for the redactor and `odek config`'s mask.
    pub fn url_secrets(&self) -> Vec<String> {
        let Some(url) = &self.url else {
            return Vec::new();
        };
        let mut secrets = Vec::new();
        let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
        let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
        if let Some((userinfo, _host)) = authority.rsplit_once('@') {
            secrets.push(userinfo.to_string());
            if let Some((_user, password)) = userinfo.split_once(':') {
                secrets.push(password.to_string());
            }
        }
        if let Some((_, query)) = url.split_once('?') {
            let query = query.split('#').next().unwrap_or("");
            secrets.extend(
                query
                    .split('&')
                    .filter_map(|pair| pair.split_once('=').map(|(_, v)| v.to_string()))
                    .filter(|v| !v.is_empty()),
            );
        }
        secrets
    }

    /// Checks one entry: a usable name, exactly one transport, an http(s) URL.
    pub fn check(&self, name: &str) -> Result<(), McpConfigError> {
        if name.is_empty()
            || name.contains("__")
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(McpConfigError::BadName);
        }
        if self.url.is_some() && !(self.args.is_empty() && self.env.is_empty()) {
            return Err(McpConfigError::StdioFieldsOnUrl);
        }
        if self.command.is_some() && !self.headers.is_empty() {
            return Err(McpConfigError::HeadersOnCommand);
        }
        if let Some(name) = self.headers.keys().find(|h| {
            MCP_RESERVED_HEADERS
                .iter()
                .any(|r| r.eq_ignore_ascii_case(h))
        }) {
            return Err(McpConfigError::ReservedHeader(name.clone()));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => Err(McpConfigError::BothTransports),
            (None, None) => Err(McpConfigError::NoTransport),
            (Some(c), None) if c.trim().is_empty() => Err(McpConfigError::EmptyCommand),
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                Err(McpConfigError::BadScheme(u.clone()))
            }
            _ => Ok(()),
        }
    }
}

/// Why an `mcp_servers` entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpConfigError {
    /// The name cannot prefix tool names.
    #[error(
        "a server name uses letters, digits, '-' and single '_' only (its tools are named <server>__<tool>)"
    )]
    BadName,
    /// `args`/`env` with `url`.
    #[error("args and env belong to a stdio server (command), not to url")]
    StdioFieldsOnUrl,
    /// `headers` with `command`.
    #[error("headers belong to an HTTP server (url), not to command")]
    HeadersOnCommand,
    /// A header the transport sets itself.
    #[error("header {0:?} is set by the MCP transport itself and cannot be configured")]
    ReservedHeader(String),
    /// Both transports.
    #[error("set either command (stdio) or url (HTTP), not both")]
    BothTransports,
    /// Neither transport.
    #[error("set command (a stdio server) or url (an HTTP server)")]
    NoTransport,
    /// An empty command.
    #[error("command is empty")]
    EmptyCommand,
    /// A URL that is not http(s).
    #[error("url must start with http:// or https:// (got {0:?})")]
    BadScheme(String),
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

impl Config {
    /// This configuration for turns with nobody to ask (a schedule, odek as an MCP server):
    /// what would ask is denied (`non_interactive: deny`), the classes of `allow` are
    /// allowed, the user's denials stay, approvals given ahead for someone at the keyboard
    /// (`dangerous.allowlist`, MCP `auto_approve`) do not stand in for one, and the sandbox
    /// is on. `Err` names a class that does not exist.
    pub fn with_nobody_to_ask<'a>(
        &self,
        allow: impl IntoIterator<Item = &'a String>,
    ) -> Result<Config, crate::policy::UnknownDangerClass> {
        use std::str::FromStr;
        let mut config = self.clone();
        let policy = &mut config.dangerous;
        policy.action = None;
        policy.non_interactive = Some(crate::policy::Action::Deny);
        policy
            .classes
            .retain(|_, action| *action == crate::policy::Action::Deny);
        policy.allowlist.clear();
        for server in config.mcp_servers.values_mut() {
            server.auto_approve.clear();
        }
        for name in allow {
            let class = crate::policy::DangerClass::from_str(name)?;
            policy
                .classes
                .entry(class)
                .or_insert(crate::policy::Action::Allow);
        }
        config.sandbox = true;
        // A `--yolo` of the user's does not carry over to turns nobody watches.
        config.dangerous_override = None;
        Ok(config)
    }

    /// A resumed session keeps its sandbox setting: a sandboxed one stays sandboxed whatever
    /// the configuration or `--no-sandbox` say; one that ran without stays without unless
    /// `--sandbox` is given (`sandbox_flag`). `saved` is `None` for a new session (nothing
    /// to keep). Returns the line to show when the sandbox was turned on.
    pub fn keep_sandbox_posture(
        &mut self,
        sandbox_flag: bool,
        saved: Option<bool>,
    ) -> Option<&'static str> {
        match saved {
            Some(true) if !self.sandbox => {
                self.sandbox = true;
                Some("odek: session was sandboxed — enabling sandbox for this continuation")
            }
            Some(false) if !sandbox_flag => {
                self.sandbox = false;
                None
            }
            _ => None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            provider: None,
            providers: BTreeMap::new(),
            hooks: crate::hooks::HooksSettings::default(),
            pricing: BTreeMap::new(),
            model: DEFAULT_MODEL.to_string(),
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            system: None,
            temperature: None,
            thinking: None,
            max_iterations: 90,
            max_tool_parallel: 4,
            stream: true,
            compaction: true,
            context_window: 0,
            no_color: false,
            images: false,
            raw: false,
            models: Vec::new(),
            no_agents: false,
            planning: PlanningConfig {
                enabled: true,
                max_steps: 12,
                max_render_chars: 2000,
                placement: PlanPlacement::Tail,
            },
            dangerous: DangerPolicy::default(),
            tools: ToolsConfig::default(),
            sessions: SessionsConfig { autosave: true },
            limits: LimitsConfig::default(),
            llm: LlmConfig {
                timeout_seconds: 120,
                stream_idle_timeout_seconds: 120,
                max_attempts: 4,
                retry_initial_delay_ms: 1000,
            },
            serve: ServeConfig {
                rate_limits: RateLimits {
                    reads_per_minute: 60,
                    prompts_per_minute: 30,
                },
            },
            telegram: TelegramConfig {
                api_base: TELEGRAM_API_BASE.into(),
                bot_token: None,
                allowed_users: Vec::new(),
                allowed_chats: Vec::new(),
                poll_timeout: 30,
                session_ttl_hours: 24,
                default_chat_id: 0,
                admin_users: Vec::new(),
                daily_token_budget: 0,
            },
            mcp_servers: BTreeMap::new(),
            dangerous_override: None,
            sandbox: true,
            sandbox_required: false,
            sandbox_allow_write: Vec::new(),
            sandbox_network: SandboxNetwork::Allow,
            web: WebConfig {
                allow_hosts: Vec::new(),
                allow_private_hosts: Vec::new(),
                timeout_seconds: 30,
            },
            web_search: WebSearchConfig {
                base_url: String::new(),
                max_results: 10,
                timeout_seconds: 15,
                language: String::new(),
                categories: String::new(),
            },
            subagents: SubagentsConfig {
                enabled: true,
                max_concurrency: 3,
                timeout_seconds: 120,
                max_iter: 15,
            },
            checkpoints: CheckpointsConfig {
                enabled: true,
                max_file_mb: crate::checkpoint::DEFAULT_MAX_FILE_MB,
                max_files: crate::checkpoint::DEFAULT_MAX_FILES,
                keep_days: crate::checkpoint::DEFAULT_KEEP_DAYS,
                max_mb: crate::checkpoint::DEFAULT_MAX_MB,
            },
            background: BackgroundConfig {
                output_kb: 256,
                max_jobs: 4,
                max_seconds: 3600,
            },
            memory: MemoryConfig {
                enabled: true,
                user_max_chars: 1500,
                project_max_chars: 2500,
                episodes: true,
                embeddings: EmbeddingsConfig::default(),
            },
            skills: SkillsConfig {
                enabled: true,
                dirs: Vec::new(),
                max_listed: 50,
                max_auto_chars: 8000,
            },
            schedules: SchedulesConfig {
                runner: "any".into(),
                dangerous: Vec::new(),
                max_concurrent: 2,
                delivery_retry_ms: 1000,
            },
        }
    }
}

/// Partial `mcp_servers` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PartialMcpServer {
    /// See [`McpServerConfig::command`].
    pub command: Option<String>,
    /// See [`McpServerConfig::args`].
    pub args: Option<Vec<String>>,
    /// See [`McpServerConfig::env`].
    pub env: Option<BTreeMap<String, String>>,
    /// See [`McpServerConfig::url`].
    pub url: Option<String>,
    /// See [`McpServerConfig::headers`].
    pub headers: Option<BTreeMap<String, String>>,
    /// See [`McpServerConfig::timeout_seconds`].
    pub timeout_seconds: Option<u64>,
    /// See [`McpServerConfig::auto_approve`].
    pub auto_approve: Option<Vec<String>>,
    /// See [`McpServerConfig::disabled`].
    pub disabled: Option<bool>,
}

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Built-in default.
    Default,
    /// The global file.
    Global(PathBuf),
    /// The project file.
    Project(PathBuf),
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag,
    /// A sub-agent's task: what the parent decided for the child (its limits, its policy,
    /// its tools), over every other layer.
    SubagentTask,
    /// The provider named by `provider` (its endpoint, its model).
    Provider(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Global(p) => write!(f, "global {}", p.display()),
            Source::Project(p) => write!(f, "project {}", p.display()),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Flag => f.write_str("flag"),
            Source::SubagentTask => f.write_str("subagent task"),
            Source::Provider(id) => write!(f, "provider {id}"),
        }
    }
}

/// Everything `load` needs; tests build it by hand, the CLI from the process.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The odek home (`$ODEK_HOME` or `~/.odek`).
    pub home: PathBuf,
    /// Directory searched for the project file.
    pub cwd: PathBuf,
    /// A snapshot of the environment.
    pub env: BTreeMap<String, String>,
    /// Overrides from command-line flags.
    pub flags: Overrides,
    /// A sub-agent's settings, over the flags (empty outside a child).
    pub task: Overrides,
}

impl LoadOptions {
    /// Options for this process: `$ODEK_HOME` (or `~/.odek`), the current directory and the
    /// current environment.
    pub fn from_process(flags: Overrides) -> Self {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        LoadOptions {
            home: home_dir_from(&env),
            cwd,
            env,
            flags,
            task: Overrides::default(),
        }
    }
}

/// `$ODEK_HOME` when set and non-empty, else `~/.odek`.
pub fn home_dir_from(env: &BTreeMap<String, String>) -> PathBuf {
    match env.get("ODEK_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => crate::home::user_home()
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".odek"),
    }
}

/// The result of loading: the configuration, where each key came from, and the warnings
/// (already formatted as `odek: …` lines) that the CLI prints.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The configuration to run with.
    pub config: Config,
    /// Source of every key, by dotted path.
    pub sources: BTreeMap<String, Source>,
    /// Warning lines for stderr.
    pub warnings: Vec<String>,
    /// The odek home directory.
    pub home: PathBuf,
    /// The global file path (whether or not it exists).
    pub global_path: PathBuf,
    /// The project file, when one was found.
    pub project_path: Option<PathBuf>,
}

impl Resolved {
    /// The source recorded for a dotted key path.
    pub fn source_of(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::Default)
    }
}

/// Loads and resolves the configuration.
pub fn load(opts: &LoadOptions) -> Result<Resolved, ConfigError> {
    let mut warnings = Vec::new();
    let global_path = opts.home.join(GLOBAL_FILE);
    let project_candidate = opts.cwd.join(PROJECT_FILE);

    let global = file::read_file(&global_path, &opts.env, &mut warnings)?;
    let project = file::read_file(&project_candidate, &opts.env, &mut warnings)?;
    let project_path = project.as_ref().map(|_| absolute(&project_candidate));

    let mut stack = Vec::new();
    if let Some(g) = &global {
        stack.push(layers::file_layer(g, Source::Global(global_path.clone())));
    }
    if let (Some(p), Some(path)) = (&project, &project_path) {
        stack.push(layers::file_layer(p, Source::Project(path.clone())));
    }
    stack.push(layers::env_layer(&opts.env)?);
    stack.push(opts.flags.layer(Source::Flag));
    if !opts.task.is_empty() {
        stack.push(opts.task.layer(Source::SubagentTask));
    }

    let places = layers::Places {
        global: &global_path,
    };
    let mut merger = layers::Merger::new();
    for layer in &stack {
        merger.apply(layer, &places, &mut warnings)?;
    }
    merger.apply_no_color_env(&opts.env);
    merger.apply_yolo();
    let (mut config, mut sources) = merger.finish();
    providers::apply(&mut config, &mut sources, &opts.env)?;
    layers::clamp(&mut config, &sources, &mut warnings);
    validate(&config, &sources)?;
    Ok(Resolved {
        config,
        sources,
        warnings,
        home: opts.home.clone(),
        global_path,
        project_path,
    })
}

fn validate(config: &Config, sources: &BTreeMap<String, Source>) -> Result<(), ConfigError> {
    let origin = |key: &str| {
        sources
            .get(key)
            .cloned()
            .unwrap_or(Source::Default)
            .to_string()
    };
    let url = config.base_url.as_str();
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
        return Err(ConfigError::InvalidValue {
            origin: origin("base_url"),
            key: "base_url".into(),
            message: format!("expected an http:// or https:// URL, got {url:?}"),
        });
    }
    if config.limits.max_cost_usd > 0.0
        && crate::llm::pricing::price_for(&config.model, &config.pricing).is_none()
    {
        return Err(ConfigError::InvalidValue {
            origin: origin("limits.max_cost_usd"),
            key: "limits.max_cost_usd".into(),
            message: format!(
                "no price is known for the model {:?}, so a cost budget cannot hold: add its price to `pricing` in the global file (see PROVIDERS.md)",
                config.model
            ),
        });
    }
    for (name, server) in &config.mcp_servers {
        let key = format!("mcp_servers.{name}");
        server.check(name).map_err(|e| ConfigError::InvalidValue {
            origin: origin(&key),
            key,
            message: e.to_string(),
        })?;
    }
    config
        .dangerous
        .validate()
        .map_err(|e| ConfigError::InvalidValue {
            origin: origin("dangerous"),
            key: "dangerous".into(),
            message: e.to_string(),
        })
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// True when `base_url` points at this machine (a local server needs no API key).
pub fn is_loopback_url(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("http://")
        .or_else(|| base_url.strip_prefix("https://"))
        .unwrap_or(base_url);
    let host_port = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host == "localhost" || host == "::1" || host.starts_with("127.") || host == "0.0.0.0"
}

#[cfg(test)]
mod tests;

/// The configuration as JSON with the API key masked (`odek config`, `GET /api/config`).
pub fn masked_json(config: &Config) -> serde_json::Value {
    let mut value = serde_json::to_value(config).unwrap_or(serde_json::Value::Null);
    if let Some(key) = value.get_mut("api_key")
        && let Some(k) = key.as_str()
    {
        *key = serde_json::Value::String(mask(k));
    }
    for secret in ["/telegram/bot_token", "/memory/embeddings/api_key"] {
        if let Some(token) = value.pointer_mut(secret)
            && let Some(t) = token.as_str()
        {
            *token = serde_json::Value::String(mask(t));
        }
    }
    if let Some(providers) = value
        .get_mut("providers")
        .and_then(serde_json::Value::as_object_mut)
    {
        for entry in providers.values_mut() {
            if let Some(key) = entry.get_mut("api_key")
                && let Some(k) = key.as_str()
            {
                *key = serde_json::Value::String(mask(k));
            }
            if let Some(headers) = entry
                .get_mut("headers")
                .and_then(serde_json::Value::as_object_mut)
            {
                for header in headers.values_mut() {
                    if let Some(h) = header.as_str() {
                        *header = serde_json::Value::String(mask(h));
                    }
                }
            }
        }
    }
    if let Some(servers) = value
        .get_mut("mcp_servers")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, server) in servers.iter_mut() {
            if let Some(url) = server.get_mut("url")
                && let Some(text) = url.as_str()
            {
                let mut shown = text.to_string();
                for secret in config
                    .mcp_servers
                    .get(name)
                    .map(|s| s.url_secrets())
                    .unwrap_or_default()
                {
                    shown = shown.replace(&secret, &mask(&secret));
                }
                *url = serde_json::Value::String(shown);
            }
            for map in ["env", "headers"] {
                if let Some(values) = server
                    .get_mut(map)
                    .and_then(serde_json::Value::as_object_mut)
                {
                    for v in values.values_mut() {
                        if let Some(text) = v.as_str() {
                            *v = serde_json::Value::String(mask(text));
                        }
                    }
                }
            }
        }
    }
    value
}

/// Shows only enough of a secret to recognise it.
pub fn mask(secret: &str) -> String {
    let n = secret.chars().count();
    if n <= 8 {
        return "•".repeat(n.max(4));
    }
    let tail: String = secret.chars().skip(n - 4).collect();
    let head: String = secret.chars().take(3).collect();
    format!("{head}…{tail} ({n} chars)")
}
