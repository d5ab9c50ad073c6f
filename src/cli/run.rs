//! `odek run`: one task to a final answer.

use std::path::PathBuf;

use clap::Args;

use super::Exit;
use super::flags::TurnFlags;
use super::turn::{Setup, exit_for, read_task, report_outcome};
use crate::llm::Message;
use crate::runtime::{Threads, TurnScope};
use crate::schedule::deliver::{Delivery, Target};
use crate::session::ORIGIN_CLI;

/// Who holds a session while `odek run` writes it.
const HOLDER: &str = "odek run";

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
    /// Send this image with the task (PNG, JPEG, GIF or WebP; repeatable; `@shot.png` in the task does too)
    #[arg(
        long = "image",
        short = 'i',
        value_name = "FILE",
        help_heading = "Model"
    )]
    images: Vec<PathBuf>,
    /// Also deliver the answer: log, file:PATH, telegram or telegram:CHAT_ID (as schedules do)
    #[arg(long, value_name = "TARGET", help_heading = "Output")]
    deliver: Option<String>,
    /// The task; words are joined with spaces, `-` reads it from stdin, `--` ends the flags
    #[arg(value_name = "TASK", required = true)]
    task: Vec<String>,
}

/// Runs `odek run`.
pub fn run(args: RunArgs) -> crate::error::Fallible<Exit> {
    let task = read_task(&args.task)?;
    let target = args
        .deliver
        .as_deref()
        .map(str::parse::<Target>)
        .transpose()
        .map_err(|e| super::error::UsageError(e.to_string()))?;
    let setup = Setup::new(&args.turn, Threads::Caller)?;
    // A task that starts with `/NAME` runs that custom command (docs/COMMANDS.md).
    let (prompt, scope) = match setup.command(&task)? {
        Some(invocation) => (invocation.prompt, invocation.scope),
        None => (task.clone(), TurnScope::default()),
    };
    let config = &setup.resolved.config;
    let (message, images) = user_message(&setup, &prompt, &task, &args.images)?;
    let mut head = setup.first_messages(&args.turn.ctx)?;
    let save = args.session || (config.sessions.autosave && !args.ephemeral);
    // The session is held from here to the end; its first snapshot (with the task) is
    // written before the first model call, so even a crash there leaves the task on disk.
    let (session, input) = if save {
        let session = setup.runtime.new_session(&task, head, ORIGIN_CLI, HOLDER)?;
        (Some(session), vec![message])
    } else {
        head.push(message);
        (None, head)
    };
    // Attached files are outside content: the turn's memory writes wait for review.
    let external = [attached_sources(&args.turn.ctx), images].concat();
    let outcome = setup.run_turn(session.as_ref(), input, true, external, scope)?;
    if let Some(s) = &session
        && matches!(outcome.saved, Some(Ok(_)))
    {
        setup.terminal.info(&setup.terminal.style().dim(&format!(
            "odek: session {} saved — continue with: odek continue \"…\"",
            s.id()
        )));
    }
    let session_id = session.as_ref().map(|s| s.id().to_string());
    drop(session);
    setup.finish();
    report_outcome(&setup, &outcome, config.max_iterations);
    if let (Some(target), Ok(answer)) = (&target, &outcome.run.result)
        && *target != Target::Stdout
    {
        let chat = crate::telegram::chat_delivery(config);
        let delivery = Delivery::from_config(config, &setup.resolved.home, chat);
        let header = format!(
            "=== odek run {} (session {})",
            jiff::Timestamp::now(),
            session_id.as_deref().unwrap_or("not saved")
        );
        let answer = setup.runtime.redactor().redact(answer);
        if let Err(e) = setup
            .process
            .block_on(delivery.deliver(target, "run", &header, &answer))
        {
            eprintln!("odek: the answer could not be delivered: {e}");
            return Ok(Exit::Failure);
        }
    }
    Ok(exit_for(&outcome.run.result))
}

/// The user message of `prompt` with the images `typed` (the task as given) names with
/// `@path` and the `-i` files, and `image` when there are any (outside content for the turn);
/// refused, before any request, when one cannot be sent or the model takes no images.
pub(super) fn user_message(
    setup: &Setup,
    prompt: &str,
    typed: &str,
    files: &[PathBuf],
) -> crate::error::Fallible<(Message, Vec<String>)> {
    let config = &setup.resolved.config;
    let target = super::repl_input::ImageTarget {
        takes: config.images,
        model: &config.model,
    };
    let images = super::repl_input::prompt_images(files, typed, setup.cwd(), target)?;
    let external = if images.is_empty() {
        Vec::new()
    } else {
        vec!["image".to_string()]
    };
    let mut message = Message::user(prompt);
    crate::prompt::attach_images(&mut message, images);
    Ok((message, external))
}

/// `ctx` when `--ctx` files are attached (outside content for the turn).
pub(super) fn attached_sources(ctx: &[String]) -> Vec<String> {
    if ctx.is_empty() {
        Vec::new()
    } else {
        vec!["ctx".into()]
    }
}
