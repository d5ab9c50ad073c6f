//! What every turn-running command shares: resolving the configuration, the terminal, the
//! runtime, and running the engine with Ctrl-C wired to cancellation.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::Exit;
use super::audit::AuditLog;
use super::flags::TurnFlags;
use super::terminal::{AnswerStream, Terminal, TerminalOptions};
use crate::config::{LoadOptions, Resolved};
use crate::engine::{Engine, Fanout, Observer, PersistFn, RunError, RunOutcome};
use crate::events::{
    Emitter, EmitterOptions, EventSink, EventsObserver, StdoutSink, open_jsonl_file,
};
use crate::llm::Message;
use crate::redact::Redactor;
use crate::runtime::{ModelSource, RuntimeOptions, build_redactor, build_runtime};
use crate::session::{Session, SessionStore};

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
    /// The event stream, when `--events-jsonl` was given.
    pub events: Option<Emitter>,
    /// The audit log of ingested content.
    pub audit: Arc<AuditLog>,
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
        let events = match &flags.events_jsonl {
            Some(target) => Some(open_events(target, &redactor, flags.events_include_args)?),
            None => None,
        };
        let audit = Arc::new(AuditLog::new(
            resolved.home.join("sessions"),
            redactor.clone(),
        ));
        Ok(Setup {
            resolved,
            terminal,
            redactor,
            cwd,
            events,
            audit,
        })
    }

    /// The terminal, plus the event stream when there is one.
    pub fn observer(&self) -> Arc<dyn Observer> {
        let mut observers: Vec<Arc<dyn Observer>> = vec![self.terminal.clone(), self.audit.clone()];
        if let Some(e) = &self.events {
            observers.push(Arc::new(EventsObserver::new(e.clone())));
        }
        Arc::new(Fanout(observers))
    }

    /// Points the event stream and the audit log at a session.
    pub fn attach_session(&self, id: &str) {
        self.audit.set_session(id);
        if let Some(e) = &self.events {
            e.set_session_id(Some(id.to_string()));
        }
    }

    /// Setup for resuming a saved session (`continue`, `repl --id`): the session is read
    /// first, because it decides the model and the endpoint; the returned flags carry them.
    pub fn resume(
        flags: &TurnFlags,
        id: Option<&str>,
    ) -> anyhow::Result<(Setup, TurnFlags, Session)> {
        let env = std::env::vars().collect();
        let probe = SessionStore::new(
            &crate::config::home_dir_from(&env),
            Arc::new(Redactor::new()),
        );
        let session = super::continue_cmd::load_session(&probe, id)?;
        let mut flags = flags.clone();
        flags.model = Some(session.model.clone());
        flags.base_url = session.base_url.clone();
        Ok((Setup::new(&flags)?, flags, session))
    }

    /// The leading injections of a new conversation: `./AGENTS.md` (unless `no_agents`) and
    /// the `--ctx` files.
    pub fn injections(&self, ctx: &[String]) -> anyhow::Result<Vec<Message>> {
        let mut out = Vec::new();
        if !self.resolved.config.no_agents {
            match crate::prompt::agents_message(&self.cwd) {
                Ok(m) => out.extend(m),
                Err(e) => self.terminal.line(&format!("odek: warning: {e}")),
            }
        }
        let files =
            crate::prompt::read_context_files(ctx, &self.cwd).map_err(anyhow::Error::msg)?;
        out.extend(crate::prompt::context_files_message(&files));
        Ok(out)
    }

    /// The system prompt message for this configuration.
    pub fn system_message(&self) -> Message {
        Message::system(crate::prompt::system_prompt(
            &self.resolved.config,
            &self.cwd,
        ))
    }

    /// The session store under this configuration's home.
    pub fn session_store(&self) -> SessionStore {
        SessionStore::new(&self.resolved.home, self.redactor.clone())
    }

    /// Prints a warning line on the terminal (for callbacks that outlive a borrow).
    pub fn warn_fn(&self) -> Arc<dyn Fn(&str) + Send + Sync> {
        let t = self.terminal.clone();
        Arc::new(move |w: &str| t.line(&format!("odek: warning: {w}")))
    }

    /// Stops the spinner and flushes the event stream.
    pub fn finish(&self) {
        self.terminal.shutdown();
        if let Some(e) = &self.events {
            e.close();
            if e.dropped() > 0 {
                self.terminal.line(&format!(
                    "odek: warning: {} event(s) were dropped because the reader was too slow",
                    e.dropped()
                ));
            }
            if e.write_errors() > 0 {
                self.terminal.line(&format!(
                    "odek: events-jsonl: {} line(s) could not be written",
                    e.write_errors()
                ));
            }
        }
    }

    /// Builds the engine for this setup.
    pub fn engine(&self, flags: &TurnFlags) -> anyhow::Result<Engine> {
        let observer = self.observer();
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
                on_plan_change: self.events.clone().map(EventsObserver::plan_callback),
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
    setup: &Setup,
    engine: &Engine,
    messages: Vec<Message>,
    persist: Option<PersistFn>,
) -> RunOutcome {
    run_with_interrupts_in(setup, engine, messages, persist, true).await
}

/// Like [`run_with_interrupts`]; with `exit_on_second` false (the REPL) a second Ctrl-C only
/// repeats the cancellation, so the REPL always gets its prompt back.
pub async fn run_with_interrupts_in(
    setup: &Setup,
    engine: &Engine,
    messages: Vec<Message>,
    persist: Option<PersistFn>,
    exit_on_second: bool,
) -> RunOutcome {
    let cancel = CancellationToken::new();
    let interrupted = Arc::new(AtomicBool::new(false));
    if let Some(e) = &setup.events {
        e.begin_run();
    }
    let watcher = tokio::spawn(watch_signals(
        cancel.clone(),
        interrupted.clone(),
        setup.events.clone(),
        exit_on_second,
    ));
    let outcome = engine.run(messages, persist, cancel).await;
    watcher.abort();
    outcome
}

async fn watch_signals(
    cancel: CancellationToken,
    interrupted: Arc<AtomicBool>,
    events: Option<Emitter>,
    exit_on_second: bool,
) {
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
        if interrupted.swap(true, Ordering::SeqCst) && exit_on_second {
            eprintln!("\nodek: interrupted twice; exiting without waiting");
            if let Some(e) = &events {
                e.abort_run("context_canceled", "interrupted");
            }
            std::process::exit(Exit::Interrupted as i32);
        }
        if exit_on_second {
            eprintln!("\nodek: interrupting… (press Ctrl-C again to exit at once)");
        } else {
            eprintln!("\nodek: interrupting this turn…");
        }
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

fn open_events(
    target: &str,
    redactor: &Arc<Redactor>,
    include_args: bool,
) -> anyhow::Result<Emitter> {
    let sink: Box<dyn EventSink> = if target == "-" {
        Box::new(StdoutSink)
    } else {
        let path = std::path::Path::new(target);
        Box::new(open_jsonl_file(path).with_context(|| format!("events-jsonl {target}"))?)
    };
    Ok(Emitter::new(
        sink,
        redactor.clone(),
        EmitterOptions { include_args },
    ))
}

/// Prints the answer (or the reason there is none). Model and other run errors are returned
/// so the caller's error path prints them with a hint.
pub fn report_outcome(
    setup: &Setup,
    outcome: &RunOutcome,
    max_iterations: u32,
) -> anyhow::Result<()> {
    let t = &setup.terminal;
    match &outcome.result {
        Ok(answer) => {
            t.print_answer(answer);
            if outcome.partial {
                t.info(&t.style().yellow(&format!(
                    "odek: reached max iterations ({max_iterations}); the answer above is a partial summary"
                )));
            }
            Ok(())
        }
        Err(RunError::Cancelled) => {
            t.line("odek: interrupted");
            Ok(())
        }
        Err(e @ RunError::Budget { .. }) => {
            t.line(&format!("{} {e}", t.style().red("odek:")));
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}
