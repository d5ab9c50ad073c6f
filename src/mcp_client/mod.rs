//! MCP servers (`mcp_servers`): clients through the official `rmcp` SDK, over stdio (a child
//! process) or streamable HTTP, whose tools are offered to the model as `<server>__<tool>`.
//!
//! One [`McpHub`] per runtime, shared by every turn and surface of the process. It connects
//! every enabled server once ([`McpHub::start`]); a server that fails to start is a warning
//! and offers no tools. The tool list is fixed from then on (it is part of the prompt-cache
//! prefix): a server that dies keeps its tools listed, and they answer
//! `mcp server <name> is not running`.

mod connect;
mod hub;
mod tool;

use crate::process_group::kill_group;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{Peer, RunningServiceCancellationToken};

use crate::config::McpServerConfig;
pub use hub::McpHub;
#[cfg(any(fuzzing, test))]
pub use tool::fuzz_message;
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

#[cfg(test)]
mod tests;
