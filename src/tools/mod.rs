//! Tools the model can call: the `Tool` trait, the registry and the one builder every entry
//! point uses, the approval gate, and the built-in tools.

pub mod approval;
pub mod background;
mod batch_patch;
mod batch_read;
pub mod browser;
pub mod catalog;
mod clarify;
pub mod claude_names;
mod command;
pub mod danger;
mod glob;
mod patch;
mod paths;
/// A path a tool is given, resolved against the working directory as the file tools resolve it.
pub use paths::resolve as resolve_path;
pub mod plan_tool;
mod read_file;
mod registry;
mod search_files;
mod shell;
pub mod web;
mod write_file;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use danger::Classification;

pub use crate::process_group::HIDDEN_ENV;
pub use batch_patch::BatchPatchTool;
pub use batch_read::BatchReadTool;
pub use clarify::{ClarifyTool, EXPIRED_ANSWER, NO_USER_ANSWER, answer_from_reply};
pub use glob::GlobTool;
pub use patch::PatchTool;
pub use plan_tool::PlanTool;
pub use read_file::ReadFileTool;
pub use registry::{RegistryParts, ToolRegistry, ToolSelection, UnknownTool, build_registry};
pub use search_files::SearchFilesTool;
pub use shell::ShellTool;
pub use write_file::WriteFileTool;

/// A tool's parameters from their JSON text. The same value as `json!` gives, at a small
/// part of its size in the binary (`json!` builds every map in code). A text that is not a
/// JSON object gives an empty object; `every_schema_is_an_object_with_required_fields_declared`
/// parses them all.
pub fn schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(serde_json::Map::new()))
}

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
    /// Where the call's images go (the browser's screenshot): set fresh for each call by
    /// the engine, which sends them with the call's result; none outside a run.
    pub attachments: Option<Attachments>,
}

/// The images one call attaches to its result (see [`ToolContext::attach_image`]).
pub type Attachments = Arc<std::sync::Mutex<Vec<crate::llm::ImagePart>>>;

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

    /// Attaches `image` to the call's result, sent to the model after it; false when
    /// nothing takes it (no run: the tool should say so in its text).
    pub fn attach_image(&self, image: crate::llm::ImagePart) -> bool {
        match self.attachments.as_ref().map(|a| a.lock()) {
            Some(Ok(mut images)) => {
                images.push(image);
                true
            }
            _ => false,
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
            attachments: None,
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

pub use catalog::is_external_tool_name;

#[cfg(test)]
mod tests;
