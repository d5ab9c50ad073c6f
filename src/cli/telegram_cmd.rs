//! `odek telegram`: resolves the configuration like every other command, builds the one
//! runtime (events to `--events-jsonl` when asked), checks the bot's settings and runs the
//! bot until SIGINT/SIGTERM (see `crate::telegram`).

use clap::Args;

use super::Exit;
use super::turn::{events_sink, tokio_runtime};
use crate::config::{LoadOptions, PartialConfig, PartialPlanning};
use crate::events::{EmitterOptions, EventWriter};
use crate::runtime::{ModelSource, Runtime, RuntimeOptions, build_redactor};
use crate::telegram::{BotParts, run_bot};

/// Arguments of `odek telegram`.
#[derive(Debug, Args)]
pub struct TelegramArgs {
    /// Model name for new chat sessions
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// OpenAI-compatible endpoint for new chat sessions
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Give turns the structured plan (the default)
    #[arg(long, overrides_with = "no_planning")]
    planning: bool,
    /// Turns without the plan tool
    #[arg(long, overrides_with = "planning")]
    no_planning: bool,
    /// Iterations per turn before the partial summary
    #[arg(long = "max-iter", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_iter: Option<u32>,
    /// Append every event to FILE (`-` = stdout)
    #[arg(long, value_name = "FILE")]
    events_jsonl: Option<String>,
    /// More log output on stderr (-vv for debug)
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

impl TelegramArgs {
    fn overrides(&self) -> PartialConfig {
        let planning = super::flags::toggle(self.planning, self.no_planning);
        PartialConfig {
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            max_iterations: self.max_iter,
            planning: planning.map(|enabled| PartialPlanning {
                enabled: Some(enabled),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

/// Runs `odek telegram`.
pub fn run(args: TelegramArgs) -> anyhow::Result<Exit> {
    super::init_tracing(args.verbose);
    let load = LoadOptions::from_process(args.overrides());
    let resolved = crate::config::load(&load)?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let tg = resolved.config.telegram.clone();
    let config_file = resolved.home.join("config.json");
    if tg.bot_token.is_none() {
        anyhow::bail!(
            "no Telegram bot token: set telegram.bot_token in {} or ODEK_TELEGRAM_TOKEN (see docs/TELEGRAM.md)",
            config_file.display()
        );
    }
    if tg.allowed_users.is_empty() && tg.allowed_chats.is_empty() {
        anyhow::bail!(
            "refusing to start a bot anyone could use: list your Telegram user id in telegram.allowed_users (or chats in telegram.allowed_chats) in {}",
            config_file.display()
        );
    }
    let redactor = build_redactor(&resolved.config);
    let events = match args.events_jsonl.as_deref() {
        Some(target) => Some(EventWriter::new(
            events_sink(target)?,
            redactor.clone(),
            EmitterOptions::default(),
        )),
        None => None,
    };
    let dir = resolved.home.join("telegram");
    let runtime = Runtime::build(
        resolved.config,
        RuntimeOptions {
            home: resolved.home,
            cwd: load.cwd.clone(),
            model_source: ModelSource::Http,
            record: None,
            events,
            redactor,
        },
    )?;
    runtime.warnings().iter().for_each(|w| eprintln!("{w}"));
    eprintln!(
        "odek telegram ⚡  polling {} for {} user(s) and {} chat(s); stop with Ctrl-C",
        tg.api_base,
        tg.allowed_users.len(),
        tg.allowed_chats.len()
    );
    let rt = tokio_runtime()?;
    rt.block_on(async move {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            crate::serve::termination().await;
            stop.cancel();
        });
        let parts = BotParts {
            runtime: std::sync::Arc::new(runtime),
            config: tg,
            dir,
        };
        run_bot(parts, shutdown).await
    })?;
    eprintln!("odek telegram: stopped");
    Ok(Exit::Success)
}
