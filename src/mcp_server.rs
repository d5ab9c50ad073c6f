//! odek as an MCP server (`odek mcp serve`): its built-in tools to another agent or editor,
//! through `rmcp`'s server side, plus `run_task`, a whole odek turn.
//!
//! Every call is a call of odek's own: the same registry, gate, sandbox, redaction and
//! untrusted wrapping as a turn's, with nobody to ask — what would ask is denied unless its
//! class was allowed (`--allow CLASS`), approvals given ahead for a person (allowlist, MCP
//! `auto_approve`) do not apply, and shell commands run sandboxed. Tools that need a person
//! or a conversation (`plan`, `clarify`, `delegate_tasks`, memory, skills) and the tools of
//! odek's own MCP servers are not offered.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::engine::NoopObserver;
use crate::llm::{Message, ToolCall, ToolDef};
use crate::runtime::{Approvals, Runtime, RuntimeError, Submission, Supervisor, Surface};

/// The tool that runs a whole turn.
pub const RUN_TASK: &str = "run_task";

/// Who holds a session `run_task` started.
const HOLDER: &str = "odek mcp serve";

/// Origin of the sessions `run_task` starts.
pub const ORIGIN_MCP: &str = "mcp";

/// Why odek's MCP server cannot start, or a call of it failed before it ran.
#[derive(Debug, thiserror::Error)]
pub enum McpServerError {
    /// `--allow` names a class that does not exist.
    #[error(transparent)]
    UnknownClass(#[from] crate::danger_policy::UnknownDangerClass),
    /// Tools run only sandboxed, and there is no sandbox here.
    #[error(
        "the shell sandbox is not available on this machine (Landlock); odek's MCP server runs tools only sandboxed"
    )]
    NoSandbox,
    /// A runtime could not be built (the key, the model, the tool selection).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A `run_task` turn could not be submitted.
    #[error(transparent)]
    Turn(#[from] crate::runtime::SupervisorError),
    /// The tool is not offered.
    #[error("no tool named {0}")]
    NoSuchTool(String),
    /// `run_task` without a task.
    #[error("run_task needs a non-empty \"task\" string")]
    NoTask,
}

impl crate::error::Classified for McpServerError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            McpServerError::UnknownClass(_) | McpServerError::NoTask => ErrorKind::Usage,
            McpServerError::NoSandbox | McpServerError::Runtime(_) | McpServerError::Turn(_) => {
                ErrorKind::Config
            }
            McpServerError::NoSuchTool(_) => ErrorKind::NotFound,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            McpServerError::Runtime(e) => e.hint(),
            _ => None,
        }
    }
}

/// The configuration of the server's tool calls: `base` with nobody to ask, without the
/// tools that need a person or a conversation.
pub fn tools_config(base: &Config, allow: &[String]) -> Result<Config, McpServerError> {
    let mut config = base.with_nobody_to_ask(allow)?;
    config.planning.enabled = false;
    config.subagents.enabled = false;
    config.memory.enabled = false;
    config.skills.enabled = false;
    config.mcp_servers.clear();
    config.tools.disabled.push("clarify".into());
    Ok(config)
}

/// The server: one runtime for single tool calls, one for `run_task` turns. Clones share
/// everything (the stateless HTTP transport makes one per request).
#[derive(Clone)]
pub struct OdekMcpServer {
    tools: Arc<Runtime>,
    tasks: Option<Arc<Runtime>>,
    supervisor: Supervisor,
    calls: Arc<AtomicU64>,
}

/// How the server is built: the loaded configuration, where it runs, what it may do without
/// asking, whether it offers `run_task`.
pub struct ServerSetup<'a> {
    /// The user's configuration.
    pub config: &'a Config,
    /// odek's home.
    pub home: &'a std::path::Path,
    /// The working directory of the tools.
    pub cwd: &'a std::path::Path,
    /// Danger classes allowed without asking.
    pub allow: &'a [String],
    /// Whether `run_task` is offered.
    pub run_task: bool,
    /// The process's redactor (with `odek serve`'s token), for both runtimes.
    pub redactor: Arc<crate::redact::Redactor>,
    /// The runtime of `run_task` turns when the process built it already (`odek mcp
    /// serve`'s own, under [`Config::with_nobody_to_ask`]); else it is built here.
    pub tasks: Option<Arc<Runtime>>,
}

impl ServerSetup<'_> {
    /// The server's runtimes (tools under [`tools_config`], `run_task` turns under the
    /// configuration with nobody to ask), its turns in `supervisor`. Refused without the shell
    /// sandbox, and for an unknown danger class.
    pub fn build(&self, supervisor: Supervisor) -> Result<OdekMcpServer, McpServerError> {
        let tools = self.runtime(tools_config(self.config, self.allow)?)?;
        if !tools.sandbox().is_on() {
            return Err(McpServerError::NoSandbox);
        }
        let tasks = match (&self.tasks, self.run_task) {
            (_, false) => None,
            (Some(built), true) => Some(built.clone()),
            (None, true) => Some(self.runtime(self.config.with_nobody_to_ask(self.allow)?)?),
        };
        Ok(OdekMcpServer::new(tools, tasks, supervisor))
    }

    fn runtime(&self, config: Config) -> Result<Arc<Runtime>, McpServerError> {
        let redactor = self.redactor.clone();
        let runtime = Runtime::build(
            config,
            crate::runtime::RuntimeOptions {
                home: self.home.to_path_buf(),
                cwd: self.cwd.to_path_buf(),
                model_source: crate::runtime::ModelSource::Http,
                record: None,
                events: None,
                redactor,
            },
        )?;
        Ok(Arc::new(runtime))
    }
}

impl OdekMcpServer {
    /// A server over `tools` (built from [`tools_config`]) and, when `run_task` is offered,
    /// `tasks` (the user's configuration with nobody to ask); turns run in `supervisor`.
    pub fn new(tools: Arc<Runtime>, tasks: Option<Arc<Runtime>>, supervisor: Supervisor) -> Self {
        OdekMcpServer {
            tools,
            tasks,
            supervisor,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The runtime of `run_task` turns, when offered (its MCP servers stop with the server).
    pub fn tasks(&self) -> Option<&Arc<Runtime>> {
        self.tasks.as_ref()
    }

    /// The tools offered: odek's built-in ones, then `run_task`.
    pub fn tool_list(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = self.tools.tool_defs().iter().map(mcp_tool).collect();
        if self.tasks.is_some() {
            tools.push(mcp_tool(&ToolDef {
                name: RUN_TASK.into(),
                description: "Runs a whole odek turn on a task — the model, its tools and its plan, in odek's working directory, with nobody to ask (calls that would need approval are denied unless allowed) — and returns its final answer. The turn is saved as an odek session (origin \"mcp\").".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"task": {"type": "string", "description": "What to do, in words."}},
                    "required": ["task"],
                    "additionalProperties": false,
                }),
            }));
        }
        tools
    }

    /// One built-in tool call.
    async fn call_builtin(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<(String, bool), McpServerError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let surface = Surface {
            approver: None,
            output: Arc::new(NoopObserver),
            files: None,
            scope: Default::default(),
        };
        let turn = self.tools.turn(None, surface, &format!("mcp-{n}"))?;
        let call = ToolCall::new(
            format!("mcp_{n}"),
            name,
            Value::Object(arguments).to_string(),
        );
        Ok(turn.call_tool(&call, cancel).await)
    }

    /// `run_task`: a new session, its turn through the supervisor, its answer; the client's
    /// cancellation of the request cancels the turn (saved as every cancelled turn is).
    async fn run_task(
        &self,
        arguments: &Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<(String, bool), McpServerError> {
        let Some(runtime) = self.tasks.clone() else {
            return Err(McpServerError::NoSuchTool(RUN_TASK.into()));
        };
        let task = arguments
            .get("task")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(McpServerError::NoTask)?
            .to_string();
        let (head, _) = runtime.first_messages();
        let session = runtime.new_session(&task, head, ORIGIN_MCP, HOLDER)?;
        let handle = self.supervisor.submit(Submission {
            runtime: runtime.clone(),
            session: Some(session),
            input: vec![Message::user(task)],
            approvals: Approvals::Nobody,
            output: Arc::new(NoopObserver),
            // The task comes from another program: the turn's memory writes wait.
            external: vec![format!("mcp:{RUN_TASK}")],
            origin: ORIGIN_MCP,
            files: None,
            scope: Default::default(),
        })?;
        let session_id = handle.session_id.clone();
        let watcher = tokio::spawn({
            let (cancel, supervisor, run) = (
                cancel.clone(),
                self.supervisor.clone(),
                handle.run_id.clone(),
            );
            async move {
                cancel.cancelled().await;
                let _ = supervisor.cancel(&run);
            }
        });
        let outcome = handle.outcome().await;
        watcher.abort();
        let outcome = outcome?;
        Ok(match outcome.run.result {
            Ok(answer) => (runtime.redactor().redact(&answer).into_owned(), true),
            Err(e) => (
                format!("the turn failed: {e} (session {session_id})"),
                false,
            ),
        })
    }
}

/// An odek tool as MCP lists it.
fn mcp_tool(def: &ToolDef) -> Tool {
    let schema = match &def.parameters {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    Tool::new(def.name.clone(), def.description.clone(), Arc::new(schema))
}

impl ServerHandler for OdekMcpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("odek", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "odek's built-in tools (files, search, shell, web) under odek's policy and sandbox, with nobody to approve: calls that would need approval are refused. run_task runs a whole odek turn and returns its answer.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let name: Cow<'_, str> = request.name;
        let known = self.tool_list().iter().any(|t| t.name == name);
        if !known {
            return Err(ErrorData::invalid_params(
                format!("no tool named {name}"),
                None,
            ));
        }
        let ran = if name == RUN_TASK {
            self.run_task(&arguments, &context.ct).await
        } else {
            self.call_builtin(&name, arguments, &context.ct).await
        };
        let (text, ok) = ran.unwrap_or_else(|e| (e.to_string(), false));
        let content = vec![ContentBlock::text(text)];
        Ok(if ok {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        }
        .into())
    }
}
