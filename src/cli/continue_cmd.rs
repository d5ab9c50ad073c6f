//! `odek continue`: resume a saved session with a follow-up.

use std::sync::Arc;

use clap::Args;

use super::Exit;
use super::flags::TurnFlags;
use super::persist::LiveSession;
use super::turn::{Setup, exit_for, read_task, report_outcome, run_with_interrupts, tokio_runtime};
use crate::llm::Message;
use crate::prompt::{context_files_message, read_context_files};
use crate::session::{Session, SessionStore};

/// Arguments of `odek continue`.
#[derive(Debug, Args)]
pub struct ContinueArgs {
    /// Session to resume (default: the most recently updated one)
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    #[command(flatten)]
    turn: TurnFlags,
    /// The follow-up; words are joined with spaces, `-` reads it from stdin
    #[arg(value_name = "TASK", required = true)]
    task: Vec<String>,
}

/// Refuses the flags a resumed session keeps, with a message saying so.
pub fn refuse_session_fixed_flags(flags: &TurnFlags, command: &str) -> anyhow::Result<()> {
    let fixed = flags.session_fixed_flags();
    if fixed.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{command} cannot change {}: a resumed session keeps its model, endpoint and system prompt (start a new session with `odek run` to use different ones)",
        fixed.join(", ")
    )
}

/// Loads `id`, or the most recently updated session.
pub fn load_session(store: &SessionStore, id: Option<&str>) -> anyhow::Result<Session> {
    let id = match id {
        Some(id) => id.to_string(),
        None => match store.latest()? {
            Some(s) => s.id,
            None => anyhow::bail!(
                "no saved sessions to continue (in {}); start one with `odek run`",
                store.dir().display()
            ),
        },
    };
    Ok(store.load(&id)?)
}

/// Runs `odek continue`.
pub fn run(args: ContinueArgs) -> anyhow::Result<Exit> {
    if let Err(e) = refuse_session_fixed_flags(&args.turn, "continue") {
        eprintln!("odek: {e}");
        return Ok(Exit::Usage);
    }
    let task = read_task(&args.task)?;
    // The session decides the model and endpoint: read it before the configuration.
    let (setup, flags, session) = Setup::resume(&args.turn, args.id.as_deref())?;
    let files = read_context_files(&args.turn.ctx, &setup.cwd).map_err(anyhow::Error::msg)?;
    let mut messages = session.messages.clone();
    messages.extend(context_files_message(&files));
    messages.push(Message::user(task));
    let turns = session.turns;
    setup.terminal.info(&format!(
        "odek: continuing session {} (turn {turns} → {})",
        session.id,
        turns + 1
    ));
    let rt = tokio_runtime()?;
    let engine = setup.engine(&flags)?;
    let live = LiveSession::new(Arc::new(setup.session_store()), session, setup.warn_fn());
    setup.attach_session(&live.id());
    let outcome = rt.block_on(run_with_interrupts(
        &setup,
        &engine,
        messages,
        Some(live.persist_fn()),
    ));
    match live.finish_run(&outcome) {
        Ok(()) => setup.terminal.info(&setup.terminal.style().dim(&format!(
            "odek: session {} saved ({} turns)",
            live.id(),
            live.turns()
        ))),
        Err(e) => setup
            .terminal
            .line(&format!("odek: warning: could not save the session: {e}")),
    }
    setup.finish();
    report_outcome(&setup, &outcome, setup.resolved.config.max_iterations)?;
    Ok(exit_for(&outcome.result))
}
