//! `odek serve`: resolves the configuration like every other command, builds the one
//! runtime with an event writer feeding the server's hub, listens, prints the token URL and
//! serves until SIGINT/SIGTERM (see `crate::serve`).

use crate::error::Context;
use clap::Args;

use super::Exit;
use super::flags::SurfaceFlags;
use super::turn::events_sink;
use crate::runtime::{Process, StartOptions};
use crate::serve::hub::{Hub, HubSink};
use crate::serve::{ServeParts, new_token, serve, token_url};

/// Arguments of `odek serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; a non-loopback address is refused
    /// by the Host check for every API request)
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8080")]
    addr: String,
    /// Open the token URL in the default browser
    #[arg(long)]
    open: bool,
    #[command(flatten)]
    surface: SurfaceFlags,
    /// Also append every event to FILE (`-` = stdout); they are always on /api/events
    #[arg(long, value_name = "FILE")]
    events_jsonl: Option<String>,
    /// Also serve odek's tools and run_task over MCP (streamable HTTP) at /api/mcp, under
    /// the same token, with nobody to ask (what would ask is denied)
    #[arg(long)]
    mcp: bool,
    /// With --mcp: allow this risk class without asking (repeatable), e.g. --mcp-allow
    /// code_execution
    #[arg(long = "mcp-allow", value_name = "CLASS", requires = "mcp")]
    mcp_allow: Vec<crate::danger_policy::DangerClass>,
}

/// Runs `odek serve`.
pub fn run(args: ServeArgs) -> crate::error::Fallible<Exit> {
    let (load, resolved) = args.surface.resolve()?;
    let token = new_token();
    let hub = Hub::new();
    let also = match args.events_jsonl.as_deref() {
        Some(target) => Some(events_sink(target)?),
        None => None,
    };
    let mut start = StartOptions::new(resolved.config, resolved.home, load.cwd.clone());
    start.events = Some(Box::new(HubSink {
        hub: hub.clone(),
        also,
    }));
    start.extra_secrets = vec![token.clone()];
    let process = Process::start(start)?;
    process
        .runtime
        .warnings()
        .iter()
        .for_each(|w| eprintln!("{w}"));
    let chat = crate::telegram::chat_delivery(process.runtime.config());
    let schedules = crate::schedule::spawn_background(&process, "serve", false, chat.clone())
        .unwrap_or_else(|e| {
            eprintln!("odek serve: warning: scheduled jobs do not run: {e}");
            None
        });
    process.block_on(async {
        for warning in process.start_mcp().await {
            eprintln!("{warning}");
        }
        let listener = tokio::net::TcpListener::bind(&args.addr)
            .await
            .with_context(|| format!("cannot listen on {}", args.addr))?;
        let local = listener.local_addr()?;
        let mcp = if args.mcp {
            let allow: Vec<String> = args.mcp_allow.iter().map(|c| c.to_string()).collect();
            let setup = crate::mcp_server::ServerSetup {
                config: process.runtime.config(),
                home: process.runtime.home(),
                cwd: &load.cwd,
                allow: &allow,
                run_task: true,
                redactor: process.redactor.clone(),
                tasks: None,
            };
            let server = setup
                .build(process.supervisor.clone())
                .map_err(|e| anyhow::anyhow!("--mcp: {e}"))?;
            Some(server)
        } else {
            None
        };
        announce(&local, &token, args.open, mcp.as_ref());
        let mcp_tasks = mcp.as_ref().and_then(|s| s.tasks().cloned());
        let parts = ServeParts {
            mcp,
            runtime: process.runtime.clone(),
            supervisor: process.supervisor.clone(),
            load,
            events: process.events().cloned(),
            hub,
            redactor: process.redactor.clone(),
            token,
            chat,
        };
        let served = serve(parts, listener).await.context("serving");
        if let Some(runner) = schedules {
            runner.stop().await;
        }
        process.runtime.mcp().shutdown().await;
        if let Some(tasks) = mcp_tasks {
            tasks.mcp().shutdown().await;
        }
        served
    })?;
    Ok(Exit::Success)
}

/// The startup lines on stderr, and the browser when `--open`.
fn announce(
    local: &std::net::SocketAddr,
    token: &str,
    open: bool,
    mcp: Option<&crate::mcp_server::OdekMcpServer>,
) {
    if !local.ip().is_loopback() {
        eprintln!(
            "odek serve: WARNING: listening on {local}, which is not a loopback address; API requests must still name 127.0.0.1, localhost or [::1] as Host"
        );
    }
    let url = token_url(local, token);
    eprintln!("odek serve ⚡  {url}");
    eprintln!("  API:   http://{local}/api/ (header X-Odek-Token: <token>)");
    if let Some(server) = mcp {
        eprintln!(
            "  MCP:   http://{local}{} ({} tools; Bearer <token>)",
            crate::serve::MCP_PATH,
            server.tool_list().len()
        );
    }
    eprintln!("  Token: {token}");
    eprintln!("  Stop with Ctrl-C: running runs are cancelled and saved.");
    if open {
        let opener = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        if let Err(e) = std::process::Command::new(opener)
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
        {
            eprintln!(
                "odek serve: warning: could not open a browser ({opener}: {e}); open the URL above"
            );
        }
    }
}
