//! The REPL's read loop: lines are read on a thread of their own, so the prompt stays open
//! while a turn runs. On a terminal the turn's output is printed above the prompt line (the
//! line editor's external printer, by whole lines), and a line sent during the turn goes to
//! it: Enter steers the running turn (the model reads the line at its next request),
//! Alt+Enter or `/queue TEXT` queues it as a next turn; `/queue` lists the queue and Ctrl-C
//! on an empty line clears it (otherwise Ctrl-C stops the turn). Off a terminal lines are
//! read one turn at a time, as typed.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

use rustyline::error::ReadlineError;
use rustyline::{
    Cmd, ConditionalEventHandler, Event as KeyInput, EventContext, EventHandler, KeyCode, KeyEvent,
    Modifiers, RepeatCount,
};

use super::state::{Event, Read};
use super::{LineEditor, Repl, save_history};
use crate::cli::terminal::sink;
use crate::runtime::{Delivered, Delivery, RuntimeError, TurnOutcome};

/// The prompt of one read: its text follows the turn number as turns end while the line is
/// being typed (redrawn with the next line printed above it).
pub(super) struct LivePrompt {
    texts: Vec<String>,
    first: usize,
    number: Arc<AtomicUsize>,
}

/// How many turns may end during one read with the prompt still right.
const PROMPTS_AHEAD: usize = 8;

impl rustyline::Prompt for LivePrompt {
    fn raw(&self) -> &str {
        let at = self
            .number
            .load(Ordering::SeqCst)
            .saturating_sub(self.first);
        &self.texts[at.min(self.texts.len() - 1)]
    }
}

/// Alt+Enter: sends the line, marked to be queued.
struct AltEnter(Arc<AtomicBool>);

impl ConditionalEventHandler for AltEnter {
    fn handle(&self, _: &KeyInput, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        self.0.store(true, Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// Ctrl-C: notes whether the line was empty, then interrupts as always.
struct CtrlC(Arc<AtomicBool>);

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &KeyInput, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        self.0.store(ctx.line().is_empty(), Ordering::SeqCst);
        None
    }
}

/// Reads a line each time it is given a prompt, until the prompts stop.
fn spawn_reader(
    mut editor: LineEditor,
    home: std::path::PathBuf,
    prompts: Receiver<LivePrompt>,
    events: Sender<Event>,
) {
    let (alt, empty) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(true)),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Conditional(Box::new(AltEnter(alt.clone()))),
    );
    editor.bind_sequence(
        KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC(empty.clone()))),
    );
    let _ = std::thread::Builder::new()
        .name("odek-repl-reader".into())
        .spawn(move || {
            while let Ok(prompt) = prompts.recv() {
                alt.store(false, Ordering::SeqCst);
                let read = match editor.readline(&prompt) {
                    Ok(line) => {
                        let line = line.trim().to_string();
                        if !line.is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                            save_history(&mut editor, &home);
                        }
                        Read::Line(line, alt.swap(false, Ordering::SeqCst))
                    }
                    Err(ReadlineError::Interrupted) => {
                        Read::Interrupted(empty.load(Ordering::SeqCst))
                    }
                    Err(ReadlineError::Eof) => Read::Eof,
                    Err(e) => Read::Failed(e),
                };
                if events.send(Event::Read(read)).is_err() {
                    return;
                }
            }
        });
}

impl Repl {
    /// Reads and runs lines until `/exit` or Ctrl-D (a running turn is stopped first).
    pub(super) fn read_loop(&mut self, mut editor: LineEditor) -> crate::error::Fallible<()> {
        let concurrent = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        let concurrent = concurrent && self.print_above_the_prompt(&mut editor);
        let (events, heard) = channel();
        let (prompts, asked) = channel();
        spawn_reader(
            editor,
            self.setup.resolved.home.clone(),
            asked,
            events.clone(),
        );
        self.live.events = Some(events);
        let mut reading = false;
        let mut failure = None;
        loop {
            let idle = self.live.running.is_none();
            if self.live.leaving && idle {
                break;
            }
            if !reading && !self.live.leaving && (concurrent || idle) {
                let _ = prompts.send(self.live_prompt());
                reading = true;
            }
            let Ok(event) = heard.recv() else {
                break;
            };
            match event {
                Event::Read(read) => {
                    reading = false;
                    if let Read::Failed(e) = read {
                        failure = Some(e);
                        self.live.leaving = true;
                        self.cancel_turn();
                        continue;
                    }
                    self.on_read(read);
                }
                Event::Ended(outcome, next) => self.ended(*outcome, next),
            }
        }
        sink::route_to(None);
        self.live.events = None;
        self.show_unsent();
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Sends the terminal's writes through the line editor's printer, and prompts' answers
    /// through the reader; false when the editor has no printer here.
    fn print_above_the_prompt(&mut self, editor: &mut LineEditor) -> bool {
        let Ok(mut printer) = editor.create_external_printer() else {
            return false;
        };
        sink::route_to(Some(Box::new(move |text| {
            let _ = rustyline::ExternalPrinter::print(&mut printer, text);
        })));
        let (replies, answers) = channel();
        self.setup.terminal.take_replies_from(answers);
        self.live.replies = Some(replies);
        true
    }

    fn on_read(&mut self, read: Read) {
        match read {
            Read::Line(line, queue) => {
                if self.setup.terminal.is_asking()
                    && let Some(replies) = &self.live.replies
                {
                    let _ = replies.send(line);
                } else if !line.is_empty() {
                    self.on_line(line, queue);
                }
            }
            Read::Interrupted(empty) => self.interrupted(empty),
            Read::Eof => {
                self.live.leaving = true;
                self.cancel_turn();
            }
            Read::Failed(_) => {}
        }
    }

    /// A line: between turns as always (`/queue TEXT` runs TEXT at once); during a turn, a
    /// steer, or queued (Alt+Enter, `/queue TEXT`, a command other than `/exit`).
    fn on_line(&mut self, line: String, queue: bool) {
        let word = line.split_whitespace().next().unwrap_or("");
        let queued_text = (word == "/queue").then(|| line["/queue".len()..].trim().to_string());
        if queued_text.as_deref() == Some("") {
            return self.list_queue();
        }
        if self.live.running.is_none() {
            let line = queued_text.unwrap_or(line);
            return self.dispatch(&line);
        }
        match (queued_text, word) {
            (_, "/exit" | "/quit") => {
                self.live.leaving = true;
                self.cancel_turn();
            }
            (Some(text), _) => self.send_to_turn(text, Delivery::Queue),
            (None, _) if queue || word.starts_with('/') => self.send_to_turn(line, Delivery::Queue),
            (None, _) => self.send_to_turn(line, Delivery::Steer),
        }
    }

    /// Runs a line between turns: a command, or a turn.
    fn dispatch(&mut self, line: &str) {
        if line.starts_with('/') {
            if self.slash(line) {
                self.live.leaving = true;
            }
            return;
        }
        self.turn(line);
    }

    /// Gives `text` to the running turn (a steer) or queues it, and says so.
    fn send_to_turn(&mut self, text: String, how: Delivery) {
        let t = self.setup.terminal.clone();
        let shown = crate::text::first_line(&text, 60);
        match self
            .setup
            .process
            .supervisor
            .deliver(self.session.id(), text, how)
        {
            Delivered::Taken { position: 0 } => {
                t.line(&t.style().dim(&format!("↳ steered: {shown}")));
            }
            Delivered::Taken { position } => {
                t.line(&t.style().dim(&format!("⏸ queued ({position}): {shown}")));
            }
            // The turn is ending: the line starts the next one.
            Delivered::NotRunning(text) => {
                self.live.waiting.push_back(text);
                t.line(&t.style().dim(&format!("⏸ queued: {shown}")));
            }
        }
    }

    /// The REPL ends with lines still waiting to become turns: they are shown, so what the
    /// user typed is never lost in silence (copy them into the next session).
    fn show_unsent(&mut self) {
        let supervisor = &self.setup.process.supervisor;
        let mut unsent: Vec<String> = self.live.waiting.drain(..).collect();
        unsent.extend(supervisor.queued(self.session.id()));
        supervisor.clear_queue(self.session.id());
        if unsent.is_empty() {
            return;
        }
        println!("Not sent (the REPL ended before their turn):");
        for line in unsent {
            println!("  {line}");
        }
    }

    /// `/queue`: the lines waiting to become turns.
    fn list_queue(&self) {
        let mut queued = self.setup.process.supervisor.queued(self.session.id());
        queued.extend(self.live.waiting.iter().cloned());
        if queued.is_empty() {
            println!("Nothing queued (Alt+Enter or /queue TEXT during a turn queues a line).");
        }
        for (i, text) in queued.iter().enumerate() {
            let line = format!("  {}. {}", i + 1, crate::text::first_line(text, 70));
            self.setup.terminal.line(&line);
        }
    }

    /// Ctrl-C: on an empty line with lines queued, clears the queue; during a turn
    /// otherwise, stops it.
    fn interrupted(&mut self, empty: bool) {
        let t = self.setup.terminal.clone();
        let supervisor = self.setup.process.supervisor.clone();
        let queued = supervisor.queued(self.session.id()).len() + self.live.waiting.len();
        if empty && queued > 0 {
            supervisor.clear_queue(self.session.id());
            self.live.waiting.clear();
            t.line(&t.style().dim(&format!("odek: queue cleared ({queued})")));
        } else if self.live.running.is_some() {
            t.line("odek: interrupting this turn…");
            self.cancel_turn();
        } else {
            t.line("(To leave, press Ctrl-D or type /exit)");
        }
    }

    /// The prompt of the next read, from the turn number on.
    fn live_prompt(&self) -> LivePrompt {
        let first = self.follow_number();
        LivePrompt {
            texts: (first..first + PROMPTS_AHEAD)
                .map(|n| self.prompt(n))
                .collect(),
            first,
            number: self.live.number.clone(),
        }
    }

    /// Sets the number of the turn a line would start: the next one, or during a turn the
    /// one after it.
    fn follow_number(&self) -> usize {
        let next = if self.live.is_running() {
            self.live.turns_before + 2
        } else {
            self.session.saved().turns as usize + 1
        };
        self.live.number.store(next, Ordering::SeqCst);
        next
    }

    fn cancel_turn(&self) {
        if let Some((run_id, _)) = &self.live.running {
            let _ = self.setup.process.supervisor.cancel(run_id);
        }
    }

    /// Submits a turn of `input`; its end comes back to the loop.
    pub(super) fn start(
        &mut self,
        input: Vec<crate::llm::Message>,
        external: Vec<String>,
        scope: crate::runtime::TurnScope,
    ) {
        self.live.turns_before = self.session.saved().turns as usize;
        let submitted = self
            .setup
            .submit_turn(Some(&self.session), input, false, external, scope);
        let (handle, watcher) = match submitted {
            Ok(started) => started,
            Err(e) => return self.show_failure(&e),
        };
        self.live.running = Some((handle.run_id.clone(), watcher));
        self.follow_number();
        let events = self.live.events.clone();
        self.setup.process.handle().spawn(async move {
            let (outcome, next) = handle.outcome_and_next().await;
            if let Some(events) = events {
                let _ = events.send(Event::Ended(Box::new(outcome), next));
            }
        });
    }

    /// A turn ended: its answer and figures; then the next line waiting, if any.
    fn ended(&mut self, outcome: Result<TurnOutcome, RuntimeError>, next: Option<String>) {
        if let Some((_, watcher)) = self.live.running.take() {
            watcher.abort();
        }
        self.follow_number();
        match outcome {
            Ok(outcome) => self.show_outcome(&outcome),
            Err(e) => self.show_failure(&e.into()),
        }
        let mut lines: std::collections::VecDeque<String> = next.into_iter().collect();
        lines.extend(self.live.waiting.drain(..));
        // Leaving: what is left is not run (the REPL ends).
        while !self.live.leaving
            && self.live.running.is_none()
            && let Some(line) = lines.pop_front()
        {
            let t = self.setup.terminal.clone();
            t.line(
                &t.style()
                    .dim(&format!("▶ {}", crate::text::first_line(&line, 70))),
            );
            self.dispatch(&line);
        }
        if self.live.leaving {
            // Said when the REPL ends: never dropped in silence.
            self.live.waiting.extend(lines);
        } else {
            for line in lines {
                self.send_to_turn(line, Delivery::Queue);
            }
        }
    }

    /// How a turn ended, as the terminal shows it.
    fn show_outcome(&self, outcome: &TurnOutcome) {
        let t = self.setup.terminal.clone();
        self.setup.report_save(outcome);
        if let Some(summary) = &outcome.run.summary {
            t.print_report(summary);
        }
        match &outcome.run.result {
            Ok(answer) => t.print_answer(answer),
            Err(crate::engine::RunError::Cancelled) => {
                t.line("odek: turn interrupted; the session is saved and the next prompt is yours")
            }
            Err(e) => t.line(&format!("{} {e}", t.style().red("odek:"))),
        }
        t.info(&t.style().dim(&crate::cli::turn::summary_line(outcome)));
    }

    /// A turn that could not start or run.
    pub(super) fn show_failure(&self, e: &crate::error::Failure) {
        let t = &self.setup.terminal;
        let shown = crate::cli::error::shown(&format!("{e:#}"));
        t.line(&format!("{} {shown}", t.style().red("odek:")));
        if let (_, Some(hint)) = crate::cli::error::diagnose(e) {
            t.line(&format!("  {}", t.style().dim(&format!("hint: {hint}"))));
        }
    }
}
