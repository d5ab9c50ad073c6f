//! What every turn-running command shares: resolving the configuration, the terminal, the
//! runtime, and running the engine with Ctrl-C wired to cancellation.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::Exit;
use super::flags::TurnFlags;
use super::terminal::{AnswerStream, Terminal, TerminalOptions};
use crate::config::{LoadOptions, Resolved};
use crate::engine::{Engine, Observer, PersistFn, RunError, RunOutcome};
use crate::llm::Message;
use crate::redact::Redactor;
use crate::runtime::{ModelSource, RuntimeOptions, build_redactor, build_runtime};

/// Everything a command needs before it runs turns.
pub struct Setup {
    /// The resolved configuration.
    pub resolved: Resolved,
    /// The terminal observer.
    pub terminal: Arc<Terminal>,
    /// Secret redaction for this process.
    pub redactor: Arc<Redactor>,
    /// The working directory.
    pub cwd: PathBuf,
}

impl Setup {
    /// Resolves the configuration (printing its warnings) and prepares the terminal.
    pub fn new(flags: &TurnFlags) -> anyhow::Result<Setup> {
        super::init_tracing(flags.verbose);
        let opts = LoadOptions::from_process(flags.overrides());
        let cwd = opts.cwd.clone();
        let resolved = crate::config::load(&opts)?;
        let events_on_stdout = flags.events_jsonl.as_deref() == Some("-");
        let terminal = Terminal::new(TerminalOptions {
            quiet: flags.quiet,
            verbose: flags.verbose,
            color: !resolved.config.no_color,
            answer: if events_on_stdout {
                AnswerStream::Stderr
            } else {
                AnswerStream::Stdout
            },
            stream: resolved.config.stream,
        });
        for w in &resolved.warnings {
            terminal.line(&terminal.style().yellow(w));
        }
        let redactor = build_redactor(&resolved.config);
        Ok(Setup {
            resolved,
            terminal,
            redactor,
            cwd,
        })
    }

    /// Builds the engine for this setup.
    pub fn engine(&self, flags: &TurnFlags, observer: Arc<dyn Observer>) -> anyhow::Result<Engine> {
        let approver: Option<Arc<dyn crate::tools::approval::Approver>> = if interactive() {
            Some(self.terminal.clone())
        } else {
            None
        };
        let engine = build_runtime(
            &self.resolved.config,
            RuntimeOptions {
                home: self.resolved.home.clone(),
                cwd: self.cwd.clone(),
                model_source: match &flags.replay {
                    Some(p) => ModelSource::Replay(p.clone()),
                    None => ModelSource::Http,
                },
                record: flags.record.clone(),
                observer,
                approver,
                redactor: self.redactor.clone(),
                on_plan_change: None,
            },
        )?;
        Ok(engine)
    }
}

/// True when a person can answer approval prompts (stdin and stderr are terminals).
pub fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Runs the engine until it finishes or Ctrl-C. The first Ctrl-C cancels the run (tools are
/// stopped, the transcript saved); a second one exits at once.
pub async fn run_with_interrupts(
    engine: &Engine,
    messages: Vec<Message>,
    persist: Option<PersistFn>,
) -> RunOutcome {
    let cancel = CancellationToken::new();
    let interrupted = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_signals(cancel.clone(), interrupted.clone()));
    let outcome = engine.run(messages, persist, cancel).await;
    watcher.abort();
    outcome
}

async fn watch_signals(cancel: CancellationToken, interrupted: Arc<AtomicBool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    loop {
        tokio::select! {
            _ = int.recv() => {},
            _ = term.recv() => {},
        }
        if interrupted.swap(true, Ordering::SeqCst) {
            eprintln!("\nodek: interrupted twice; exiting without waiting");
            std::process::exit(Exit::Interrupted as i32);
        }
        eprintln!("\nodek: interrupting… (press Ctrl-C again to exit at once)");
        cancel.cancel();
    }
}

/// The exit code for a finished run.
pub fn exit_for(result: &Result<String, RunError>) -> Exit {
    match result {
        Ok(_) => Exit::Success,
        Err(RunError::Cancelled) => Exit::Interrupted,
        Err(RunError::Budget { .. }) => Exit::Budget,
        Err(_) => Exit::Failure,
    }
}

/// Reads the task: words joined with spaces, or stdin for `-`.
pub fn read_task(words: &[String]) -> anyhow::Result<String> {
    let task = if words.len() == 1 && words[0] == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .context("reading the task from stdin")?;
        text
    } else {
        words.join(" ")
    };
    let task = task.trim().to_string();
    if task.is_empty() {
        anyhow::bail!("no task provided");
    }
    Ok(task)
}

/// A multi-threaded runtime for one command.
pub fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
