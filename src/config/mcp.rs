//! The entries of `mcp_servers`: a server odek starts (stdio) or reaches (streamable HTTP),
//! its partial form as a file holds it, and the checks an entry passes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
    pub(super) fn from_partial(p: &PartialMcpServer) -> McpServerConfig {
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
