//! [`McpHub`]: the MCP servers of one runtime, all connected at once on the first
//! [`McpHub::start`], their tools built once, and every stdio server's process ended on
//! every way out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::OnceCell;

use super::{McpServer, ProcessGroups, ServerState, connect, tool};
use crate::config::McpServerConfig;
use crate::tools::Tool;

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
