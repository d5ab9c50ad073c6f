//! Starting configurations written by `odek init` (and `config.example.json`, which must equal
//! the global template — a test keeps them in step).

use serde_json::{Value, json};

use super::Config;

/// The full global configuration: every key with its default, and the API key read from the
/// environment through substitution (so the file itself never holds the secret).
pub fn global_template() -> String {
    let d = Config::default();
    let value = json!({
        "model": d.model,
        "base_url": d.base_url,
        "api_key": "${ODEK_API_KEY}",
        "system": "",
        "temperature": null,
        "thinking": null,
        "max_iterations": d.max_iterations,
        "max_tool_parallel": d.max_tool_parallel,
        "stream": d.stream,
        "compaction": d.compaction,
        "context_window": d.context_window,
        "no_color": d.no_color,
        "no_agents": d.no_agents,
        "planning": planning(&d),
        "dangerous": {
            "action": null,
            "non_interactive": "deny",
            "classes": {},
            "allowlist": [],
            "denylist": []
        },
        "tools": {"enabled": [], "disabled": []},
        "sessions": {"autosave": d.sessions.autosave},
        "limits": {
            "max_runtime_seconds": 0,
            "max_tool_calls": 0,
            "max_input_tokens": 0,
            "max_output_tokens": 0
        },
        "llm": {
            "timeout_seconds": d.llm.timeout_seconds,
            "stream_idle_timeout_seconds": d.llm.stream_idle_timeout_seconds,
            "max_attempts": d.llm.max_attempts,
            "retry_initial_delay_ms": d.llm.retry_initial_delay_ms
        },
        "serve": {
            "rate_limits": {
                "reads_per_minute": d.serve.rate_limits.reads_per_minute,
                "prompts_per_minute": d.serve.rate_limits.prompts_per_minute
            }
        },
        "telegram": {
            "api_base": d.telegram.api_base,
            "bot_token": "${ODEK_TELEGRAM_TOKEN}",
            "allowed_users": [],
            "allowed_chats": [],
            "poll_timeout": d.telegram.poll_timeout,
            "session_ttl_hours": d.telegram.session_ttl_hours
        },
        "mcp_servers": {
            "everything": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-everything"],
                "env": {},
                "timeout_seconds": crate::config::MCP_DEFAULT_TIMEOUT_SECONDS,
                "auto_approve": ["echo"],
                "disabled": true
            },
            "remote": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer ${MCP_EXAMPLE_TOKEN}"},
                "timeout_seconds": crate::config::MCP_DEFAULT_TIMEOUT_SECONDS,
                "auto_approve": [],
                "disabled": true
            }
        },
        "sandbox": d.sandbox,
        "sandbox_allow_write": [],
        "sandbox_network": "allow"
    });
    pretty(&value)
}

/// A project `odek.json`: only keys a project may set (it can lower limits and opt out, never
/// change the endpoint, the key, the system prompt or the approval policy).
pub fn project_template() -> String {
    let d = Config::default();
    let value = json!({
        "model": d.model,
        "max_iterations": d.max_iterations,
        "compaction": d.compaction,
        "planning": planning(&d),
        "tools": {"disabled": []}
    });
    pretty(&value)
}

fn planning(d: &Config) -> Value {
    json!({
        "enabled": d.planning.enabled,
        "max_steps": d.planning.max_steps,
        "max_render_chars": d.planning.max_render_chars,
        "placement": d.planning.placement.as_str()
    })
}

fn pretty(value: &Value) -> String {
    let mut s = serde_json::to_string_pretty(value).unwrap_or_default();
    s.push('\n');
    s
}
