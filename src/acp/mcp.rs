//! The client's MCP servers (`mcpServers` of `session/new` and `session/load`): added to the
//! configured ones for that session only, as odek's own `mcp_servers` entries — stdio
//! (`command`, `args`, `env`) and streamable HTTP (`type: "http"`, `url`, `headers`); SSE is
//! refused. Their tools are named `<server>__<tool>` and gated as `code_execution`, as every
//! MCP tool without `auto_approve`; their `env` and `headers` values are secrets (redacted).

use serde_json::Value;

use super::rpc::RpcError;
use crate::config::{Config, MCP_DEFAULT_TIMEOUT_SECONDS, McpServerConfig};

/// One server the client passed.
pub(crate) type ClientServer = (String, McpServerConfig);

/// The servers of `servers` as odek's configuration has them, or why one cannot be used (a
/// name taken by a configured server included).
pub(crate) fn servers(servers: &[Value], config: &Config) -> Result<Vec<ClientServer>, RpcError> {
    let mut out: Vec<ClientServer> = Vec::new();
    for server in servers {
        let (name, entry) = server_of(server)?;
        entry
            .check(&name)
            .map_err(|e| RpcError::invalid_params(format!("MCP server {name:?}: {e}")))?;
        if config.mcp_servers.contains_key(&name) || out.iter().any(|(n, _)| *n == name) {
            return Err(RpcError::invalid_params(format!(
                "MCP server {name:?}: the name is taken (odek's config or this request has a server of that name)"
            )));
        }
        out.push((name, entry));
    }
    Ok(out)
}

fn server_of(server: &Value) -> Result<ClientServer, RpcError> {
    let name = text(server, "name")?.to_string();
    let pairs = |field: &str| -> Result<Vec<(String, String)>, RpcError> {
        let Some(list) = server.get(field) else {
            return Ok(Vec::new());
        };
        let list = list.as_array().ok_or_else(|| {
            RpcError::invalid_params(format!("MCP server {name:?}: {field} must be a list"))
        })?;
        list.iter()
            .map(|p| Ok((text(p, "name")?.to_string(), text(p, "value")?.to_string())))
            .collect()
    };
    let mut entry = McpServerConfig {
        command: None,
        args: Vec::new(),
        env: Default::default(),
        url: None,
        headers: Default::default(),
        timeout_seconds: MCP_DEFAULT_TIMEOUT_SECONDS,
        auto_approve: Vec::new(),
        disabled: false,
    };
    match server.get("type").and_then(Value::as_str) {
        Some("http") => {
            entry.url = Some(text(server, "url")?.to_string());
            entry.headers = pairs("headers")?.into_iter().collect();
        }
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "MCP server {name:?}: odek takes stdio and http servers, not {other}"
            )));
        }
        None => {
            entry.command = Some(text(server, "command")?.to_string());
            entry.args = match server.get("args") {
                None => Vec::new(),
                Some(args) => serde_json::from_value(args.clone()).map_err(|_| {
                    RpcError::invalid_params(format!(
                        "MCP server {name:?}: args must be a list of strings"
                    ))
                })?,
            };
            entry.env = pairs("env")?.into_iter().collect();
        }
    }
    Ok((name, entry))
}

fn text<'a>(value: &'a Value, field: &str) -> Result<&'a str, RpcError> {
    value.get(field).and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params(format!("an MCP server needs \"{field}\", a string"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_and_http_servers_become_config_entries_and_bad_ones_say_why() {
        let config = Config::default();
        let taken = servers(
            &[
                json!({"name": "fs", "command": "node", "args": ["s.js"], "env": [{"name": "K", "value": "v"}]}),
                json!({"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": [{"name": "Authorization", "value": "Bearer t"}]}),
            ],
            &config,
        )
        .expect("servers");
        assert_eq!(taken[0].0, "fs");
        assert_eq!(taken[0].1.command.as_deref(), Some("node"));
        assert_eq!(taken[0].1.args, ["s.js"]);
        assert_eq!(taken[0].1.env.get("K").map(String::as_str), Some("v"));
        assert_eq!(taken[1].1.url.as_deref(), Some("http://127.0.0.1:1/mcp"));
        assert_eq!(
            taken[1].1.headers.get("Authorization").map(String::as_str),
            Some("Bearer t")
        );
        let refused = |server: Value| match servers(&[server], &config) {
            Err(e) => e.message,
            Ok(_) => panic!("taken"),
        };
        assert!(
            refused(json!({"type": "sse", "name": "s", "url": "http://x"})).contains("not sse")
        );
        assert!(refused(json!({"name": "a__b", "command": "x"})).contains("server name"));
        assert!(refused(json!({"name": "x"})).contains("\"command\""));
        assert!(refused(json!({"name": "x", "command": "y", "args": [1]})).contains("args"));
        let twice = servers(
            &[
                json!({"name": "x", "command": "a"}),
                json!({"name": "x", "command": "b"}),
            ],
            &config,
        );
        assert!(twice.is_err());
    }
}
