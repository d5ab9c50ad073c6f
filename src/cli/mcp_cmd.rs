//! `odek mcp list`: every configured MCP server, whether it starts, and the tools it offers
//! under the names the model sees.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::Exit;
use super::turn::tokio_runtime;
use crate::config::LoadOptions;
use crate::mcp::{McpHub, McpServer, ServerState};
use crate::redact::Redactor;

/// Arguments of `odek mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Start every configured server, list its state and tools, then stop it; exits 1 when
    /// an enabled server does not start
    List {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
}

/// Runs `odek mcp`.
pub fn run(args: McpArgs) -> anyhow::Result<Exit> {
    let McpCommand::List { json } = args.command;
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let servers = &resolved.config.mcp_servers;
    if servers.is_empty() && !json {
        println!(
            "No MCP servers configured: add them under \"mcp_servers\" in {} (see docs/MCP.md).",
            resolved.global_path.display()
        );
        return Ok(Exit::Success);
    }
    let hub = McpHub::new(servers);
    let rt = tokio_runtime()?;
    rt.block_on(hub.start());
    let redactor = crate::runtime::build_redactor(&resolved.config);
    let listed: Vec<&McpServer> = hub.servers().iter().map(AsRef::as_ref).collect();
    if json {
        let all: Vec<Value> = listed.iter().map(|s| server_json(s, &redactor)).collect();
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        let width = listed.iter().map(|s| s.name().len()).max().unwrap_or(0);
        listed
            .iter()
            .for_each(|s| print_server(s, width, &redactor));
    }
    rt.block_on(hub.shutdown());
    let failed = listed
        .iter()
        .any(|s| matches!(s.state(), ServerState::Failed(_)));
    Ok(if failed { Exit::Failure } else { Exit::Success })
}

/// The tools of `server` as `(name the model sees, description's first line, auto-approved)`.
fn tools(server: &McpServer) -> Vec<(String, String, bool)> {
    server
        .listed_tools()
        .iter()
        .filter_map(|t| {
            let name = crate::mcp::tool_name(server.name(), &t.name)?;
            let about = first_line(t.description.as_deref().unwrap_or(""), 80);
            let auto = server.config().auto_approve.iter().any(|a| a == &t.name);
            Some((name, about, auto))
        })
        .collect()
}

/// The first line of `text` without control characters, cut at `max` characters with `…`.
fn first_line(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .filter(|c| *c == '\n' || !c.is_control())
        .collect();
    crate::text::first_line(&clean, max)
}

fn print_server(server: &McpServer, width: usize, redactor: &Redactor) {
    let state = server.state();
    let detail = match &state {
        ServerState::Running => format!("{} tool(s)", server.listed_tools().len()),
        ServerState::Failed(why) | ServerState::Exited(why) => redactor.redact(why).into_owned(),
        ServerState::Disabled => "\"disabled\": true".into(),
    };
    println!(
        "{:<width$}  {:<5}  {:<8}  {detail}",
        server.name(),
        server.transport(),
        state.word()
    );
    let tools = tools(server);
    let width = tools.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    for (name, about, auto) in tools {
        let approval = if auto { "  [auto-approved]" } else { "" };
        println!("  {name:<width$}  {about}{approval}");
    }
}

fn server_json(server: &McpServer, redactor: &Redactor) -> Value {
    let state = server.state();
    let error = match &state {
        ServerState::Failed(why) | ServerState::Exited(why) => {
            Some(redactor.redact(why).into_owned())
        }
        _ => None,
    };
    let tools: Vec<Value> = tools(server)
        .into_iter()
        .map(|(name, description, auto)| {
            json!({"name": name, "description": description, "auto_approve": auto})
        })
        .collect();
    json!({
        "name": server.name(),
        "transport": server.transport(),
        "state": state.word(),
        "error": error,
        "tools": tools,
    })
}
