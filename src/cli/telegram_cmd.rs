//! `odek telegram`: resolves the configuration like every other command, builds the one
//! runtime (events to `--events-jsonl` when asked), checks the bot's settings and runs the
//! bot until SIGINT/SIGTERM (see `crate::telegram`).

use clap::Args;

use super::Exit;
use super::flags::SurfaceFlags;
use super::turn::events_sink;
use crate::runtime::{Process, StartOptions};
use crate::telegram::{BotParts, run_bot};

/// Arguments of `odek telegram`.
#[derive(Debug, Args)]
pub struct TelegramArgs {
    #[command(flatten)]
    surface: SurfaceFlags,
    /// Append every event to FILE (`-` = stdout)
    #[arg(long, value_name = "FILE")]
    events_jsonl: Option<String>,
}

/// Runs `odek telegram`.
pub fn run(args: TelegramArgs) -> crate::error::Fallible<Exit> {
    let (load, resolved) = args.surface.resolve()?;
    let tg = resolved.config.telegram.clone();
    let config_file = resolved.home.join("config.json");
    if tg.bot_token.is_none() {
        crate::error::bail!(
            "no Telegram bot token: set telegram.bot_token in {} or ODEK_TELEGRAM_TOKEN (see docs/TELEGRAM.md)",
            config_file.display()
        );
    }
    if tg.allowed_users.is_empty() && tg.allowed_chats.is_empty() {
        crate::error::bail!(
            "refusing to start a bot anyone could use: list your Telegram user id in telegram.allowed_users (or chats in telegram.allowed_chats) in {}",
            config_file.display()
        );
    }
    let events = match args.events_jsonl.as_deref() {
        Some(target) => Some(events_sink(target)?),
        None => None,
    };
    let dir = resolved.home.join("telegram");
    let mut start = StartOptions::new(resolved.config, resolved.home, load.cwd.clone());
    start.events = events;
    // The event writer is flushed and closed when `process` goes, on every way out.
    let process = Process::start(start)?;
    process
        .runtime
        .warnings()
        .iter()
        .for_each(|w| eprintln!("{w}"));
    eprintln!(
        "odek telegram ⚡  polling {} for {} user(s) and {} chat(s); stop with Ctrl-C",
        tg.api_base,
        tg.allowed_users.len(),
        tg.allowed_chats.len()
    );
    let chat = crate::telegram::chat_delivery(process.runtime.config());
    let schedules = crate::schedule::spawn_background(&process, "telegram", false, chat)
        .unwrap_or_else(|e| {
            eprintln!("odek telegram: warning: scheduled jobs do not run: {e}");
            None
        });
    process.block_on(async {
        for warning in process.start_mcp().await {
            eprintln!("{warning}");
        }
        let shutdown = tokio_util::sync::CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            crate::process_group::termination().await;
            stop.cancel();
        });
        let parts = BotParts {
            runtime: process.runtime.clone(),
            supervisor: process.supervisor.clone(),
            config: tg,
            dir,
        };
        let ended = run_bot(parts, shutdown).await;
        if let Some(runner) = schedules {
            runner.stop().await;
        }
        process.runtime.mcp().shutdown().await;
        ended
    })?;
    drop(process);
    eprintln!("odek telegram: stopped");
    Ok(Exit::Success)
}
