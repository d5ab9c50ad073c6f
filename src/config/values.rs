//! The resolved configuration every part of odek reads, its defaults, and the same
//! configuration for turns with nobody to ask.

use std::collections::BTreeMap;

use serde::Serialize;

use super::mcp::McpServerConfig;
use super::providers::{self, DEFAULT_BASE_URL, DEFAULT_MODEL};
use super::sections::{
    BackgroundConfig, BrowserConfig, CheckpointsConfig, EmbeddingsConfig, InstructionsConfig,
    LimitsConfig, LlmConfig, MemoryConfig, PlanningConfig, RateLimits, SandboxNetwork,
    SchedulesConfig, ServeConfig, SessionsConfig, SkillsConfig, SubagentsConfig, TELEGRAM_API_BASE,
    TelegramConfig, ToolsConfig, WebConfig, WebSearchConfig,
};
use crate::danger_policy::DangerPolicy;
use crate::plan::PlanPlacement;

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
    /// Compaction when the conversation fills the context: on or off, digest or summary.
    pub compaction: super::sections::CompactionConfig,
    /// Context window in tokens; 0 = discover from the server or the model table.
    pub context_window: u64,
    /// Plain output without ANSI colours.
    pub no_color: bool,
    /// More models the web UI's picker offers beside `model`.
    pub models: Vec<String>,
    /// `[PROVIDER:]MODEL`s a request goes on with, in order, when its retries are spent on a
    /// 429, a 5xx, an overload or a timeout (docs/FALLBACK.md).
    pub fallback_models: Vec<String>,
    /// The model takes images (image parts from Telegram photos, web UI and ACP attachments,
    /// `odek run -i` and `@image` in the terminal).
    pub images: bool,
    /// Final answers as the model wrote them (no Markdown rendering on a terminal).
    pub raw: bool,
    /// Do not read instruction files (the chain of `AGENTS.md`, its fallbacks, the global one).
    pub no_agents: bool,
    /// The chain of instruction files: fallbacks and the cap.
    pub instructions: InstructionsConfig,
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
    /// The `browser` tool (see docs/TOOLS.md).
    pub browser: BrowserConfig,
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
    /// Custom slash commands (see docs/COMMANDS.md).
    pub commands: super::sections::CommandsConfig,
    /// Scheduled jobs (see docs/SCHEDULES.md).
    pub schedules: SchedulesConfig,
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
    ) -> Result<Config, crate::danger_policy::UnknownDangerClass> {
        use std::str::FromStr;
        let mut config = self.clone();
        let policy = &mut config.dangerous;
        policy.action = None;
        policy.non_interactive = Some(crate::danger_policy::Action::Deny);
        policy
            .classes
            .retain(|_, action| *action == crate::danger_policy::Action::Deny);
        policy.allowlist.clear();
        for server in config.mcp_servers.values_mut() {
            server.auto_approve.clear();
        }
        for name in allow {
            let class = crate::danger_policy::DangerClass::from_str(name)?;
            policy
                .classes
                .entry(class)
                .or_insert(crate::danger_policy::Action::Allow);
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
            compaction: super::sections::CompactionConfig::default(),
            context_window: 0,
            no_color: false,
            images: false,
            raw: false,
            models: Vec::new(),
            fallback_models: Vec::new(),
            no_agents: false,
            instructions: InstructionsConfig {
                fallbacks: vec!["CLAUDE.md".to_string()],
                max_kb: 512,
            },
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
            browser: BrowserConfig {
                enabled: true,
                executable: String::new(),
                allow_local: "loopback".into(),
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
            commands: super::sections::CommandsConfig {
                import_claude: true,
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
