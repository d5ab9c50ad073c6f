//! Tools the model can call: the `Tool` trait, the registry and the one builder every entry
//! point uses, the approval gate, and the built-in tools.

pub mod approval;
pub mod danger;
pub mod emoji;
mod patch;
mod paths;
mod plan_tool;
mod read_file;
mod search_files;
mod shell;
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
use danger::Classification;

pub use patch::PatchTool;
pub use plan_tool::PlanTool;
pub use read_file::ReadFileTool;
pub use search_files::SearchFilesTool;
pub use shell::{HIDDEN_ENV, ShellTool};
pub use write_file::WriteFileTool;

/// What a tool call can see of the run.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The working directory (file tools resolve paths against it and stay inside it).
    pub cwd: PathBuf,
    /// Cancelled on Ctrl-C or when a budget runs out; long-running tools must stop.
    pub cancel: CancellationToken,
}

/// A tool failure, shown to the model as `error: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

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
    /// Source label of the untrusted wrapper around its output; `None` = not wrapped.
    fn untrusted_source(&self, _args: &Value) -> Option<String> {
        Some(self.name().to_string())
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

/// Every built-in tool name, in registration order.
pub const BUILTIN_TOOL_NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "search_files",
    "patch",
    "shell",
    crate::plan::TOOL_NAME,
];

/// Which tools to register.
#[derive(Debug, Clone, Default)]
pub struct ToolSelection {
    /// When non-empty, only these, in this order.
    pub enabled: Vec<String>,
    /// Never these.
    pub disabled: Vec<String>,
}

impl ToolSelection {
    /// True when the selection keeps the tool `name`.
    pub fn keeps(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
            && (self.enabled.is_empty() || self.enabled.iter().any(|e| e == name))
    }

    /// Refuses names that are neither built-in tools nor MCP tool names (`<server>__<tool>`,
    /// known only once the servers run).
    pub fn check_names(&self) -> Result<(), UnknownTool> {
        for name in self.enabled.iter().chain(&self.disabled) {
            if !BUILTIN_TOOL_NAMES.contains(&name.as_str()) && !name.contains("__") {
                return Err(UnknownTool(name.clone()));
            }
        }
        Ok(())
    }
}

/// A tool selection names a tool that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool \"{0}\" (available: {available})", available = BUILTIN_TOOL_NAMES.join(", "))]
pub struct UnknownTool(pub String);

/// Builds the tool registry. This is the only place tools are registered, so `run`,
/// `continue`, `repl` and every later entry point get exactly the same set. The `plan` tool is
/// registered exactly when a plan store is given. `mcp` tools (from MCP servers) follow the
/// built-in ones; one whose name is taken is left out, so they never shadow a built-in.
pub fn build_registry(
    selection: &ToolSelection,
    plan_store: Option<Arc<PlanStore>>,
    sandbox: Option<Arc<Sandbox>>,
    mcp: Vec<Arc<dyn Tool>>,
) -> Result<ToolRegistry, UnknownTool> {
    selection.check_names()?;
    let mut all: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(SearchFilesTool),
        Arc::new(PatchTool),
        Arc::new(ShellTool::new(sandbox)),
    ];
    if let Some(store) = plan_store {
        all.push(Arc::new(PlanTool::new(store)));
    }
    for tool in mcp {
        let taken = BUILTIN_TOOL_NAMES.contains(&tool.name())
            || all.iter().any(|t| t.name() == tool.name());
        if !taken {
            all.push(tool);
        }
    }
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
