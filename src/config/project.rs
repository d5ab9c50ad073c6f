//! The project-may-only-lower policy: a cloned repository's `odek.json` can opt out and lower
//! limits, but can never raise a limit, re-enable what the user turned off, change the
//! endpoint or the key, or loosen the approval policy.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Config, PartialConfig, PartialLimits, PartialMcpServer, SandboxNetwork};

/// Removes from the project layer everything it may not set, with one warning line each.
/// `below` is the configuration merged from the layers under the project (defaults + global).
pub(super) fn filter_project_layer(
    mut layer: PartialConfig,
    below: &Config,
    path: &Path,
    global_path: &Path,
    warnings: &mut Vec<String>,
) -> PartialConfig {
    let p = path.display();
    let g = global_path.display();
    let mut ignore = |what: &str, how: &str| {
        warnings.push(format!(
            "odek: WARNING: ignoring {what} from project config ({p}); set it via {how}"
        ));
    };
    if layer.base_url.take().is_some() {
        ignore("base_url", &format!("{g}, ODEK_BASE_URL or --base-url"));
    }
    if layer.api_key.take().is_some() {
        ignore("api_key", &format!("{g} or ODEK_API_KEY"));
    }
    if layer.system.take().is_some() {
        ignore("system", &format!("{g}, ODEK_SYSTEM or --system"));
    }
    if layer.dangerous.take().is_some() {
        ignore("dangerous section", &g.to_string());
    }
    if layer.sessions.take().is_some() {
        ignore("sessions section", &g.to_string());
    }
    if layer.serve.take().is_some() {
        ignore("serve section", &g.to_string());
    }
    if layer.telegram.take().is_some() {
        ignore("telegram section", &g.to_string());
    }
    if let Some(servers) = layer.mcp_servers.take() {
        layer.mcp_servers = Some(only_disabling(servers, &mut ignore));
    }
    if let Some(tools) = &mut layer.tools
        && tools.enabled.take().is_some()
    {
        ignore(
            "tools.enabled (a project may only disable tools)",
            &format!("{g}, ODEK_TOOLS_ENABLED or --tool"),
        );
    }
    if layer.no_agents == Some(false) && below.no_agents {
        layer.no_agents = None;
        ignore(
            "no_agents=false (a project may only opt out of AGENTS.md)",
            &g.to_string(),
        );
    }
    filter_sandbox(&mut layer, below, &mut ignore);
    filter_planning(&mut layer, below, path, global_path, warnings);
    if let Some(limits) = &mut layer.limits {
        filter_limits(limits, below, path, warnings);
    }
    layer
}

/// A project may turn an MCP server off (`"<name>": {"disabled": true}`) and nothing else: it
/// can neither start a program nor reach a URL, nor approve tools.
fn only_disabling(
    servers: BTreeMap<String, PartialMcpServer>,
    ignore: &mut impl FnMut(&str, &str),
) -> BTreeMap<String, PartialMcpServer> {
    let mut kept = BTreeMap::new();
    for (name, server) in servers {
        let disables = server.disabled == Some(true);
        let nothing_else = PartialMcpServer {
            disabled: server.disabled,
            ..PartialMcpServer::default()
        } == server;
        if !(disables && nothing_else) {
            ignore(
                &format!(
                    "mcp_servers.{name} (a project may only disable a server, with \"disabled\": true)"
                ),
                "the global config",
            );
        }
        if disables {
            kept.insert(
                name,
                PartialMcpServer {
                    disabled: Some(true),
                    ..PartialMcpServer::default()
                },
            );
        }
    }
    kept
}

/// A project may turn the sandbox on and shut its network, never the other way round, and
/// may not add writable paths.
fn filter_sandbox(layer: &mut PartialConfig, below: &Config, ignore: &mut impl FnMut(&str, &str)) {
    if layer.sandbox == Some(false) && below.sandbox {
        layer.sandbox = None;
        ignore(
            "sandbox=false (a project may only turn the sandbox on)",
            "the global config or --no-sandbox",
        );
    }
    if layer.sandbox_allow_write.take().is_some() {
        ignore(
            "sandbox_allow_write (a project may not widen the sandbox)",
            "the global config",
        );
    }
    if layer.sandbox_network == Some(SandboxNetwork::Allow)
        && below.sandbox_network == SandboxNetwork::None
    {
        layer.sandbox_network = None;
        ignore(
            "sandbox_network=allow (a project may only shut the network)",
            "the global config or ODEK_SANDBOX_NETWORK",
        );
    }
}

fn filter_planning(
    layer: &mut PartialConfig,
    below: &Config,
    path: &Path,
    global_path: &Path,
    warnings: &mut Vec<String>,
) {
    let Some(planning) = &mut layer.planning else {
        return;
    };
    let p = path.display();
    if planning.enabled == Some(true) && !below.planning.enabled {
        planning.enabled = None;
        warnings.push(format!(
            "odek: WARNING: ignoring planning.enabled=true from project config ({p}) — planning is disabled in {}",
            global_path.display()
        ));
    }
    let caps = [
        (
            "max_steps",
            &mut planning.max_steps,
            below.planning.max_steps,
        ),
        (
            "max_render_chars",
            &mut planning.max_render_chars,
            below.planning.max_render_chars,
        ),
    ];
    for (name, value, current) in caps {
        if let Some(v) = *value
            && v > current
        {
            *value = None;
            warnings.push(format!(
                "odek: WARNING: ignoring planning.{name}={v} from project config ({p}) — it would raise the global cap {current}"
            ));
        }
    }
}

fn filter_limits(
    limits: &mut PartialLimits,
    below: &Config,
    path: &Path,
    warnings: &mut Vec<String>,
) {
    let p = path.display();
    let l = &below.limits;
    let entries = [
        (
            "max_runtime_seconds",
            &mut limits.max_runtime_seconds,
            l.max_runtime_seconds,
        ),
        (
            "max_tool_calls",
            &mut limits.max_tool_calls,
            l.max_tool_calls,
        ),
        (
            "max_input_tokens",
            &mut limits.max_input_tokens,
            l.max_input_tokens,
        ),
        (
            "max_output_tokens",
            &mut limits.max_output_tokens,
            l.max_output_tokens,
        ),
    ];
    for (name, value, current) in entries {
        let Some(v) = *value else { continue };
        // 0 means "no limit": lowering is any positive value under the current one, or any
        // positive value when there is no limit yet.
        let lowers = v > 0 && (current == 0 || v <= current);
        if !lowers {
            *value = None;
            let shown = if current == 0 {
                "none".to_string()
            } else {
                current.to_string()
            };
            warnings.push(format!(
                "odek: WARNING: ignoring limits.{name}={v} from project config ({p}) — a project may only lower limits (current: {shown})"
            ));
        }
    }
}
