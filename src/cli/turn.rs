//! What every turn-running command shares: resolving the configuration, the terminal, the
//! runtime, and running a turn with Ctrl-C wired to cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::Context;

use super::Exit;
use super::flags::TurnFlags;
use super::terminal::{AnswerStream, Terminal, TerminalApprover, TerminalOptions};
use crate::config::{LoadOptions, Resolved};
use crate::engine::RunError;
use crate::events::{Emitter, EventSink, StdoutSink, open_jsonl_file};
use crate::llm::Message;
use crate::redact::Redactor;
use crate::runtime::{
    Approvals, Invocation, ModelSource, Process, RunHandle, Runtime, SessionHandle, StartOptions,
    Submission, Supervisor, Threads, TurnOutcome, TurnScope,
};
use crate::session::{Session, SessionStore};

/// Everything a command needs before it runs turns.
pub struct Setup {
    /// The resolved configuration.
    pub resolved: Resolved,
    /// The terminal observer.
    pub terminal: Arc<Terminal>,
    /// The runtime every turn is built from.
    pub runtime: Arc<Runtime>,
    /// The process: its supervisor, and the event writer closed on every way out.
    pub process: Process,
    /// The mode of the turns (`--mode`, the REPL's `/mode`); `None`: the configured policy.
    pub mode: Option<crate::danger_policy::Mode>,
}

impl Setup {
    /// Resolves the configuration (printing its warnings), prepares the terminal and the
    /// event stream, and builds the runtime, its tasks running where `threads` says.
    pub fn new(flags: &TurnFlags, threads: Threads) -> crate::error::Fallible<Setup> {
        Setup::build(flags, None, threads)
    }

    /// [`Setup::new`] for a session that ran with `saved_sandbox` (see
    /// [`Config::keep_sandbox_posture`]).
    fn build(
        flags: &TurnFlags,
        saved_sandbox: Option<bool>,
        threads: Threads,
    ) -> crate::error::Fallible<Setup> {
        super::logging::init_tracing(flags.verbose);
        let mut opts = LoadOptions::from_process(flags.overrides());
        if let Some(name) = &flags.agent {
            super::agent_flag::add_agent_layer(&mut opts, name)?;
        }
        let cwd = opts.cwd.clone();
        let mut resolved = crate::config::load(&opts)?;
        if let Some(notice) = resolved
            .config
            .keep_sandbox_posture(flags.sandbox, saved_sandbox)
        {
            eprintln!("{notice}");
        }
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
            markdown: !resolved.config.raw,
        });
        for w in &resolved.warnings {
            terminal.line(&terminal.style().yellow(w));
        }
        let events = match &flags.events_jsonl {
            Some(target) => Some(events_sink(target)?),
            None => None,
        };
        let mut start = StartOptions::new(resolved.config.clone(), resolved.home.clone(), cwd);
        start.model_source = match &flags.replay {
            Some(p) => ModelSource::Replay(p.clone()),
            None => ModelSource::Http,
        };
        start.record = flags.record.clone();
        start.events = events;
        start.include_args = flags.events_include_args;
        start.threads = threads;
        let process = Process::start(start)?;
        let runtime = process.runtime.clone();
        for w in runtime.warnings() {
            terminal.line(&terminal.style().yellow(w));
        }
        if let Some(by) = &resolved.config.dangerous_override {
            terminal.line(&terminal.style().red(&yolo_banner(by)));
        }
        Ok(Setup {
            resolved,
            terminal,
            runtime,
            process,
            mode: flags.mode,
        })
    }

    /// Setup for resuming a saved session (`continue`, `repl --id`), held for writing by
    /// `holder` (refused at once when another writer holds it). The session decides the
    /// model and the endpoint, so it is read before the configuration is resolved.
    pub fn resume(
        flags: &TurnFlags,
        id: Option<&str>,
        holder: &str,
        threads: Threads,
    ) -> crate::error::Fallible<(Setup, Arc<SessionHandle>)> {
        let env = std::env::vars().collect();
        let probe = SessionStore::new(
            &crate::config::home_dir_from(&env),
            Arc::new(Redactor::new()),
        );
        let peek = load_session(&probe, id)?;
        let mut flags = flags.clone();
        let retarget = flags.provider.is_some();
        let mut switch_to = None;
        if !retarget {
            switch_to = flags.model.replace(peek.model.clone());
            flags.base_url = peek.base_url.clone();
            flags.provider = peek.provider.clone();
        }
        let setup = Setup::build(&flags, peek.sandbox, threads)?;
        if !retarget {
            let session = setup.runtime.open_session(&peek.id, holder)?;
            if let Some(wanted) = switch_to {
                setup.switch_model(&session, &wanted)?;
            }
            return Ok((setup, session));
        }
        let (session, before) = setup.runtime.open_session_retargeted(&peek.id, holder)?;
        if let Some(note) = retarget_note(&before, &setup.resolved.config) {
            setup.terminal.info(&note);
        }
        Ok((setup, session))
    }

    /// The working directory.
    pub fn cwd(&self) -> &std::path::Path {
        self.runtime.cwd()
    }

    /// The first messages of a new conversation: the runtime's (system prompt,
    /// `./AGENTS.md`), then the `--ctx` files.
    pub fn first_messages(&self, ctx: &[String]) -> crate::error::Fallible<Vec<Message>> {
        let (mut out, warning) = self.runtime.first_messages();
        if let Some(w) = warning {
            self.warn(&w.to_string());
        }
        let files = crate::prompt::read_context_files(ctx, self.cwd())?;
        out.extend(crate::prompt::context_files_message(&files));
        Ok(out)
    }

    /// What `text` runs when it is a custom command (`/NAME args`): its invocation, whose
    /// warnings are shown now with the catalog's (files skipped or hidden); `None` for any
    /// other text.
    pub fn command(&self, text: &str) -> crate::error::Fallible<Option<Invocation>> {
        if !text.starts_with('/') {
            return Ok(None);
        }
        let catalog = self.runtime.commands();
        for w in catalog.warnings() {
            self.terminal.line(&self.terminal.style().yellow(&w));
        }
        let Some(invocation) = self.runtime.expand_in(&catalog, text)? else {
            return Ok(None);
        };
        for w in &invocation.warnings {
            self.warn(w);
        }
        let t = &self.terminal;
        t.info(&t.style().dim(&format!(
            "odek: /{} ({})",
            invocation.name,
            invocation.source.label()
        )));
        Ok(Some(invocation))
    }

    /// Who answers approvals: the terminal's prompt when a person is there, else nobody
    /// (the policy's `non_interactive` decides).
    fn approvals(&self) -> Approvals {
        if interactive() {
            Approvals::Local(Arc::new(TerminalApprover(self.terminal.clone())))
        } else {
            Approvals::Nobody
        }
    }

    /// Runs one turn of `session` (or an unsaved conversation) through the supervisor, with
    /// Ctrl-C wired to cancellation: the first Ctrl-C cancels the turn (tools are stopped,
    /// the transcript saved); a second one exits at once when `exit_on_second` (in the REPL
    /// it only repeats the cancellation, so the REPL always gets its prompt back). `scope`
    /// narrows the turn to a custom command's model and tools (the default: nothing).
    pub fn run_turn(
        &self,
        session: Option<&Arc<SessionHandle>>,
        input: Vec<Message>,
        exit_on_second: bool,
        external: Vec<String>,
        scope: TurnScope,
    ) -> crate::error::Fallible<TurnOutcome> {
        let (handle, watcher) =
            self.submit_turn(session, input, exit_on_second, external, scope)?;
        let outcome = self.process.block_on(handle.outcome());
        watcher.abort();
        let outcome = outcome?;
        self.report_save(&outcome);
        Ok(outcome)
    }

    /// [`Setup::run_turn`] without the wait: the turn is submitted and its handle returned
    /// at once, Ctrl-C wired to it until the watcher is aborted (the REPL reads lines while
    /// its turn runs).
    pub fn submit_turn(
        &self,
        session: Option<&Arc<SessionHandle>>,
        input: Vec<Message>,
        exit_on_second: bool,
        external: Vec<String>,
        scope: TurnScope,
    ) -> crate::error::Fallible<(RunHandle, tokio::task::JoinHandle<()>)> {
        self.start_mcp();
        let scope = TurnScope {
            mode: scope.mode.or(self.mode),
            ..scope
        };
        let supervisor = self.process.supervisor.clone();
        let _context = self.process.handle().enter();
        // The handlers are in place before the turn starts, so no Ctrl-C is missed.
        let signals = TurnSignals::listen();
        let handle = supervisor.submit(Submission {
            runtime: self.runtime.clone(),
            session: session.cloned(),
            input,
            approvals: self.approvals(),
            output: self.terminal.clone(),
            external,
            origin: crate::session::ORIGIN_CLI,
            files: None,
            scope,
        })?;
        let watcher = self.process.handle().spawn(watch_signals(
            signals,
            supervisor.clone(),
            handle.run_id.clone(),
            handle.events.clone(),
            exit_on_second,
            self.runtime.mcp().clone(),
        ));
        Ok((handle, watcher))
    }

    /// Warns of what the end-of-turn save reported (or that it failed).
    pub fn report_save(&self, outcome: &TurnOutcome) {
        if let Some(saved) = &outcome.saved {
            match saved {
                Ok(report) => report.warnings.iter().for_each(|w| self.warn(w)),
                Err(e) => self.warn(&format!("could not save the session: {e}")),
            }
        }
    }

    /// Starts the MCP servers before the first turn (later calls return at once), saying so
    /// when it takes more than a second, and prints the warnings of those that did not start.
    fn start_mcp(&self) {
        let hub = self.runtime.mcp();
        if hub.is_empty() {
            return;
        }
        let warnings = self.process.block_on(async {
            let start = self.process.start_mcp();
            tokio::pin!(start);
            let slow = tokio::time::sleep(std::time::Duration::from_secs(1));
            tokio::pin!(slow);
            loop {
                tokio::select! {
                    warnings = &mut start => return warnings,
                    () = &mut slow, if !slow.is_elapsed() => {
                        self.terminal.info(&self.terminal.style().dim("odek: starting MCP servers…"));
                    }
                    _ = tokio::signal::ctrl_c() => {
                        // The servers being started die with us (no turn to cancel yet).
                        hub.kill_now();
                        self.terminal.shutdown();
                        eprintln!("\nodek: interrupted while starting MCP servers");
                        std::process::exit(Exit::Interrupted as i32);
                    }
                }
            }
        });
        for w in warnings {
            self.terminal.line(&self.terminal.style().yellow(&w));
        }
    }

    /// Switches `session` to `wanted` (`[PROVIDER:]MODEL`: `continue --model`, `repl --id
    /// --model`), telling the move as `continue --provider` does.
    fn switch_model(&self, session: &SessionHandle, wanted: &str) -> crate::error::Fallible<()> {
        let wanted = crate::config::ModelRef::parse(wanted, &self.resolved.config)?;
        if let Some(note) = self.runtime.switch_model(session, &wanted)? {
            self.terminal.info(&format!("odek: note: {note}"));
        }
        Ok(())
    }

    /// Prints `odek: warning: …`.
    pub fn warn(&self, text: &str) {
        self.terminal.line(&format!("odek: warning: {text}"));
    }

    /// Stops the MCP servers and the spinner, and flushes the event stream (reporting what
    /// it lost).
    pub fn finish(&self) {
        self.process.block_on(self.runtime.mcp().shutdown());
        self.terminal.shutdown();
        self.process.close_events();
    }
}

/// What `continue --provider` tells when the session moves (see `Retarget::note`).
fn retarget_note(
    before: &crate::runtime::Retarget,
    config: &crate::config::Config,
) -> Option<String> {
    let note = before.note(config.provider.as_deref(), &config.model)?;
    Some(format!("odek: note: {note}"))
}

/// Refuses the flags a resumed session keeps, with a message saying so.
pub fn refuse_session_fixed_flags(flags: &TurnFlags, command: &str) -> crate::error::Fallible<()> {
    let fixed = flags.session_fixed_flags();
    if fixed.is_empty() {
        return Ok(());
    }
    crate::error::bail!(
        "{command} cannot change {}: a resumed session keeps its provider, endpoint and system prompt (`--model [PROVIDER:]MODEL` switches its model; `--provider ID` moves it to a provider, with `--model`/`--base-url` if given; start a new session with `odek run` for a new system prompt)",
        fixed.join(", ")
    )
}

/// Loads `id`, or the most recently updated session started by the command line.
pub fn load_session(store: &SessionStore, id: Option<&str>) -> crate::error::Fallible<Session> {
    let id = match id {
        Some(id) => id.to_string(),
        None => match store.latest_cli()? {
            Some(s) => s.id,
            None => crate::error::bail!(
                "no saved sessions to continue (in {}); start one with `odek run`",
                store.dir().display()
            ),
        },
    };
    Ok(store.load(&id)?)
}

/// True when a person can answer approval prompts (stdin and stderr are terminals).
pub fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// SIGINT and SIGTERM, listened to from before a turn starts.
struct TurnSignals(Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>);

impl TurnSignals {
    /// Installs the handlers (needs the runtime's context).
    fn listen() -> TurnSignals {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(int), Ok(term)) => TurnSignals(Some((int, term))),
            _ => TurnSignals(None),
        }
    }
}

async fn watch_signals(
    signals: TurnSignals,
    supervisor: Supervisor,
    run_id: String,
    events: Option<Emitter>,
    exit_on_second: bool,
    mcp: Arc<crate::mcp_client::McpHub>,
) {
    let interrupted = AtomicBool::new(false);
    let Some((mut int, mut term)) = signals.0 else {
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
            mcp.kill_now();
            std::process::exit(Exit::Interrupted as i32);
        }
        if exit_on_second {
            eprintln!("\nodek: interrupting… (press Ctrl-C again to exit at once)");
        } else {
            eprintln!("\nodek: interrupting this turn…");
        }
        let _ = supervisor.cancel(&run_id);
    }
}

/// The exit code for a finished run.
pub fn exit_for(result: &Result<String, RunError>) -> Exit {
    match result {
        Ok(_) => Exit::Success,
        Err(e) => super::error::exit_of(crate::error::Classified::kind(e)),
    }
}

/// Reads the task: words joined with spaces, or stdin for `-`.
pub fn read_task(words: &[String]) -> crate::error::Fallible<String> {
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
        crate::error::bail!("no task provided");
    }
    Ok(task)
}

/// A multi-threaded async runtime for a command that runs no turn (a turn-running command
/// gets the [`crate::runtime::Process`]'s).
pub fn tokio_runtime() -> crate::error::Fallible<tokio::runtime::Runtime> {
    Ok(crate::runtime::async_runtime()?)
}

/// Where `--events-jsonl TARGET` writes: standard output for `-`, else the file (0600,
/// appended, never through a symbolic link).
pub fn events_sink(target: &str) -> crate::error::Fallible<Box<dyn EventSink>> {
    if target == "-" {
        return Ok(Box::new(StdoutSink));
    }
    let path = std::path::Path::new(target);
    Ok(Box::new(
        open_jsonl_file(path).with_context(|| format!("events-jsonl {target}"))?,
    ))
}

/// Prints the answer (or the reason there is none, with its hint) and the run's summary
/// line.
pub fn report_outcome(setup: &Setup, outcome: &TurnOutcome, max_iterations: u32) {
    let t = &setup.terminal;
    if let Some(summary) = &outcome.run.summary {
        t.print_report(summary);
    }
    match &outcome.run.result {
        Ok(answer) => {
            t.print_answer(answer);
            if outcome.run.partial {
                t.info(&t.style().yellow(&format!(
                    "odek: reached max iterations ({max_iterations}); the answer above is a partial summary"
                )));
            }
        }
        Err(RunError::Cancelled) => t.line("odek: interrupted"),
        Err(e) => {
            let shown = super::error::shown(&e.to_string());
            t.line(&format!("{} {shown}", t.style().red("odek:")));
            if let Some(hint) = crate::error::Classified::hint(e) {
                t.line(&format!("  {}", t.style().dim(&format!("hint: {hint}"))));
            }
        }
    }
    t.info(&t.style().dim(&summary_line(outcome)));
}

/// The run's one line of figures: iterations, tool calls, tokens in (with the share the
/// provider's prompt cache served, when it said) and out, wall time.
pub fn summary_line(outcome: &TurnOutcome) -> String {
    let u = &outcome.run.usage;
    let mut line = format!(
        "odek: {} · {} · {} tokens in",
        plural(u64::from(outcome.run.iterations), "iteration"),
        plural(outcome.run.tool_calls, "tool call"),
        u.input_tokens
    );
    if u.cache_read_tokens > 0 {
        let share = 100 * u.cache_read_tokens / u.input_tokens.max(1);
        line.push_str(&format!(" ({} cached, {share}%)", u.cache_read_tokens));
    }
    line.push_str(&format!(" · {} out", u.output_tokens));
    if u.reasoning_tokens > 0 {
        line.push_str(&format!(" ({} reasoning)", u.reasoning_tokens));
    }
    if let Some(cost) = outcome.run.cost_usd {
        line.push_str(&format!(" · {}", crate::llm::pricing::dollars(cost)));
    }
    line.push_str(&format!(" · {:.1}s", outcome.run.duration.as_secs_f64()));
    line
}

fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The loud line of `--yolo` and `ODEK_DANGEROUS_ACTION=allow`.
fn yolo_banner(by: &str) -> String {
    format!(
        "odek: WARNING: {by}: every tool call runs without asking — only blocked commands are refused (recorded in the session)"
    )
}
