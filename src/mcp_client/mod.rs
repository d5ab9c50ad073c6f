//! MCP servers (`mcp_servers`): clients through the official `rmcp` SDK, over stdio (a child
//! process) or streamable HTTP, whose tools are offered to the model as `<server>__<tool>`.
//!
//! One [`McpHub`] per runtime, shared by every turn and surface of the process. It connects
//! every enabled server once ([`McpHub::start`]); a server that fails to start is a warning
//! and offers no tools. The tool list is fixed from then on (it is part of the prompt-cache
//! prefix): a server that dies keeps its tools listed, and they answer
//! `mcp server <name> is not running`.

mod connect;
mod tool;

use crate::process_group::kill_group;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{Peer, RunningServiceCancellationToken};
use tokio::sync::OnceCell;

use crate::config::McpServerConfig;
use crate::tools::Tool;
pub use tool::{McpTool, tool_name};

/// Separator between the server's name and the tool's in the names the model sees.
pub const NAME_SEPARATOR: &str = crate::tools::catalog::MCP_SEPARATOR;

/// How long shutting down waits for a server to exit before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Lines of a stdio server's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 20;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Configured with `"disabled": true`.
    Disabled,
    /// Connected; its tools are offered.
    Running,
    /// Could not be started or initialised: why.
    Failed(String),
    /// Ran, then went away: why.
    Exited(String),
}

impl ServerState {
    /// One word for listings: `disabled`, `running`, `failed`, `exited`.
    pub fn word(&self) -> &'static str {
        match self {
            ServerState::Disabled => "disabled",
            ServerState::Running => "running",
            ServerState::Failed(_) => "failed",
            ServerState::Exited(_) => "exited",
        }
    }
}

/// One configured server and its connection.
pub struct McpServer {
    name: String,
    config: McpServerConfig,
    state: Arc<Mutex<ServerState>>,
    peer: Option<Peer<RoleClient>>,
    tools: Vec<rmcp::model::Tool>,
    stop: Mutex<Option<Stop>>,
}

/// What shutting a connection down needs.
struct Stop {
    cancel: RunningServiceCancellationToken,
    finished: tokio::task::JoinHandle<()>,
    process_group: Option<i32>,
    groups: ProcessGroups,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("state", &self.state())
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl McpServer {
    /// The name from the configuration.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Where it stands now.
    pub fn state(&self) -> ServerState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `stdio` or `http`.
    pub fn transport(&self) -> &'static str {
        if self.config.url.is_some() {
            "http"
        } else {
            "stdio"
        }
    }

    /// The tools it listed when it started (none when it did not start).
    pub fn listed_tools(&self) -> &[rmcp::model::Tool] {
        &self.tools
    }

    /// Marks a running server as gone (its connection closed or failed).
    fn mark_exited(&self, why: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *state == ServerState::Running {
            tracing::debug!("mcp server {} is not running: {why}", self.name);
            *state = ServerState::Exited(why.to_string());
        }
    }

    /// The connection, while the server runs.
    fn running_peer(&self) -> Option<&Peer<RoleClient>> {
        let peer = self.peer.as_ref()?;
        if peer.is_transport_closed() {
            self.mark_exited("its connection closed");
        }
        (self.state() == ServerState::Running).then_some(peer)
    }

    /// Closes the connection and ends the server's process (group), waiting up to
    /// [`SHUTDOWN_GRACE`] for it to exit on its own.
    async fn shutdown(&self) {
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(stop) = stop else { return };
        stop.cancel.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, stop.finished).await;
        if let Some(group) = stop.process_group {
            stop.groups.kill(group);
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *state == ServerState::Running {
            *state = ServerState::Exited("shut down".into());
        }
    }
}

/// The process groups of the stdio servers still alive, so that every way out of odek ends
/// them: the graceful shutdown, dropping the hub (an error return), and [`McpHub::kill_now`]
/// before `process::exit`. A group leaves the set once it was killed.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProcessGroups(Arc<Mutex<std::collections::BTreeSet<i32>>>);

impl ProcessGroups {
    fn add(&self, group: i32) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(group);
    }

    /// Kills the group (SIGKILL) if it is still in the set, and forgets it.
    fn kill(&self, group: i32) {
        let known = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&group);
        if known {
            kill_group(group);
        }
    }

    fn kill_all(&self) {
        let groups = std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner));
        groups.into_iter().for_each(kill_group);
    }
}

/// What [`McpHub::start`] found: the servers and, built once, their tools.
struct Started {
    servers: Vec<Arc<McpServer>>,
    /// Built once, so every turn offers byte-identical definitions (a description's wrapper
    /// nonce included): the tool list is part of the prompt-cache prefix.
    tools: Vec<Arc<dyn Tool>>,
}

/// The MCP servers of one runtime.
pub struct McpHub {
    configs: Vec<(String, McpServerConfig)>,
    started: OnceCell<Started>,
    warned: AtomicBool,
    groups: ProcessGroups,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.configs.len())
            .field("started", &self.started.initialized())
            .finish()
    }
}

impl McpHub {
    /// A hub for these servers; nothing is started yet.
    pub fn new(servers: &std::collections::BTreeMap<String, McpServerConfig>) -> McpHub {
        McpHub {
            configs: servers
                .iter()
                .map(|(name, config)| (name.clone(), config.clone()))
                .collect(),
            started: OnceCell::new(),
            warned: AtomicBool::new(false),
            groups: ProcessGroups::default(),
        }
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    /// Connects every enabled server, all at once (only the first call does; later ones
    /// wait for it). Returns the warnings of servers that failed, to the first caller only,
    /// without control characters; the caller redacts them.
    pub async fn start(&self) -> Vec<String> {
        let started = self
            .started
            .get_or_init(|| async {
                let connecting = self
                    .configs
                    .iter()
                    .map(|(name, config)| connect::server(name, config, &self.groups));
                let servers: Vec<Arc<McpServer>> = futures_util::future::join_all(connecting)
                    .await
                    .into_iter()
                    .map(Arc::new)
                    .collect();
                let tools = servers.iter().flat_map(tool::tools_of).collect();
                Started { servers, tools }
            })
            .await;
        if self.warned.swap(true, Ordering::SeqCst) {
            return Vec::new();
        }
        started
            .servers
            .iter()
            .filter_map(|s| match s.state() {
                ServerState::Failed(why) => Some(format!(
                    "odek: warning: mcp server {} did not start, so its tools are not available: {why}",
                    s.name
                )),
                _ => None,
            })
            .collect()
    }

    /// The servers, once [`McpHub::start`] ran (empty before).
    pub fn servers(&self) -> &[Arc<McpServer>] {
        self.started.get().map_or(&[], |s| s.servers.as_slice())
    }

    /// The tools of every server that started, server by server in configuration order,
    /// each server's tools in the order it listed them: the same objects on every call.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.started
            .get()
            .map_or_else(Vec::new, |s| s.tools.clone())
    }

    /// Closes every connection and ends the servers' processes.
    pub async fn shutdown(&self) {
        let stopping = self.servers().iter().map(|s| s.shutdown());
        futures_util::future::join_all(stopping).await;
        self.groups.kill_all();
    }

    /// Kills every stdio server's process group at once (no graceful close): for a process
    /// about to `exit` without running destructors (a second Ctrl-C).
    pub fn kill_now(&self) {
        self.groups.kill_all();
    }
}

impl Drop for McpHub {
    /// A hub dropped without [`McpHub::shutdown`] (an error return) leaves no server behind.
    fn drop(&mut self) {
        self.groups.kill_all();
    }
}

/// The last lines a stdio server wrote to stderr.
#[derive(Debug, Default, Clone)]
struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == STDERR_TAIL_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The kept lines joined with ` | `, or `None` when there are none.
    fn summary(&self) -> Option<String> {
        let lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let kept: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        (!kept.is_empty()).then(|| kept.join(" | "))
    }
}

/// Fuzzing entry: `data` as a JSON-RPC message from an MCP server (what the client reads) and
/// from a client (what `odek mcp serve` reads), decoded by the SDK, and a tool result in it
/// rendered as the model reads it.
#[cfg(any(fuzzing, test))]
pub fn fuzz_message(data: &[u8]) {
    use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
    let _ = serde_json::from_slice::<ClientJsonRpcMessage>(data);
    if serde_json::from_slice::<ServerJsonRpcMessage>(data).is_ok()
        && let Ok(value) = serde_json::from_slice::<serde_json::Value>(data)
        && let Ok(result) =
            serde_json::from_value::<rmcp::model::CallToolResult>(value["result"].clone())
    {
        let _ = tool::result_text(&result.content, result.structured_content.as_ref());
    }
}

#[cfg(test)]
mod tests;
