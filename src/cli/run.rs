//! `odek run`: one task to a final answer.

use std::sync::Arc;

use clap::Args;

use super::Exit;
use super::flags::TurnFlags;
use super::persist::LiveSession;
use super::turn::{Setup, exit_for, read_task, report_outcome, run_with_interrupts, tokio_runtime};
use crate::prompt::initial_messages;

/// Arguments of `odek run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    turn: TurnFlags,
    /// Do not save this run as a session (overrides sessions.autosave)
    #[arg(long, conflicts_with = "session", help_heading = "Sessions")]
    ephemeral: bool,
    /// Save this run as a session even when sessions.autosave is false
    #[arg(long, help_heading = "Sessions")]
    session: bool,
    /// The task; words are joined with spaces, `-` reads it from stdin, `--` ends the flags
    #[arg(value_name = "TASK", required = true)]
    task: Vec<String>,
}

/// Runs `odek run`.
pub fn run(args: RunArgs) -> anyhow::Result<Exit> {
    let task = read_task(&args.task)?;
    let setup = Setup::new(&args.turn)?;
    let config = &setup.resolved.config;
    let injections = setup.injections(&args.turn.ctx)?;
    let messages = initial_messages(setup.system_message(), injections, &task);
    let rt = tokio_runtime()?;
    let engine = setup.engine(&args.turn)?;
    let save = args.session || (config.sessions.autosave && !args.ephemeral);
    let live = if save {
        let store = Arc::new(setup.session_store());
        let session = store.new_session(
            &config.model,
            Some(&config.base_url),
            &task,
            messages.clone(),
        );
        let live = LiveSession::new(store, session, setup.warn_fn());
        // Saved before the first model call, so even a crash there leaves the task on disk.
        live.save_messages(messages.clone())?;
        setup.attach_session(&live.id());
        Some(live)
    } else {
        None
    };
    let persist = live.as_ref().map(LiveSession::persist_fn);
    let outcome = rt.block_on(run_with_interrupts(&setup, &engine, messages, persist));
    if let Some(live) = &live {
        match live.finish_run(&outcome) {
            Ok(()) => setup.terminal.info(&setup.terminal.style().dim(&format!(
                "odek: session {} saved — continue with: odek continue \"…\"",
                live.id()
            ))),
            Err(e) => setup
                .terminal
                .line(&format!("odek: warning: could not save the session: {e}")),
        }
    }
    setup.finish();
    report_outcome(&setup, &outcome, config.max_iterations)?;
    Ok(exit_for(&outcome.result))
}
