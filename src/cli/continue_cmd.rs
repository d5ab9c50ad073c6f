//! `odek continue`: resume a saved session with a follow-up.

use clap::Args;

use super::Exit;
use super::flags::TurnFlags;
use super::turn::{Setup, exit_for, read_task, refuse_session_fixed_flags, report_outcome};
use crate::llm::Message;
use crate::prompt::{context_files_message, read_context_files};
use crate::runtime::{Threads, TurnScope};

/// Who holds a session while `odek continue` writes it.
const HOLDER: &str = "odek continue";

/// Arguments of `odek continue`.
#[derive(Debug, Args)]
pub struct ContinueArgs {
    /// Session to resume (default: the most recently updated one)
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    #[command(flatten)]
    turn: TurnFlags,
    /// Send this image with the follow-up (PNG, JPEG, GIF or WebP; repeatable)
    #[arg(
        long = "image",
        short = 'i',
        value_name = "FILE",
        help_heading = "Model"
    )]
    images: Vec<std::path::PathBuf>,
    /// The follow-up; words are joined with spaces, `-` reads it from stdin
    #[arg(value_name = "TASK", required = true)]
    task: Vec<String>,
}

/// Runs `odek continue`.
pub fn run(args: ContinueArgs) -> crate::error::Fallible<Exit> {
    if let Err(e) = refuse_session_fixed_flags(&args.turn, "continue") {
        eprintln!("odek: {e}");
        return Ok(Exit::Usage);
    }
    let task = read_task(&args.task)?;
    // The session decides the model and endpoint: read it before the configuration.
    let (setup, session) = Setup::resume(&args.turn, args.id.as_deref(), HOLDER, Threads::Caller)?;
    let files = read_context_files(&args.turn.ctx, setup.cwd())?;
    let mut input: Vec<Message> = context_files_message(&files).into_iter().collect();
    // A follow-up that starts with `/NAME` runs that custom command (docs/COMMANDS.md).
    let (prompt, scope) = match setup.command(&task)? {
        Some(invocation) => (invocation.prompt, invocation.scope),
        None => (task.clone(), TurnScope::default()),
    };
    let (message, images) = super::run::user_message(&setup, &prompt, &task, &args.images)?;
    input.push(message);
    let turns = session.saved().turns;
    setup.terminal.info(&format!(
        "odek: continuing session {} (turn {turns} → {})",
        session.id(),
        turns + 1
    ));
    let external = [super::run::attached_sources(&args.turn.ctx), images].concat();
    let outcome = setup.run_turn(Some(&session), input, true, external, scope)?;
    if matches!(outcome.saved, Some(Ok(_))) {
        setup.terminal.info(&setup.terminal.style().dim(&format!(
            "odek: session {} saved ({} turns)",
            session.id(),
            session.saved().turns
        )));
    }
    drop(session);
    setup.finish();
    report_outcome(&setup, &outcome, setup.resolved.config.max_iterations);
    Ok(exit_for(&outcome.run.result))
}
