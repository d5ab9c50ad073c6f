//! The one runtime every surface runs turns through: `run`, `continue`, `repl`, and later
//! `serve` and `telegram`.
//!
//! A [`Runtime`] is a per-process factory. Built once from the resolved configuration, it
//! owns what all turns share: the model client, the redactor, the session store and the
//! event stream's writer. Each turn ([`Runtime::turn`]) gets its own engine, plan store, tool
//! registry (whose `plan` tool is bound to that store), approval gate, audit log and event
//! run context (run id, session id, terminal-event guard); a turn of a session also shares
//! that session's trust set and writes through its [`SessionHandle`], which holds the
//! session's lock. A surface supplies only its approver and its output ([`Surface`]).

mod audit;
mod commands;
mod compact;
mod fallback;
mod memory;
mod models;
mod notify;
mod pending;
pub mod process;
pub mod project_hooks;
mod session;
mod skills;
pub mod supervisor;
mod turn;

pub use audit::AuditLog;
pub use commands::{Invocation, TurnScope};
pub use compact::CompactionOutcome;
pub use process::{Process, SHUTDOWN_GRACE, StartOptions, Threads, async_runtime};
pub use session::SessionHandle;
pub use supervisor::{Approvals, Delivered, Delivery, RunHandle, Submission, Supervisor};
pub use turn::{Surface, Turn, TurnOutcome};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, SandboxNetwork, is_loopback_url};
use crate::engine::{Budgets, EngineSettings};
use crate::events::EventWriter;
use crate::llm::{ChatModel, HttpModel, HttpModelConfig, Message, RecordingModel, ReplayModel};
use crate::mcp_client::McpHub;
use crate::memory::Memory;
use crate::memory::embed::Embedder;
use crate::redact::Redactor;
use crate::sandbox::{Network, SandboxStatus, Wanted};
use crate::session::{Holder, SessionError, SessionStore};
use crate::tools::ToolSelection;

/// Where the model's answers come from.
#[derive(Debug, Clone, Default)]
pub enum ModelSource {
    /// The configured OpenAI-compatible endpoint.
    #[default]
    Http,
    /// A recorded file (`--replay`).
    Replay(PathBuf),
}

/// What a session ran on before `continue --provider` moved it.
#[derive(Debug, Clone, Default)]
pub struct Retarget {
    /// Its provider (none: a `base_url`-only configuration).
    pub provider: Option<String>,
    /// Its model.
    pub model: String,
    /// Messages whose opaque provider state was dropped.
    pub dropped: usize,
}

/// Everything the builder needs besides the configuration.
pub struct RuntimeOptions {
    /// The odek home (`~/.odek` or `$ODEK_HOME`): sessions and the config file live there.
    pub home: PathBuf,
    /// Working directory of the tools.
    pub cwd: PathBuf,
    /// HTTP endpoint or replay file.
    pub model_source: ModelSource,
    /// Also append every answer to this file (`--record`).
    pub record: Option<PathBuf>,
    /// The process's event stream (`--events-jsonl`), shared by every turn.
    pub events: Option<EventWriter>,
    /// Secret redaction for this process (see [`build_redactor`]).
    pub redactor: Arc<Redactor>,
}

impl RuntimeOptions {
    /// The options of a long-running surface (`odek serve`, `odek telegram`): the model over
    /// HTTP, nothing recorded.
    pub fn surface(
        home: PathBuf,
        cwd: PathBuf,
        events: Option<EventWriter>,
        redactor: Arc<Redactor>,
    ) -> RuntimeOptions {
        RuntimeOptions {
            home,
            cwd,
            model_source: ModelSource::Http,
            record: None,
            events,
            redactor,
        }
    }
}

/// Why a runtime, a session or a turn could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// No key for a remote endpoint.
    #[error("no API key provided for {base_url} ({where_to} in {config})")]
    MissingApiKey {
        /// The endpoint.
        base_url: String,
        /// Where a key may be given, before the file (`set ODEK_API_KEY, …, or api_key`).
        where_to: String,
        /// The global config file.
        config: String,
    },
    /// The model client could not be created.
    #[error(transparent)]
    Model(#[from] crate::llm::LlmError),
    /// The tool selection names unknown tools.
    #[error(transparent)]
    Tools(#[from] crate::tools::UnknownTool),
    /// The `hooks` section is invalid.
    #[error(transparent)]
    Hooks(crate::hooks::HooksError),
    /// The session could not be opened, created or saved (busy, missing, corrupt, I/O).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A turn was started on a session that is already running one.
    #[error("session {0} is already running a turn")]
    TurnInProgress(String),
    /// The async runtime could not be started (out of threads or memory).
    #[error("starting the async runtime: {0}")]
    AsyncRuntime(std::io::Error),
    /// A custom command's scope cannot be applied (its model on a replayed run).
    #[error(transparent)]
    Command(#[from] crate::commands::CommandError),
    /// A compaction on demand made nothing (nothing to compact, the model failed).
    #[error(transparent)]
    Compact(#[from] crate::engine::compaction::CompactError),
    /// Another model than the configured one was asked for on a replayed or recorded run.
    #[error("the model {model} cannot be asked: this run's answers are replayed or recorded")]
    ModelFixed {
        /// The model asked for.
        model: String,
    },
    /// A model's provider is unknown or has no endpoint of its own.
    #[error("the model {model}: {source}")]
    Provider {
        /// The model asked for (`PROVIDER:MODEL`).
        model: String,
        /// Why its provider cannot be used.
        source: crate::config::ConfigError,
    },
}

impl crate::error::Classified for RuntimeError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            RuntimeError::MissingApiKey { .. } => ErrorKind::Config,
            RuntimeError::Model(e) => e.kind(),
            RuntimeError::Tools(e) => e.kind(),
            RuntimeError::Hooks(e) => e.kind(),
            RuntimeError::Session(e) => e.kind(),
            RuntimeError::TurnInProgress(_) => ErrorKind::Conflict,
            RuntimeError::AsyncRuntime(_) => ErrorKind::Io,
            RuntimeError::Command(e) => e.kind(),
            RuntimeError::Compact(e) => e.kind(),
            RuntimeError::ModelFixed { .. } => ErrorKind::Usage,
            RuntimeError::Provider { source, .. } => source.kind(),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            RuntimeError::Model(e) => e.hint(),
            RuntimeError::Tools(e) => e.hint(),
            RuntimeError::Hooks(e) => e.hint(),
            RuntimeError::Session(e) => e.hint(),
            RuntimeError::Command(e) => e.hint(),
            RuntimeError::Compact(e) => e.hint(),
            RuntimeError::TurnInProgress(_) => {
                Some("wait for its turn to end, or start a new session (odek run)")
            }
            RuntimeError::MissingApiKey { .. }
            | RuntimeError::AsyncRuntime(_)
            | RuntimeError::ModelFixed { .. }
            | RuntimeError::Provider { .. } => None,
        }
    }
}

impl RuntimeError {
    /// The message without file paths (for clients of `odek serve`).
    pub fn message_without_paths(&self) -> String {
        match self {
            RuntimeError::Session(e) => e.message_without_paths(),
            RuntimeError::MissingApiKey { base_url, .. } => {
                format!("no API key provided for {base_url}")
            }
            other => other.to_string(),
        }
    }
}

/// What every turn of this process shares; see the module docs.
pub struct Runtime {
    config: Config,
    cwd: PathBuf,
    redactor: Arc<Redactor>,
    model: Arc<dyn ChatModel>,
    sessions: SessionStore,
    events: Option<EventWriter>,
    global_config: String,
    sandbox: SandboxStatus,
    warnings: Vec<String>,
    mcp: Arc<McpHub>,
    /// Slots for sub-agents, shared by every turn (`subagents.max_concurrency` in all).
    subagent_slots: Arc<tokio::sync::Semaphore>,
    /// False for a replayed model: a sub-agent would reach the real endpoint.
    can_delegate: bool,
    /// A sub-agent's: where its turns record their checkpoints (the parent's turn).
    checkpoints_for: std::sync::OnceLock<crate::protocol::subagent::CheckpointOwner>,
    /// The user's hooks (checked when the runtime is built).
    hooks: Arc<Vec<crate::hooks::Hook>>,
    /// `<home>/odek.db`, when memory is on and the database opened.
    memory: Option<Arc<Memory>>,
    /// The embeddings endpoint of hybrid ranking, when configured.
    embedder: Option<Embedder>,
    /// The `project` store's key: the project root of the working directory.
    project_key: String,
    /// The odek home (`$ODEK_HOME` or `~/.odek`).
    home: PathBuf,
    /// The skills found when the runtime was built (for its warnings), and when: handed to
    /// a first turn that starts right after, so a one-turn run reads them once.
    found_skills: std::sync::Mutex<Option<(std::time::Instant, Arc<crate::skills::Catalog>)>>,
    /// The models custom commands asked for, by name (see `commands.rs`); `None` when the
    /// answers come from a replayed file or are recorded: only the configured model is asked.
    scoped_models: Option<std::sync::Mutex<std::collections::HashMap<String, Arc<dyn ChatModel>>>>,
}

impl Runtime {
    /// Builds the runtime: the model client (HTTP, replay, recording) and the session store.
    pub fn build(config: Config, opts: RuntimeOptions) -> Result<Runtime, RuntimeError> {
        let global_config = opts
            .home
            .join(crate::config::GLOBAL_FILE)
            .display()
            .to_string();
        let model = build_model(&config, &opts, &global_config)?;
        let servers: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        tool_selection(&config)
            .check_names(&servers)
            .map_err(RuntimeError::Tools)?;
        let mut hooks =
            crate::hooks::compile(&config.hooks.events, None).map_err(RuntimeError::Hooks)?;
        let (project, mut warnings) =
            project_hooks::trusted_hooks(&opts.home, &opts.cwd, config.hooks.import_claude);
        hooks.extend(project);
        let sandbox = build_sandbox(&config, &opts, &mut warnings);
        let memory = open_memory(&config, &opts.home, &mut warnings);
        clean_left_task_files(&opts.home);
        let mut runtime = Runtime {
            embedder: memory.as_ref().and_then(|_| embedder_for(&config)),
            memory,
            project_key: crate::memory::project_key(&opts.cwd),
            subagent_slots: Arc::new(tokio::sync::Semaphore::new(
                (config.subagents.max_concurrency as usize).max(1),
            )),
            can_delegate: matches!(opts.model_source, ModelSource::Http) && opts.record.is_none(),
            checkpoints_for: std::sync::OnceLock::new(),
            hooks: Arc::new(hooks),
            mcp: Arc::new(McpHub::new(&config.mcp_servers)),
            sandbox,
            warnings,
            sessions: SessionStore::new(&opts.home, opts.redactor.clone()),
            config,
            cwd: opts.cwd,
            redactor: opts.redactor,
            model,
            events: opts.events,
            global_config,
            home: opts.home,
            found_skills: std::sync::Mutex::default(),
            scoped_models: (matches!(opts.model_source, ModelSource::Http)
                && opts.record.is_none())
            .then(std::sync::Mutex::default),
        };
        let fallbacks = runtime.fallback_warnings();
        runtime.warnings.extend(fallbacks);
        if let Some(catalog) = runtime.skills_catalog() {
            runtime.warnings.extend(catalog.warnings());
            runtime.found_skills =
                std::sync::Mutex::new(Some((std::time::Instant::now(), catalog)));
        }
        Ok(runtime)
    }

    /// The odek home.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Starts the configured MCP servers (once per process; every surface calls this before
    /// its first turn, and later calls wait for the first). Returns the warnings of servers
    /// that did not start, to the first caller only. Until it ran, turns offer no MCP tools.
    pub async fn start_mcp(&self) -> Vec<String> {
        self.mcp.start().await
    }

    /// The MCP servers of this runtime.
    pub fn mcp(&self) -> &Arc<McpHub> {
        &self.mcp
    }

    /// Uses `other`'s MCP servers and sub-agent slots instead of its own (`odek serve` builds
    /// a runtime per model; they all share the server's connections, and its children count
    /// against one `subagents.max_concurrency`).
    pub fn share_with(&mut self, other: &Runtime) {
        self.mcp = other.mcp.clone();
        self.subagent_slots = other.subagent_slots.clone();
    }

    /// The memory database, when memory is on.
    pub fn memory(&self) -> Option<&Arc<Memory>> {
        self.memory.as_ref()
    }

    /// The embeddings endpoint, when configured.
    pub fn embedder(&self) -> Option<&Embedder> {
        self.embedder.as_ref()
    }

    /// The `project` store's key of this runtime's working directory.
    pub fn project_key(&self) -> &str {
        &self.project_key
    }

    /// The model client turns of this runtime call.
    pub fn chat_model(&self) -> &Arc<dyn ChatModel> {
        &self.model
    }

    /// The resolved configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether shell commands run in the sandbox (and why not).
    pub fn sandbox(&self) -> &SandboxStatus {
        &self.sandbox
    }

    /// Lines the surface should show once: what the sandbox cannot do here.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The working directory of the tools.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The first messages of a new session on every surface: the system prompt and, unless
    /// `no_agents`, the chain of instruction files (docs/INSTRUCTIONS.md), one message each;
    /// with the warnings to show when a file was left out.
    pub fn first_messages(&self) -> (Vec<Message>, Option<crate::instructions::Warnings>) {
        self.first_messages_on(None)
    }

    /// [`Runtime::first_messages`] with what a surface tells the model in its system prompt
    /// (Telegram: how to send the user a file).
    pub fn first_messages_on(
        &self,
        surface: Option<&str>,
    ) -> (Vec<Message>, Option<crate::instructions::Warnings>) {
        let mut head = vec![Message::system(crate::prompt::system_prompt(
            &self.config,
            &self.cwd,
            surface,
        ))];
        let chain = self.instructions();
        head.extend(chain.messages());
        (head, chain.warning())
    }

    /// The chain of instruction files a new session here starts with (none with
    /// `no_agents`).
    pub fn instructions(&self) -> crate::instructions::Chain {
        if self.config.no_agents {
            return crate::instructions::Chain::default();
        }
        let opts =
            crate::instructions::ChainOptions::from_config(&self.home, &self.cwd, &self.config);
        crate::instructions::discover(&opts)
    }

    /// What attaches the nested instruction files to the tool results of a turn (none with
    /// `no_agents`).
    fn nested_instructions(&self) -> Option<Arc<dyn crate::engine::ResultNotes>> {
        (!self.config.no_agents).then(|| -> Arc<dyn crate::engine::ResultNotes> {
            Arc::new(crate::instructions::Nested::new(
                &self.cwd,
                &self.config.instructions.fallbacks,
            ))
        })
    }

    /// True when turns keep a plan: planning is enabled and the tool selection keeps `plan`.
    pub fn planning_enabled(&self) -> bool {
        self.config.planning.enabled
            && tool_selection(&self.config).keeps(crate::tools::plan_tool::TOOL_NAME)
    }

    /// This process's secret redactor.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// The session store (writes are redacted with this process's redactor).
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// The process's event stream, when there is one.
    pub fn events(&self) -> Option<&EventWriter> {
        self.events.as_ref()
    }

    /// A new session, started by `origin` (`cli`, `serve`, `telegram`) and held for writing
    /// by `holder` (e.g. `odek run`) until the handle is dropped. `messages` are its first
    /// messages (system prompt, injections); nothing is written before its first turn.
    pub fn new_session(
        &self,
        task: &str,
        messages: Vec<Message>,
        origin: &str,
        holder: &str,
    ) -> Result<Arc<SessionHandle>, RuntimeError> {
        self.new_child_session(task, messages, origin, holder, None)
    }

    /// [`Runtime::new_session`] recording the session that delegated it (a sub-agent's).
    pub fn new_child_session(
        &self,
        task: &str,
        messages: Vec<Message>,
        origin: &str,
        holder: &str,
        parent: Option<&str>,
    ) -> Result<Arc<SessionHandle>, RuntimeError> {
        self.create_session(task, messages, origin, holder, |s| {
            s.parent_session = parent.map(str::to_string);
        })
    }

    /// [`Runtime::new_session`] for a run of the scheduled job `job` (`origin: "schedule"`).
    pub fn new_scheduled_session(
        &self,
        task: &str,
        messages: Vec<Message>,
        holder: &str,
        job: &str,
    ) -> Result<Arc<SessionHandle>, RuntimeError> {
        self.create_session(
            task,
            messages,
            crate::session::ORIGIN_SCHEDULE,
            holder,
            |s| {
                s.schedule = Some(job.to_string());
            },
        )
    }

    fn create_session(
        &self,
        task: &str,
        messages: Vec<Message>,
        origin: &str,
        holder: &str,
        lineage: impl FnOnce(&mut crate::session::Session),
    ) -> Result<Arc<SessionHandle>, RuntimeError> {
        let mut session = self.sessions.new_session(
            &self.config.model,
            Some(&self.config.base_url),
            task,
            messages,
        );
        session.origin = Some(origin.to_string());
        session.provider = self.config.provider.clone();
        lineage(&mut session);
        let live = session.messages.clone();
        let mut writer = self
            .sessions
            .create(session, &Holder::this_process(holder))?;
        writer.set_posture(
            self.sandbox.confines_commands(),
            self.config.dangerous_override.as_deref(),
        );
        // Every turn's engine redacts tool results with `self.redactor`, the store's too.
        writer.trust_tool_result_redaction();
        Ok(Arc::new(SessionHandle::new(writer, live, None)))
    }

    /// A saved session held for writing by `holder`, or refused at once with
    /// `session <id> is in use by <holder> (pid N)` when another writer holds it.
    /// Its turns ask the model it was saved with (see `models.rs`).
    pub fn open_session(&self, id: &str, holder: &str) -> Result<Arc<SessionHandle>, RuntimeError> {
        let handle = self.open_session_with(id, holder, |_| {})?;
        handle.set_model(self.saved_model(&handle.saved()));
        Ok(handle)
    }

    /// Opens a saved session for writing and moves it to this runtime's provider and model
    /// (`continue --provider`): what the turn's end saves names them, and the old provider's
    /// opaque state is dropped. Returns what it ran on before.
    pub fn open_session_retargeted(
        &self,
        id: &str,
        holder: &str,
    ) -> Result<(Arc<SessionHandle>, Retarget), RuntimeError> {
        let mut retarget = Retarget::default();
        let handle = self.open_session_with(id, holder, |writer| {
            let before = writer.session();
            retarget.provider = before.provider.clone();
            retarget.model = before.model.clone();
            let config = &self.config;
            retarget.dropped =
                writer.retarget(config.provider.as_deref(), &config.model, &config.base_url);
        })?;
        Ok((handle, retarget))
    }

    fn open_session_with(
        &self,
        id: &str,
        holder: &str,
        adjust: impl FnOnce(&mut crate::session::SessionWriter),
    ) -> Result<Arc<SessionHandle>, RuntimeError> {
        let mut writer = self.sessions.open(id, &Holder::this_process(holder))?;
        adjust(&mut writer);
        writer.set_posture(
            self.sandbox.confines_commands(),
            self.config.dangerous_override.as_deref(),
        );
        // Every turn's engine redacts tool results with `self.redactor`, the store's too.
        writer.trust_tool_result_redaction();
        let live = writer.session().messages.clone();
        let plan = writer.session().plan.clone();
        Ok(Arc::new(SessionHandle::new(writer, live, plan)))
    }

    fn engine_settings(&self) -> EngineSettings {
        let config = &self.config;
        EngineSettings {
            max_iterations: config.max_iterations,
            max_tool_parallel: config.max_tool_parallel as usize,
            stream: config.stream,
            budgets: Budgets {
                max_runtime_seconds: config.limits.max_runtime_seconds,
                max_tool_calls: config.limits.max_tool_calls,
                max_input_tokens: config.limits.max_input_tokens,
                max_output_tokens: config.limits.max_output_tokens,
                max_cost_usd: config.limits.max_cost_usd,
                price: crate::llm::pricing::price_for(&config.model, &config.pricing),
            },
            cwd: self.cwd.clone(),
            context_window: config.context_window,
            compaction: config.compaction,
            plan_placement: config.planning.placement,
            images: config.images,
            pricing: config.pricing.clone(),
        }
    }
}

/// The memory database when `memory.enabled`; a database that cannot be used turns memory
/// off for this process with a warning (the run goes on).
fn open_memory(config: &Config, home: &Path, warnings: &mut Vec<String>) -> Option<Arc<Memory>> {
    if !config.memory.enabled {
        return None;
    }
    match Memory::open(home) {
        Ok(m) => Some(Arc::new(m)),
        Err(e) => {
            warnings.push(format!("odek: warning: memory is off for this run: {e}"));
            None
        }
    }
}

/// The embeddings endpoint (`memory.embeddings`): its own key, else the model endpoint's
/// key when it is the same origin (never sent to another one).
pub fn embedder_for(config: &Config) -> Option<Embedder> {
    let e = &config.memory.embeddings;
    let key = e.api_key.clone().or_else(|| {
        (origin_of(&e.base_url) == origin_of(&config.base_url))
            .then(|| config.api_key.clone())
            .flatten()
    });
    Embedder::new(&e.base_url, &e.model, key)
}

/// `scheme://host:port` of a URL (lower-cased), for comparing endpoints.
fn origin_of(url: &str) -> String {
    let url = url.trim().to_ascii_lowercase();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", &url));
    let authority = rest.split('/').next().unwrap_or("");
    format!("{scheme}://{authority}")
}

/// The sandbox of this process's shell commands; `warnings` gets what it cannot do here
/// (none at all, a protected odek home it leaves writable, …).
fn build_sandbox(
    config: &Config,
    opts: &RuntimeOptions,
    warnings: &mut Vec<String>,
) -> SandboxStatus {
    let refused = crate::sandbox::writable_places(&opts.cwd, &config.sandbox_allow_write);
    crate::process_group::resolve_trusted_programs(&refused);
    if config.checkpoints.enabled {
        warn_of_refused_git(&refused, warnings);
    }
    sandbox_status(config, &opts.cwd, &opts.home, warnings)
}

/// The sandbox `config` asks for, for shell commands run in `cwd` with the odek home
/// `home` (kept out of their reach, with the configuration file in it wherever that really
/// is); `warnings` gets what it cannot do here.
pub fn sandbox_status(
    config: &Config,
    cwd: &Path,
    home: &Path,
    warnings: &mut Vec<String>,
) -> SandboxStatus {
    let network = match config.sandbox_network {
        SandboxNetwork::Allow => Network::Allow,
        SandboxNetwork::None => Network::None,
    };
    SandboxStatus::new(
        Wanted {
            on: config.sandbox,
            required: config.sandbox_required,
            cwd,
            allow_write: &config.sandbox_allow_write,
            network,
            protected: &[home.to_path_buf(), home.join(crate::config::GLOBAL_FILE)],
        },
        warnings,
    )
}

/// One warning when the only `git` on `PATH` lies where shell commands may write (an
/// activated `.venv/bin`): odek does not run it, so shell commands take no checkpoint.
fn warn_of_refused_git(refused: &[std::path::PathBuf], warnings: &mut Vec<String>) {
    use crate::process_group::{TrustedProgram, find_in_path, trusted_program};
    let path = std::env::var_os("PATH").unwrap_or_default();
    if trusted_program(TrustedProgram::Git).is_some() {
        return;
    }
    if let Some(git) = find_in_path("git", &path, &[]) {
        warnings.push(format!(
            "odek: warning: the only git on PATH, {}, lies where shell commands may write (beneath {}), so odek does not run it and shell commands' changes are not checkpointed",
            git.display(),
            refused
                .iter()
                .find(|place| git.starts_with(place))
                .map_or_else(|| "a refused folder".into(), |place| place.display().to_string())
        ));
    }
}

/// The tools this configuration registers.
fn tool_selection(config: &Config) -> ToolSelection {
    ToolSelection::from_config(&config.tools)
}

fn build_model(
    config: &Config,
    opts: &RuntimeOptions,
    global_config: &str,
) -> Result<Arc<dyn ChatModel>, RuntimeError> {
    let inner: Box<dyn ChatModel> = match &opts.model_source {
        ModelSource::Replay(path) => Box::new(ReplayModel::load(path)?),
        ModelSource::Http => Box::new(http_model(config, global_config)?),
    };
    Ok(match &opts.record {
        Some(path) => Arc::new(RecordingModel::create(BoxedModel(inner), path.clone())?),
        None => Arc::from(inner),
    })
}

fn http_model(config: &Config, global_config: &str) -> Result<HttpModel, RuntimeError> {
    if config.api_key.is_none() && !is_loopback_url(&config.base_url) {
        return Err(RuntimeError::MissingApiKey {
            base_url: config.base_url.clone(),
            where_to: where_keys_go(config),
            config: global_config.to_string(),
        });
    }
    let (format, headers) = config.wire();
    let mut http = HttpModelConfig::new(config.base_url.clone(), config.model.clone());
    http.format = format;
    http.headers = headers;
    http.api_key = config.api_key.clone();
    http.temperature = config.temperature;
    if config.thinking.is_some() {
        http.thinking = config.thinking.clone();
    }
    http.request_timeout = Duration::from_secs(config.llm.timeout_seconds);
    http.stream_idle_timeout = Duration::from_secs(config.llm.stream_idle_timeout_seconds);
    http.max_attempts = config.llm.max_attempts;
    http.backoff_base = Duration::from_millis(config.llm.retry_initial_delay_ms);
    Ok(HttpModel::new(http)?)
}

/// Where the key of the configured provider may be given (the missing key's message).
fn where_keys_go(config: &Config) -> String {
    let Some(id) = config.provider.as_deref() else {
        return "set ODEK_API_KEY, DEEPSEEK_API_KEY or OPENAI_API_KEY, or api_key".into();
    };
    match crate::config::providers::built_in(id).and_then(|p| p.key_env) {
        Some(var) => format!("set {var} or ODEK_API_KEY, or providers.{id}.api_key"),
        None => format!("set ODEK_API_KEY, or providers.{id}.api_key"),
    }
}

/// Lets a boxed model be wrapped by the generic recorder.
struct BoxedModel(Box<dyn ChatModel>);

#[async_trait::async_trait]
impl ChatModel for BoxedModel {
    fn model_name(&self) -> &str {
        self.0.model_name()
    }

    async fn complete(
        &self,
        request: &crate::llm::ChatRequest<'_>,
        on_delta: Option<crate::llm::DeltaSink<'_>>,
    ) -> Result<crate::llm::ChatResponse, crate::llm::LlmError> {
        self.0.complete(request, on_delta).await
    }

    async fn context_window(&self) -> Option<crate::llm::WindowSize> {
        self.0.context_window().await
    }

    async fn listed_models(&self) -> Option<Vec<String>> {
        self.0.listed_models().await
    }
}

/// Removes, once a process, the sub-agent task files a parent killed outright left behind.
fn clean_left_task_files(home: &std::path::Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        crate::subagent::clean_task_files(home);
    });
}

/// The redactor for this process: the configured API key and every secret-looking
/// environment value, plus the built-in patterns.
pub fn build_redactor(config: &Config) -> Arc<Redactor> {
    build_redactor_with(config, &[])
}

/// [`build_redactor`] that also hides `extra` secrets of this process (the server's token).
pub fn build_redactor_with(config: &Config, extra: &[&str]) -> Arc<Redactor> {
    let mut r = Redactor::new();
    for secret in extra {
        r.add_secret(secret);
    }
    // The keys odek holds: redacted everywhere, and no program it starts gets a variable
    // that holds one.
    let provider_keys = config.providers.values().map(|p| &p.api_key);
    for key in [
        &config.api_key,
        &config.telegram.bot_token,
        &config.memory.embeddings.api_key,
    ]
    .into_iter()
    .chain(provider_keys)
    .flatten()
    {
        r.add_secret(key);
        crate::process_group::register_key(key);
    }
    // A provider's headers are keys too: redacted, and the variables they were substituted
    // from (`${GW_HDR}`) kept from every program odek starts.
    for value in config.providers.values().flat_map(|p| p.headers.values()) {
        r.add_secret(value);
        crate::process_group::register_key(value);
        if let Some((_scheme, credential)) = value.split_once(' ') {
            r.add_secret(credential);
            crate::process_group::register_key(credential);
        }
    }
    for server in config.mcp_servers.values() {
        r.add_secrets_from_env(server.env.clone());
        for secret in server.url_secrets() {
            r.add_secret(&secret);
        }
        for value in server.headers.values() {
            r.add_secret(value);
            if let Some((_scheme, credential)) = value.split_once(' ') {
                r.add_secret(credential);
            }
        }
    }
    r.add_secrets_from_env(std::env::vars());
    Arc::new(r)
}

/// Why the supervisor refused.
#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    /// Shutdown has begun.
    #[error("odek is shutting down")]
    ShuttingDown,
    /// The turn could not be built (or the session runs one already).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// No such run (or it was forgotten).
    #[error("no run {0}")]
    NoRun(String),
    /// No such approval.
    #[error("no approval {0}")]
    NoApproval(String),
    /// The approval was closed already.
    #[error("approval {id} is already {status}")]
    ApprovalClosed {
        /// The approval.
        id: String,
        /// How it was closed.
        status: &'static str,
    },
    /// No such question.
    #[error("no question {0}")]
    NoQuestion(String),
    /// The question was closed already.
    #[error("question {id} is already {status}")]
    QuestionClosed {
        /// The question.
        id: String,
        /// How it was closed.
        status: &'static str,
    },
}

impl crate::error::Classified for SupervisorError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            SupervisorError::Runtime(e) => e.kind(),
            SupervisorError::NoRun(_)
            | SupervisorError::NoApproval(_)
            | SupervisorError::NoQuestion(_) => ErrorKind::NotFound,
            SupervisorError::ShuttingDown
            | SupervisorError::ApprovalClosed { .. }
            | SupervisorError::QuestionClosed { .. } => ErrorKind::Conflict,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            SupervisorError::Runtime(e) => e.hint(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
