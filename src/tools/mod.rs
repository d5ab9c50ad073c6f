//! Tools the model can call: the `Tool` trait, the registry and the one builder every entry
//! point uses, the approval gate, and the built-in tools.

pub mod approval;
pub mod background;
mod batch_patch;
mod batch_read;
pub mod catalog;
mod clarify;
mod command;
pub mod danger;
mod glob;
mod patch;
mod paths;
pub mod plan_tool;
mod read_file;
mod search_files;
mod shell;
pub mod web;
mod write_file;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::llm::ToolDef;
use crate::plan::PlanStore;
use crate::sandbox::Sandbox;
use approval::Approver;
use danger::Classification;

pub use crate::process_group::HIDDEN_ENV;
pub use batch_patch::BatchPatchTool;
pub use batch_read::BatchReadTool;
pub use clarify::{ClarifyTool, EXPIRED_ANSWER, NO_USER_ANSWER, answer_from_reply};
pub use glob::GlobTool;
pub use patch::PatchTool;
pub use plan_tool::PlanTool;
pub use read_file::ReadFileTool;
pub use search_files::SearchFilesTool;
pub use shell::ShellTool;
pub use write_file::WriteFileTool;

/// Results longer than this keep only a head and a tail (SPEC §4), unless the tool allows
/// more ([`Tool::output_limit`]).
pub const MAX_TOOL_OUTPUT_BYTES: usize = 4096;

/// Progress a tool reports while it runs; the engine turns it into events and terminal
/// lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolReport {
    /// A sub-agent started.
    SubagentStarted {
        /// Its place in the batch (1-based).
        index: usize,
        /// The batch's size.
        total: usize,
    },
    /// A sub-agent ended.
    SubagentFinished {
        /// Its place in the batch (1-based).
        index: usize,
        /// The batch's size.
        total: usize,
        /// `ok`, `error`, `timeout` or `cancelled`.
        status: String,
        /// Its model calls.
        iterations: u32,
        /// Its tool calls.
        tool_calls: u64,
        /// Its prompt tokens.
        input_tokens: u64,
        /// Its completion tokens.
        output_tokens: u64,
        /// How long it ran.
        duration_ms: u64,
    },
    /// The call's checkpoint was recorded (`odek rewind --to` its number undoes the call).
    Checkpoint(crate::checkpoint::Taken),
}

/// Where a call's [`ToolReport`]s go.
#[derive(Clone)]
pub struct Reporter(pub Arc<dyn Fn(&ToolReport) + Send + Sync>);

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter")
    }
}

/// What a tool call can see of the run.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The working directory (file tools resolve paths against it and stay inside it).
    pub cwd: PathBuf,
    /// Cancelled on Ctrl-C or when a budget runs out; long-running tools must stop.
    pub cancel: CancellationToken,
    /// The run's redactor, for tools that cut their own output (each part is redacted
    /// before it is cut, so no piece of a secret survives a cut unrecognised).
    pub redactor: Arc<crate::redact::Redactor>,
    /// Tokens the call spent on models of its own (a sub-agent's); the engine adds them to
    /// the run's usage and budgets after the batch.
    pub spent: Arc<std::sync::Mutex<crate::llm::Usage>>,
    /// Where the call reports progress (none outside a run).
    pub report: Option<Reporter>,
    /// The session's checkpoints: a file tool captures what it changes before writing
    /// (none: an ephemeral run, or `checkpoints.enabled` off).
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The editor's files, when the surface is an editor that offers them.
    pub files: Option<Arc<dyn EditorFiles>>,
    /// What is left of the run's cost budget as the batch starts (none: no `max_cost_usd`,
    /// or the model's price is unknown); a tool that runs models of its own keeps within it.
    pub cost_left: Option<CostLeft>,
}

/// What is left of a run's `limits.max_cost_usd`, and the price its tokens are counted at.
#[derive(Debug, Clone, Copy)]
pub struct CostLeft {
    /// US dollars left (never below 0).
    pub usd: f64,
    /// The run's model's price.
    pub price: crate::llm::pricing::Price,
}

/// The files as an editor has them (`odek acp` with a client that declares `fs`): reads
/// see its unsaved buffers, writes land in its undo history. The file tools go through it
/// for files they read or change — paths absolute, already resolved and classified as
/// for the local file system; checkpoints are still taken from the disk.
#[async_trait::async_trait]
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// Whether the editor reads files for the tools.
    fn reads(&self) -> bool;
    /// Whether the editor writes files for the tools.
    fn writes(&self) -> bool;
    /// The text of `path` as the editor has it, or why not.
    async fn read(&self, path: &std::path::Path) -> Result<String, EditorFilesError>;
    /// Writes `text` to `path` through the editor, or says why not.
    async fn write(&self, path: &std::path::Path, text: &str) -> Result<(), EditorFilesError>;
}

/// Why the editor did not read or write a file for a tool (the tool's error names the file).
#[derive(Debug, thiserror::Error)]
pub enum EditorFilesError {
    /// The editor answered the request with an error: its own message.
    #[error("{0}")]
    Refused(String),
    /// The editor's answer to a read held no text.
    #[error("the editor's answer has no text")]
    NoText,
}

impl crate::error::Classified for EditorFilesError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Remote
    }
}

/// The editor's files of a call, when it has them.
pub type Files<'a> = Option<&'a Arc<dyn EditorFiles>>;

impl ToolContext {
    /// Reports progress of this call.
    pub fn report(&self, report: ToolReport) {
        if let Some(Reporter(hear)) = &self.report {
            hear(&report);
        }
    }

    /// The checkpoint of one call of `tool` (none when checkpoints are off).
    pub fn checkpoint(&self, tool: &str) -> Option<crate::checkpoint::CallCheckpoint> {
        self.checkpoints.as_ref().map(|c| c.begin(tool))
    }

    /// Reports what the call's checkpoint holds, when it captured anything.
    pub fn report_checkpoint(&self, checkpoint: Option<&crate::checkpoint::CallCheckpoint>) {
        if let Some(taken) = checkpoint.and_then(|c| c.taken()) {
            self.report(ToolReport::Checkpoint(taken));
        }
    }

    /// Adds tokens spent on the call's own model calls to the run's usage.
    pub fn spend(&self, usage: &crate::llm::Usage) {
        if let Ok(mut spent) = self.spent.lock() {
            spent.add(usage);
        }
    }
}

#[cfg(test)]
impl ToolContext {
    /// A context for tests: `cwd`, a fresh token, a fresh redactor.
    pub fn in_dir(cwd: &std::path::Path) -> Self {
        ToolContext {
            cwd: cwd.to_path_buf(),
            cancel: CancellationToken::new(),
            redactor: Arc::new(crate::redact::Redactor::new()),
            spent: Arc::default(),
            report: None,
            checkpoints: None,
            files: None,
            cost_left: None,
        }
    }
}

/// Whether a turn has taken in external content — results of `web_fetch`, `web_search`, MCP
/// tools and sub-agents ([`Tool::external`]), or files a person sent through a chat or the web
/// UI. Memory writes of such a turn wait for review (SPEC §14, "External content taints").
#[derive(Debug, Default)]
pub struct Taint {
    sources: std::sync::Mutex<Vec<String>>,
    /// Tools that read files this turn (`read_file`, `shell`, …).
    files: std::sync::Mutex<Vec<String>>,
}

impl Taint {
    /// A taint already marked by `source` (a session that took in external content before).
    pub fn marked(source: &str) -> Self {
        let taint = Taint::default();
        taint.mark(source);
        taint
    }

    /// Records external content from `source` (a tool's name, `attachment`, …).
    pub fn mark(&self, source: &str) {
        if let Ok(mut sources) = self.sources.lock()
            && !sources.iter().any(|s| s == source)
        {
            sources.push(source.to_string());
        }
    }

    /// True once anything external came in.
    pub fn is_external(&self) -> bool {
        self.sources.lock().map(|s| !s.is_empty()).unwrap_or(true)
    }

    /// Where it came from, in the order first seen.
    pub fn sources(&self) -> Vec<String> {
        self.sources.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Records that `tool` read files: a repository's files are not the user's word, so
    /// the turn's writes to the user store wait for review.
    pub fn mark_files(&self, tool: &str) {
        if let Ok(mut files) = self.files.lock()
            && !files.iter().any(|s| s == tool)
        {
            files.push(tool.to_string());
        }
    }

    /// The tools that read files this turn (fails closed: a poisoned lock says `?`).
    pub fn file_sources(&self) -> Vec<String> {
        self.files
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|_| vec!["?".into()])
    }
}

/// A tool failure, shown to the model as `error: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// A tool's failure is answered to the model, which asked for something that cannot be done.
impl crate::error::Classified for ToolError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

impl ToolError {
    /// A tool error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

/// One tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls it by.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// JSON schema of its arguments.
    fn parameters(&self) -> Value;
    /// Danger classification of one call; `None` = never needs approval.
    fn classify(&self, _args: &Value, _ctx: &ToolContext) -> Option<Classification> {
        None
    }
    /// The shell command of a call, so the policy's allow/deny lists can apply.
    fn command(&self, _args: &Value) -> Option<String> {
        None
    }
    /// True when the user approved its calls ahead (an MCP server's `auto_approve`): a call
    /// the policy would ask about runs without asking; one it denies (every class but
    /// `safe` in a read-only session) stays denied.
    fn approved_ahead(&self) -> bool {
        false
    }
    /// Source label of the untrusted wrapper around its output; `None` = not wrapped.
    fn untrusted_source(&self, _args: &Value) -> Option<String> {
        Some(self.name().to_string())
    }
    /// True when its results come from outside the user's machine and trust (the web, MCP
    /// servers, sub-agents): a turn that ran it is tainted ([`Taint`]). Odek's own tools
    /// say so in their row of the tool table ([`catalog`]).
    fn external(&self) -> bool {
        catalog::row_of(self.name()).is_some_and(|row| row.external)
    }
    /// True when its results are what files hold: after it, writes to the user's memory
    /// store wait for review ([`Taint::mark_files`]).
    fn reads_files(&self) -> bool {
        catalog::row_of(self.name()).is_some_and(|row| row.reads_files)
    }
    /// A few words about a call for the terminal line (path, command, …).
    fn summary(&self, _args: &Value) -> String {
        String::new()
    }
    /// Structured summary of a call for events (`args_summary`); never raw content. The
    /// engine adds the call's `class` (from [`Tool::classify`], classified once per call).
    fn event_summary(&self, _args: &Value) -> Option<Value> {
        None
    }
    /// How this tool names arguments that are not JSON, before the engine's refusal (the
    /// plan tool's contract says `plan: parse args: <reason>`); `None` = the refusal alone.
    fn invalid_arguments(&self, _reason: &serde_json::Error) -> Option<String> {
        None
    }
    /// True when calls of this tool within one batch must run one at a time, in call order
    /// (the plan: an `update` riding the same batch as its `create` must see the new plan).
    fn runs_in_call_order(&self) -> bool {
        false
    }
    /// The longest result the model gets before the engine keeps only its head and tail
    /// (SPEC §4: 4096 bytes). Tools that return several results at once (one per file) or
    /// cap their own output (`web_fetch`'s `max_chars`) allow more.
    fn output_limit(&self, _args: &Value) -> usize {
        MAX_TOOL_OUTPUT_BYTES
    }
    /// Runs the call. `args` is the raw JSON text the model sent.
    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError>;
}

/// Decodes a tool's JSON arguments into its typed form, with an error the model can act on.
pub fn decode_args<T: DeserializeOwned>(tool: &str, args: &str) -> Result<T, ToolError> {
    let text = if args.trim().is_empty() { "{}" } else { args };
    serde_json::from_str(text).map_err(|e| ToolError(format!("{tool}: invalid arguments: {e}")))
}

/// The registered tools, in a stable order (prompt caches depend on it).
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    defs: Vec<ToolDef>,
}

impl ToolRegistry {
    /// A registry of the given tools, in this order.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name().to_string(), i))
            .collect();
        let defs = tools
            .iter()
            .map(|t| ToolDef {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
            })
            .collect();
        ToolRegistry { tools, index, defs }
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Definitions sent to the model, in registration order.
    pub fn defs(&self) -> &[ToolDef] {
        &self.defs
    }

    /// Names in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }
}

pub use catalog::is_external_tool_name;

/// Which tools to register.
#[derive(Debug, Clone, Default)]
pub struct ToolSelection {
    /// When non-empty, only these, in this order.
    pub enabled: Vec<String>,
    /// Never these.
    pub disabled: Vec<String>,
}

impl ToolSelection {
    /// The selection the `tools` section of a configuration makes.
    pub fn from_config(tools: &crate::config::ToolsConfig) -> Self {
        ToolSelection {
            enabled: tools.enabled.clone(),
            disabled: tools.disabled.clone(),
        }
    }

    /// True when the selection keeps the tool `name`.
    pub fn keeps(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
            && (self.enabled.is_empty() || self.enabled.iter().any(|e| e == name))
    }

    /// Refuses names that are neither built-in tools nor tools of a configured MCP server
    /// (`<server>__<tool>`; which tools a server has is known only once it runs).
    pub fn check_names(&self, mcp_servers: &[&str]) -> Result<(), UnknownTool> {
        for name in self.enabled.iter().chain(&self.disabled) {
            let of_a_server = name
                .split_once(catalog::MCP_SEPARATOR)
                .is_some_and(|(server, _)| mcp_servers.contains(&server));
            if !catalog::is_builtin(name) && !of_a_server {
                let mut known = builtin_names();
                known.extend(
                    mcp_servers
                        .iter()
                        .map(|s| format!("{s}{}*", catalog::MCP_SEPARATOR)),
                );
                return Err(UnknownTool::new(name, &known));
            }
        }
        Ok(())
    }

    /// Refuses, once the tools are known, a name that is neither built in nor a tool of a
    /// running MCP server (a name of a server that is not running was accepted by
    /// [`ToolSelection::check_names`]: its failure to start was reported already).
    fn check_against(&self, all: &[Arc<dyn Tool>]) -> Result<(), UnknownTool> {
        for name in self.enabled.iter().chain(&self.disabled) {
            if catalog::is_builtin(name) || all.iter().any(|t| t.name() == name) {
                continue;
            }
            let server_running =
                name.split_once(catalog::MCP_SEPARATOR)
                    .is_some_and(|(server, _)| {
                        let prefix = format!("{server}{}", catalog::MCP_SEPARATOR);
                        all.iter().any(|t| t.name().starts_with(&prefix))
                    });
            if server_running || !name.contains(catalog::MCP_SEPARATOR) {
                let mut known = builtin_names();
                known.extend(
                    all.iter()
                        .map(|t| t.name().to_string())
                        .filter(|n| !catalog::is_builtin(n)),
                );
                return Err(UnknownTool::new(name, &known));
            }
        }
        Ok(())
    }
}

/// The names of odek's own tools, in registration order.
fn builtin_names() -> Vec<String> {
    catalog::TOOLS.iter().map(|r| r.name.to_string()).collect()
}

/// A tool selection names a tool that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool \"{name}\" (available: {available})")]
pub struct UnknownTool {
    /// The name given.
    pub name: String,
    /// The names that would have been accepted, comma-separated.
    pub available: String,
}

impl crate::error::Classified for UnknownTool {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "name tools as listed in docs/TOOLS.md (tools.enabled, tools.disabled, --tool, --no-tool)",
        )
    }
}

impl UnknownTool {
    fn new(name: &str, known: &[String]) -> Self {
        UnknownTool {
            name: name.to_string(),
            available: known.join(", "),
        }
    }
}

/// Everything besides the selection that decides the tools of a turn.
#[derive(Clone, Default)]
pub struct RegistryParts {
    /// The turn's plan store: the `plan` tool exists exactly when there is one.
    pub plan: Option<Arc<PlanStore>>,
    /// The sandbox shell commands run in.
    pub sandbox: Option<Arc<Sandbox>>,
    /// Tools of the running MCP servers.
    pub mcp: Vec<Arc<dyn Tool>>,
    /// What `web_fetch` may reach without asking, and its time limit.
    pub web: Arc<web::WebSettings>,
    /// The SearXNG instance of `web_search`: the tool exists exactly when there is one.
    pub search: Option<Arc<web::SearchSettings>>,
    /// Who answers `clarify` (the surface's approver); nobody = the model decides alone.
    pub asker: Option<Arc<dyn Approver>>,
    /// `delegate_tasks`, where delegation is allowed (never inside a sub-agent).
    pub delegate: Option<Arc<dyn Tool>>,
    /// `memory` and `session_search`, when memory is on.
    pub memory: Vec<Arc<dyn Tool>>,
    /// `skill_load` and `skill_list`, when skills are on and one is offered.
    pub skills: Vec<Arc<dyn Tool>>,
    /// The session's background jobs: `shell`'s `background` and the `background` tool
    /// exist exactly when there are.
    pub jobs: Option<Arc<background::Jobs>>,
}

/// Builds the tool registry. This is the only place tools are registered, so `run`,
/// `continue`, `repl` and every later entry point get exactly the same set. `mcp` tools
/// follow the built-in ones; one whose name is taken is left out, so they never shadow a
/// built-in.
pub fn build_registry(
    selection: &ToolSelection,
    parts: RegistryParts,
) -> Result<ToolRegistry, UnknownTool> {
    let mut all: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(SearchFilesTool),
        Arc::new(PatchTool),
        Arc::new(GlobTool),
        Arc::new(BatchReadTool),
        Arc::new(BatchPatchTool),
        Arc::new(ShellTool::new(parts.sandbox, parts.jobs.clone())),
    ];
    if let Some(jobs) = parts.jobs.filter(|_| selection.keeps("shell")) {
        all.push(Arc::new(background::BackgroundTool::new(jobs)));
    }
    all.extend(parts.delegate);
    all.push(Arc::new(web::WebFetchTool::new(parts.web)));
    if let Some(search) = parts.search {
        all.push(Arc::new(web::WebSearchTool::new(search)));
    }
    all.push(Arc::new(ClarifyTool::new(parts.asker)));
    all.extend(parts.memory);
    all.extend(parts.skills);
    if let Some(store) = parts.plan {
        all.push(Arc::new(PlanTool::new(store)));
    }
    for tool in parts.mcp {
        let taken = catalog::is_builtin(tool.name()) || all.iter().any(|t| t.name() == tool.name());
        if !taken {
            all.push(tool);
        }
    }
    selection.check_against(&all)?;
    let chosen: Vec<Arc<dyn Tool>> = if selection.enabled.is_empty() {
        all.into_iter()
            .filter(|t| selection.keeps(t.name()))
            .collect()
    } else {
        selection
            .enabled
            .iter()
            .filter(|name| selection.keeps(name))
            .filter_map(|name| all.iter().find(|t| t.name() == name).cloned())
            .collect()
    };
    Ok(ToolRegistry::new(chosen))
}

#[cfg(test)]
mod tests;
