//! `odek mcp list`: every configured MCP server, whether it starts, and the tools it offers
//! under the names the model sees. `odek mcp serve`: odek itself as an MCP server on stdio.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::Exit;
use super::turn::tokio_runtime;
use crate::config::LoadOptions;
use crate::mcp_client::{McpHub, McpServer, ServerState};
use crate::redact::Redactor;
use crate::runtime::{Process, StartOptions};

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
    /// Serve odek's built-in tools (and run_task, a whole odek turn) over MCP on stdio, to
    /// another agent or editor; calls that would ask for approval are denied
    Serve {
        /// Allow this risk class without asking (repeatable), e.g. --allow code_execution
        #[arg(long = "allow", value_name = "CLASS")]
        allow: Vec<crate::danger_policy::DangerClass>,
        /// Do not offer run_task (tool calls only; no model is called)
        #[arg(long)]
        no_run_task: bool,
    },
}

/// Runs `odek mcp`.
pub fn run(args: McpArgs) -> crate::error::Fallible<Exit> {
    let json = match args.command {
        McpCommand::List { json } => json,
        McpCommand::Serve { allow, no_run_task } => return serve(&allow, !no_run_task),
    };
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
            let name = crate::mcp_client::tool_name(server.name(), &t.name)?;
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

/// `odek mcp serve`: the MCP server on stdin/stdout until the client closes it (or SIGTERM);
/// nothing but the protocol is written to stdout.
fn serve(
    allow: &[crate::danger_policy::DangerClass],
    run_task: bool,
) -> crate::error::Fallible<Exit> {
    use rmcp::ServiceExt;
    super::logging::init_tracing(0);
    let opts = LoadOptions::from_process(Default::default());
    let cwd = opts.cwd.clone();
    let resolved = crate::config::load(&opts)?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let allow: Vec<String> = allow.iter().map(|c| c.to_string()).collect();
    // The process's runtime is the one of `run_task` turns: nobody to ask.
    let tasks_config = resolved.config.with_nobody_to_ask(&allow)?;
    let process = Process::start(StartOptions::new(
        tasks_config,
        resolved.home.clone(),
        cwd.clone(),
    ))?;
    let setup = crate::mcp_server::ServerSetup {
        config: &resolved.config,
        home: &resolved.home,
        cwd: &cwd,
        allow: &allow,
        run_task,
        redactor: process.redactor.clone(),
        tasks: Some(process.runtime.clone()),
    };
    let server = {
        let _inside = process.handle().enter();
        setup.build(process.supervisor.clone())?
    };
    eprintln!(
        "odek mcp serve: {} tool(s) on stdio in {}{}",
        server.tool_list().len(),
        cwd.display(),
        if allow.is_empty() {
            String::new()
        } else {
            format!("; allowed without asking: {}", allow.join(", "))
        }
    );
    process.block_on(async {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("the MCP session did not start: {e}"))?;
        tokio::select! {
            _ = running.waiting() => {}
            () = crate::process_group::termination() => {}
        }
        process.supervisor.shutdown().await;
        process.runtime.mcp().shutdown().await;
        Ok::<_, crate::error::Failure>(())
    })?;
    Ok(Exit::Success)
}
