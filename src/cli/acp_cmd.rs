//! `odek acp`: odek as an agent inside editors, over the Agent Client Protocol on stdin and
//! stdout (docs/ACP.md). Nothing but the protocol goes to stdout; logs go to stderr.

use clap::Args;

use super::Exit;
use crate::config::LoadOptions;
use crate::runtime::{Process, RuntimeError, StartOptions, Threads};

/// Arguments of `odek acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// More logging on stderr (-vv: debug)
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

/// Runs `odek acp` until the editor closes stdin (or SIGTERM).
pub fn run(args: AcpArgs) -> crate::error::Fallible<Exit> {
    super::logging::init_tracing(args.verbose);
    let load = LoadOptions::from_process(Default::default());
    let resolved = crate::config::load(&load)?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let cwd = load.cwd.clone();
    // One thread serves the connection and every session's turn (blocking work still goes
    // to tokio's blocking threads): an editor keeps odek running all day, idle most of it
    // (docs/PERFORMANCE.md, "odek acp").
    let started = Process::start(StartOptions {
        threads: Threads::Caller,
        ..StartOptions::new(resolved.config, resolved.home.clone(), cwd.clone())
    });
    let process = match started {
        Ok(process) => process,
        Err(e @ RuntimeError::MissingApiKey { .. }) => {
            // Served all the same: `initialize` offers the one way to authenticate (set the
            // key), and every session request says where the key goes.
            eprintln!("odek acp: {e}");
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(serve_until_closed(Err(e)));
            return Ok(Exit::Success);
        }
        Err(e) => return Err(e.into()),
    };
    eprintln!(
        "odek acp: serving the Agent Client Protocol on stdio in {}",
        cwd.display()
    );
    process.block_on(async {
        for warning in process.start_mcp().await {
            eprintln!("odek acp: {warning}");
        }
        let backend = crate::acp::Backend {
            base: process.runtime.clone(),
            supervisor: process.supervisor.clone(),
            load,
        };
        serve_until_closed(Ok(backend)).await;
        process.supervisor.shutdown().await;
        process.runtime.mcp().shutdown().await;
    });
    Ok(Exit::Success)
}

async fn serve_until_closed(backend: Result<crate::acp::Backend, RuntimeError>) {
    tokio::select! {
        () = crate::acp::serve(backend, tokio::io::stdin(), tokio::io::stdout()) => {}
        () = crate::process_group::termination() => {}
    }
}
