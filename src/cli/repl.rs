//! `odek repl`: an interactive, multi-turn session with line editing and history.

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use super::Exit;
use super::flags::TurnFlags;
use super::repl_input::ReplHelper;
use super::turn::{Setup, refuse_session_fixed_flags};
use crate::llm::Message;
use crate::runtime::{SessionHandle, Threads};
use crate::session::ORIGIN_CLI;

/// Arguments of `odek repl`.
#[derive(Debug, Args)]
pub struct ReplArgs {
    /// Resume this session instead of starting a new one
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    #[command(flatten)]
    turn: TurnFlags,
}

mod compact;
mod live;
mod model;
mod state;

/// Who holds the session while the REPL is open.
const HOLDER: &str = "odek repl";
const HISTORY_FILE: &str = "repl_history";
const HISTORY_SIZE: usize = 500;
const NEW_SESSION_LABEL: &str = "interactive session";

const HELP: &str = "\
Commands:
  /help         this list
  /info         session, model, turns and tokens used
  /plan         the current plan
  /memory       what odek remembers (user and this project), and writes waiting for review
  /skills       the skills found, and whether each is offered to the model
  /undo         put back the files the last turn changed
  /rewind [N]   the checkpoints; with N, the files as they were before checkpoint N
                (--force overwrites files changed since)
  /jobs         the background jobs (shell with background: true) and their last lines
  /kill ID      stop background job ID
  /mode [NAME]  the mode, or switch to NAME: plan (reads and plans only), ask, accept_edits
  /model [M]    the model and the choices, or switch the session to M ([PROVIDER:]MODEL)
  /compact [KEEP] summarise the conversation before the last turns (KEEP: what
                the summary must keep); the turns before are kept as a fork
  /queue [TEXT] the lines waiting to become turns; with TEXT, queue it (during a turn)
  /exit, /quit  leave (the session is saved; resume with odek repl --id ID; its
                background jobs are stopped)
@path in a line attaches that file's text (≤ 256 KiB, UTF-8) or image (PNG, JPEG, GIF,
WebP); Tab completes paths after @.
During a turn, Enter gives the line to it (steer) and Alt+Enter queues it as the next turn.
Ctrl-C stops the running turn (on an empty line with lines queued, clears the queue);
Ctrl-D at the prompt leaves.";

struct Repl {
    setup: Setup,
    /// Held (locked) for as long as the REPL is open.
    session: Arc<SessionHandle>,
    /// The read loop's state: the running turn, where prompts' answers go.
    live: state::Live,
}

/// Runs `odek repl`.
pub fn run(args: ReplArgs) -> crate::error::Fallible<Exit> {
    if args.turn.events_jsonl.as_deref() == Some("-") {
        eprintln!(
            "odek: repl: --events-jsonl - would mix the event stream with the REPL on stdout; give a file path instead"
        );
        return Ok(Exit::Usage);
    }
    let mut repl = match &args.id {
        Some(id) => {
            if let Err(e) = refuse_session_fixed_flags(&args.turn, "repl --id") {
                eprintln!("odek: {e}");
                return Ok(Exit::Usage);
            }
            resume(&args.turn, id)?
        }
        None => start(&args.turn)?,
    };
    repl.keep_sigint_from_killing_the_repl();
    repl.banner();
    let mut editor = editor(&repl.setup.resolved.home, repl.setup.cwd())?;
    let custom = repl.setup.runtime.commands().commands.into_iter();
    if let Some(helper) = editor.helper_mut() {
        helper.set_commands(custom.map(|c| format!("/{}", c.name)).collect());
    }
    if let Err(e) = repl.read_loop(editor) {
        repl.setup.finish();
        return Err(e);
    }
    repl.goodbye();
    repl.setup.finish();
    Ok(Exit::Success)
}

fn start(flags: &TurnFlags) -> crate::error::Fallible<Repl> {
    let setup = Setup::new(flags, Threads::Pool)?;
    let head = setup.first_messages(&flags.ctx)?;
    let session = setup
        .runtime
        .new_session(NEW_SESSION_LABEL, head, ORIGIN_CLI, HOLDER)?;
    Ok(Repl {
        setup,
        session,
        live: state::Live::default(),
    })
}

fn resume(flags: &TurnFlags, id: &str) -> crate::error::Fallible<Repl> {
    let (setup, session) = Setup::resume(flags, Some(id), HOLDER, Threads::Pool)?;
    Ok(Repl {
        setup,
        session,
        live: state::Live::default(),
    })
}

impl Repl {
    /// From here on SIGINT never kills the REPL: during a turn it cancels the turn, at the
    /// prompt the line editor reads Ctrl-C as a key (even on terminals it cannot drive, where
    /// it falls back to plain line input).
    fn keep_sigint_from_killing_the_repl(&self) {
        let _ = self.setup.process.block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        });
    }

    fn banner(&self) {
        let s = self.setup.terminal.style();
        println!(
            "{} ⚡ {} · session {}",
            s.bold("odek"),
            self.setup.runtime.session_model(Some(&self.session)),
            self.session.id()
        );
        println!("  {}", s.dim("Type /help for commands, /exit to quit."));
    }

    fn goodbye(&self) {
        self.session.set_end_reason("prompt_input_exit");
        if self.session.is_saved() {
            println!(
                "Session {id} saved. Continue later with: odek repl --id {id}",
                id = self.session.id()
            );
        }
    }

    /// The prompt: `next`, the number of the turn a line starts, and the mode.
    fn prompt(&self, next: usize) -> String {
        format!("odek {next}{}> ", mode_tag(self.setup.mode))
    }

    /// Handles a slash command (a custom one runs a turn); true when the REPL should end.
    fn slash(&mut self, line: &str) -> bool {
        let command = line
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        match command.as_str() {
            "/exit" | "/quit" => return true,
            "/help" => self.help(),
            "/info" => self.info(),
            "/plan" => println!("{}", self.plan_text()),
            "/memory" => self.memory(),
            "/skills" => self.skills(),
            "/undo" => self.undo(),
            "/rewind" => self.rewind(line),
            "/jobs" => self.jobs(),
            "/kill" => self.kill(line),
            "/mode" => self.mode(line),
            "/model" => self.model(line),
            "/compact" => self.compact(line),
            _ => self.custom(line),
        }
        false
    }

    /// `/help`: the REPL's commands, then the custom commands found now.
    fn help(&self) {
        println!("{HELP}");
        let catalog = self.setup.runtime.commands();
        if !catalog.commands.is_empty() {
            println!("Custom commands (odek commands list shows where each comes from):");
        }
        for c in &catalog.commands {
            let usage = super::commands_cmd::usage(c);
            let about = crate::text::first_line(&c.file.description, 60);
            println!("  {usage:<13} {}", crate::text::visible(&about, false));
        }
        for w in catalog.warnings() {
            println!("{w}");
        }
    }

    /// A custom command (`/NAME args`, docs/COMMANDS.md): its prompt as this turn's input,
    /// narrowed to its model and tools; an unknown or refused one says why.
    fn custom(&mut self, line: &str) {
        let t = self.setup.terminal.clone();
        match self.setup.command(line) {
            Ok(Some(invocation)) => self.send(line, Some(invocation)),
            Ok(None) => {
                let name = line.split_whitespace().next().unwrap_or(line);
                println!("Unknown command: {name}  (/help for commands)");
            }
            Err(e) => {
                let shown = super::error::shown(&format!("{e:#}"));
                t.line(&format!("{} {shown}", t.style().red("odek:")));
                if let (_, Some(hint)) = super::error::diagnose(&e) {
                    t.line(&format!("  {}", t.style().dim(&format!("hint: {hint}"))));
                }
            }
        }
    }

    /// `/mode`: the mode and the list; `/mode NAME`: the next turns' mode.
    fn mode(&mut self, line: &str) {
        use crate::danger_policy::Mode;
        let current = self.setup.mode;
        match line.split_whitespace().nth(1).map(str::parse::<Mode>) {
            None => {
                match current {
                    Some(m) => println!("Mode: {m}"),
                    None => println!("Mode: none (the configured policy)"),
                }
                for m in Mode::ALL {
                    let mark = if Some(m) == current { "*" } else { " " };
                    println!("{mark} {:<13} {}", m.id(), m.description());
                }
            }
            Some(Ok(mode)) => {
                self.setup.mode = Some(mode);
                println!("Mode: {mode} — {}", mode.description());
            }
            Some(Err(e)) => println!("{e}"),
        }
    }

    /// `/jobs`: each background job with its state and, while it runs, its last lines.
    fn jobs(&self) {
        let jobs = self.session.jobs().map(|j| j.list()).unwrap_or_default();
        if jobs.is_empty() {
            println!("No background jobs.");
        }
        for job in jobs {
            println!("{}", job.line());
            if job.ended().is_none() {
                let tail = job.tail();
                crate::text::visible(&tail, false)
                    .lines()
                    .for_each(|l| println!("    │ {l}"));
            }
        }
    }

    /// `/kill ID`: stops a background job.
    fn kill(&self, line: &str) {
        let id = line
            .split_whitespace()
            .nth(1)
            .and_then(|w| w.parse::<u32>().ok());
        let (Some(id), Some(jobs)) = (id, self.session.jobs()) else {
            println!("Usage: /kill ID (see /jobs)");
            return;
        };
        match self.setup.process.block_on(jobs.stop(id)) {
            None => println!("There is no job {id} (see /jobs)."),
            Some(false) => println!("Job {id} is not running."),
            Some(true) => println!("Stopped job {id}."),
        }
    }

    fn info(&self) {
        let s = self.session.saved();
        println!(
            "Session: {}{}",
            s.id,
            if self.session.is_saved() {
                ""
            } else {
                " (not saved yet)"
            }
        );
        let model = self.setup.runtime.session_model(Some(&self.session));
        println!("Model:   {model}");
        println!("Turns:   {}", s.turns);
        if s.cached_tokens > 0 {
            println!(
                "Tokens:  {} in ({} cached), {} out",
                s.input_tokens, s.cached_tokens, s.output_tokens
            );
        } else {
            println!("Tokens:  {} in, {} out", s.input_tokens, s.output_tokens);
        }
        println!("Tools:   {}", self.setup.runtime.tool_names().join(", "));
        let loaded = crate::instructions::loaded_in(&self.session.live().messages);
        if !loaded.is_empty() {
            println!("Instructions: {}", loaded.join(", "));
        }
        if self.setup.runtime.sandbox().is_on() {
            println!("Sandbox: yes");
        }
        if let Some(by) = &self.setup.resolved.config.dangerous_override {
            println!("Policy:  everything but blocked runs without asking ({by})");
        }
    }

    /// The live plan: the state the last turn left (or the saved state of a resumed
    /// session), rendered as the model sees it.
    fn plan_text(&self) -> String {
        if !self.setup.runtime.planning_enabled() {
            return "Planning is disabled (--no-planning, ODEK_PLANNING=false or planning.enabled: false).".into();
        }
        let max_render_chars = self.setup.resolved.config.planning.max_render_chars as usize;
        self.session
            .plan()
            .and_then(|state| crate::plan::render(&state, max_render_chars))
            .unwrap_or_else(|| crate::plan::NO_ACTIVE_PLAN.to_string())
    }

    fn memory(&self) {
        let config = &self.setup.resolved.config;
        if !config.memory.enabled {
            println!("Memory is off (--no-memory, ODEK_MEMORY=false or memory.enabled: false).");
            return;
        }
        let home = &self.setup.resolved.home;
        if let Err(e) = super::memory_cmd::print_memory(config, home, self.setup.cwd()) {
            self.setup.terminal.line(&format!("odek: {e:#}"));
        }
    }

    /// The session's checkpoints, as `odek rewind` reads them.
    fn checkpoints(
        &self,
    ) -> Option<(
        Arc<crate::checkpoint::Checkpoints>,
        crate::checkpoint::History,
    )> {
        let s = self.session.saved();
        let checkpoints = crate::checkpoint::of_session(&self.setup.resolved.home, &s.id, s.turns);
        match checkpoints.history() {
            Ok(history) => Some((checkpoints, history)),
            Err(e) => {
                self.setup
                    .terminal
                    .line(&format!("odek: cannot read the checkpoints: {e}"));
                None
            }
        }
    }

    /// `/undo`: the files as they were before the last turn that changed any.
    fn undo(&self) {
        let Some((checkpoints, history)) = self.checkpoints() else {
            return;
        };
        match history.last_turn_start() {
            Some(c) => self.rewind_to(&checkpoints, &history, c.n, false),
            None => println!("No turn of this session changed files with odek's file tools."),
        }
    }

    /// `/rewind`: the list; `/rewind N [--force]`: a rewind to before checkpoint N.
    fn rewind(&self, line: &str) {
        let Some((checkpoints, history)) = self.checkpoints() else {
            return;
        };
        let mut words = line.split_whitespace().skip(1);
        let to = words.next();
        let force = words.any(|w| w == "--force");
        match to.map(str::parse::<u32>) {
            None => super::rewind_cmd::print_list(
                checkpoints.session(),
                &history.checkpoints,
                self.setup.cwd(),
            ),
            Some(Ok(n)) if n > 0 => self.rewind_to(&checkpoints, &history, n, force),
            Some(_) => {
                println!("Usage: /rewind [N] [--force]  (N: a checkpoint's number from /rewind)")
            }
        }
    }

    fn rewind_to(
        &self,
        checkpoints: &Arc<crate::checkpoint::Checkpoints>,
        history: &crate::checkpoint::History,
        to: u32,
        force: bool,
    ) {
        if let Err(e) =
            super::rewind_cmd::rewind_files(checkpoints, history, to, force, self.setup.cwd())
        {
            self.setup.terminal.line(&format!("odek: {e:#}"));
        }
    }

    fn skills(&self) {
        let config = &self.setup.resolved.config;
        if !config.skills.enabled {
            println!("Skills are off (--no-skills, ODEK_SKILLS=false or skills.enabled: false).");
            return;
        }
        super::skill_cmd::print_skills(config, &self.setup.resolved.home, self.setup.cwd());
    }

    /// Runs a turn of the line, with the files it names (`@path`) attached; a named file that
    /// cannot be attached keeps the line from being sent (it is in the history, to edit).
    fn turn(&mut self, line: &str) {
        self.send(line, None);
    }

    /// [`Repl::turn`] of a typed line, or of a custom command's prompt (the files the typed
    /// line names attached after it).
    fn send(&mut self, line: &str, command: Option<crate::runtime::Invocation>) {
        let t = self.setup.terminal.clone();
        let config = &self.setup.resolved.config;
        let target = super::repl_input::ImageTarget {
            takes: config.images,
            model: &config.model,
        };
        let input = match super::repl_input::expand(line, self.setup.cwd(), target) {
            Ok(expanded) => expanded,
            Err(e) => {
                t.line(&format!("{} {e} — not sent", t.style().red("odek:")));
                return;
            }
        };
        for (name, bytes) in &input.attached {
            t.info(&t.style().dim(&format!("attached {name} ({bytes} bytes)")));
        }
        for (name, _) in &input.images {
            t.info(&t.style().dim(&format!("attached image {name}")));
        }
        for word in &input.not_files {
            t.info(
                &t.style()
                    .dim(&format!("{word} names no file; sent as it is")),
            );
        }
        if !self.session.is_saved() {
            self.session.set_task(line);
        }
        // Attached files are outside content: the turn's memory writes wait for review.
        let external = if input.attached.is_empty() && input.images.is_empty() {
            Vec::new()
        } else {
            vec!["resource".to_string()]
        };
        let (text, scope) = match command {
            Some(c) => (c.prompt + &input.text[line.len()..], c.scope),
            None => (input.text, crate::runtime::TurnScope::default()),
        };
        self.start(vec![user_message(text, input.images)], external, scope);
    }
}

/// ` [plan]` in the prompt when a mode other than the default is on.
fn mode_tag(mode: Option<crate::danger_policy::Mode>) -> String {
    match mode {
        Some(m) if m != crate::danger_policy::Mode::default() => format!(" [{m}]"),
        _ => String::new(),
    }
}

/// The user message of a line: its text, its images as image parts.
fn user_message(text: String, images: Vec<(String, crate::llm::ImagePart)>) -> Message {
    let mut message = Message::user(text);
    crate::prompt::attach_images(&mut message, images);
    message
}

fn history_path(home: &Path) -> PathBuf {
    home.join(HISTORY_FILE)
}

type LineEditor = rustyline::Editor<ReplHelper, rustyline::history::DefaultHistory>;

fn editor(home: &Path, cwd: &Path) -> crate::error::Fallible<LineEditor> {
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .auto_add_history(false)
        .bracketed_paste(true)
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor = LineEditor::with_config(config)?;
    editor.set_helper(Some(ReplHelper::new(cwd.to_path_buf())));
    let path = history_path(home);
    if path.exists() {
        let _ = editor.load_history(&path);
    }
    Ok(editor)
}

/// Writes the history file, creating it (and the home) private on first use.
fn save_history(editor: &mut LineEditor, home: &Path) {
    let path = history_path(home);
    if !path.exists() {
        if std::fs::create_dir_all(home).is_ok() {
            let _ = std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700));
        }
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
    }
    if let Err(e) = editor.save_history(&path) {
        tracing::warn!("could not save the REPL history to {}: {e}", path.display());
    }
    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
}
