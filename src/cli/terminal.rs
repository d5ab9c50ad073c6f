//! The terminal as an observer of the engine: a spinner while waiting, streamed answer text,
//! one line per finished tool call, retries and warnings — and the approval prompt.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::style::Style;
use crate::engine::{EngineEvent, Observer};
use crate::llm::Delta;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver};
use crate::tools::danger::DangerClass;

/// Where the answer text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStream {
    /// Standard output (the default).
    Stdout,
    /// Standard error (when stdout carries the event stream).
    Stderr,
}

/// How the terminal behaves.
#[derive(Debug, Clone, Copy)]
pub struct TerminalOptions {
    /// Only the final answer (no spinner, no tool lines).
    pub quiet: bool,
    /// 0 normal, 1 shows hints and reasoning, 2+ debug logs too.
    pub verbose: u8,
    /// Colours allowed by configuration.
    pub color: bool,
    /// Where the answer goes.
    pub answer: AnswerStream,
    /// Stream answer text as it arrives (only when the answer stream is a terminal).
    pub stream: bool,
}

#[derive(Default)]
struct State {
    spinner: Option<(String, Instant)>,
    spinner_drawn: bool,
    frame: usize,
    answer_streamed: bool,
    answer_open_line: bool,
    running_tools: usize,
}

/// Terminal observer and approver. Every write to stderr goes through one lock so lines never
/// interleave with the spinner.
pub struct Terminal {
    opts: TerminalOptions,
    err_style: Style,
    stderr_tty: bool,
    stream_answer: bool,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl Terminal {
    /// A terminal for these options; starts the spinner thread when stderr is a terminal.
    pub fn new(opts: TerminalOptions) -> Arc<Self> {
        let stderr_tty = std::io::stderr().is_terminal();
        let answer_tty = match opts.answer {
            AnswerStream::Stdout => std::io::stdout().is_terminal(),
            AnswerStream::Stderr => stderr_tty,
        };
        let t = Arc::new(Terminal {
            opts,
            err_style: Style::new(opts.color && stderr_tty),
            stderr_tty,
            stream_answer: opts.stream && answer_tty && !opts.quiet,
            state: Arc::new(Mutex::new(State::default())),
            stop: Arc::new(AtomicBool::new(false)),
        });
        if stderr_tty && !opts.quiet {
            spawn_spinner(t.state.clone(), t.stop.clone());
        }
        t
    }

    /// Styling for stderr lines.
    pub fn style(&self) -> Style {
        self.err_style
    }

    /// True when the last model call's text already reached the answer stream.
    pub fn answer_already_shown(&self) -> bool {
        self.lock().answer_streamed
    }

    /// Prints the final answer unless it was streamed already.
    pub fn print_answer(&self, answer: &str) {
        let mut st = self.lock();
        clear_spinner(&mut st);
        if st.answer_streamed {
            if st.answer_open_line {
                write_answer(self.opts.answer, "\n");
                st.answer_open_line = false;
            }
            return;
        }
        let text = if answer.ends_with('\n') {
            answer.to_string()
        } else {
            format!("{answer}\n")
        };
        write_answer(self.opts.answer, &text);
    }

    /// Prints one line on stderr (not in quiet mode).
    pub fn info(&self, line: &str) {
        if !self.opts.quiet {
            self.line(line);
        }
    }

    /// Prints one line on stderr, even in quiet mode.
    pub fn line(&self, line: &str) {
        let mut st = self.lock();
        clear_spinner(&mut st);
        close_answer_line(self.opts.answer, &mut st);
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }

    /// Stops the spinner thread.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut st = self.lock();
        st.spinner = None;
        clear_spinner(&mut st);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start_spinner(&self, label: String) {
        if self.stderr_tty && !self.opts.quiet {
            let mut st = self.lock();
            let since = st.spinner.as_ref().map_or_else(Instant::now, |(_, s)| *s);
            st.spinner = Some((label, since));
        }
    }

    fn stop_spinner(&self) {
        let mut st = self.lock();
        st.spinner = None;
        clear_spinner(&mut st);
    }

    fn on_delta(&self, delta: Delta<'_>) {
        match delta {
            Delta::Content(text) if self.stream_answer => {
                let mut st = self.lock();
                st.spinner = None;
                clear_spinner(&mut st);
                write_answer(self.opts.answer, text);
                st.answer_streamed = true;
                st.answer_open_line = !text.ends_with('\n');
            }
            Delta::Reasoning(text) if self.opts.verbose > 0 && self.stderr_tty => {
                let mut st = self.lock();
                st.spinner = None;
                clear_spinner(&mut st);
                let _ = write!(std::io::stderr(), "{}", self.err_style.dim(text));
            }
            _ => {}
        }
    }

    fn on_model_finished(&self, message: &crate::llm::Message, streamed: bool) {
        self.stop_spinner();
        let mut st = self.lock();
        close_answer_line(self.opts.answer, &mut st);
        let narration = !message.tool_calls.is_empty() && !message.content.trim().is_empty();
        if narration && !streamed && !self.opts.quiet {
            let _ = writeln!(
                std::io::stderr(),
                "{}",
                self.err_style.dim(message.content.trim())
            );
        }
        if !message.tool_calls.is_empty() {
            // Narration before tool calls is not the answer; the final call decides.
            st.answer_streamed = false;
        }
    }

    fn on_tool_finished(
        &self,
        name: &str,
        ok: bool,
        duration: Duration,
        error: Option<&str>,
        summary: &str,
    ) {
        {
            let mut st = self.lock();
            st.running_tools = st.running_tools.saturating_sub(1);
        }
        if self.opts.quiet {
            return;
        }
        let s = self.err_style;
        let mark = if ok { s.green("✓") } else { s.red("✗") };
        let mut line = format!("  {mark} {} {}", s.cyan(name), shorten(summary, 80));
        line.push_str(&s.dim(&format!(" {:.1}s", duration.as_secs_f64())));
        if let Some(e) = error {
            line.push_str(&format!(" {}", s.red(&format!("— {}", shorten(e, 120)))));
        }
        self.line(&line);
    }
}

impl Observer for Terminal {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::ModelCallStarted { .. } => {
                self.lock().answer_streamed = false;
                self.start_spinner("thinking".into());
            }
            EngineEvent::ModelRetry {
                attempt,
                max_attempts,
                wait,
                reason,
            } => self.info(&self.err_style.yellow(&format!(
                "odek: {reason} — retrying in {:.1}s (attempt {attempt}/{max_attempts})",
                wait.as_secs_f64()
            ))),
            EngineEvent::Delta { delta, .. } => self.on_delta(*delta),
            EngineEvent::ModelCallFinished { message, streamed, .. } => {
                self.on_model_finished(message, *streamed)
            }
            EngineEvent::ToolCallStarted { call, summary, .. } => {
                let running = {
                    let mut st = self.lock();
                    st.running_tools += 1;
                    st.running_tools
                };
                let label = if running > 1 {
                    format!("running {running} tools")
                } else {
                    format!("running {} {}", call.function.name, shorten(summary, 60))
                };
                self.start_spinner(label);
            }
            EngineEvent::ToolCallFinished {
                call,
                summary,
                ok,
                duration,
                error,
                ..
            } => self.on_tool_finished(&call.function.name, *ok, *duration, *error, summary),
            EngineEvent::Hint { text, .. } if self.opts.verbose > 0 => self.line(&self.err_style.yellow(text)),
            EngineEvent::SessionSaveFailed { error } => self.line(&self.err_style.yellow(&format!(
                "odek: warning: could not save the session: {error}"
            ))),
            EngineEvent::ContextTrimmed {
                mode,
                dropped_groups,
                truncated_results,
            } if self.opts.verbose > 0 => self.line(&self.err_style.dim(&format!(
                "odek: context trimmed ({mode}): {dropped_groups} group(s) dropped, {truncated_results} output(s) shortened"
            ))),
            EngineEvent::RunFinished { .. } => self.stop_spinner(),
            _ => {}
        }
    }
}

fn shorten(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        line.to_string()
    } else {
        let mut out: String = line.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

fn write_answer(stream: AnswerStream, text: &str) {
    // A closed pipe (`odek run … | head`) is not an error worth a panic or a message.
    let _ = match stream {
        AnswerStream::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|_| out.flush())
        }
        AnswerStream::Stderr => {
            let mut err = std::io::stderr().lock();
            err.write_all(text.as_bytes()).and_then(|_| err.flush())
        }
    };
}

fn close_answer_line(stream: AnswerStream, st: &mut State) {
    if st.answer_open_line {
        write_answer(stream, "\n");
        st.answer_open_line = false;
    }
}

fn clear_spinner(st: &mut State) {
    if st.spinner_drawn {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
        let _ = std::io::stderr().flush();
        st.spinner_drawn = false;
    }
}

fn spawn_spinner(state: Arc<Mutex<State>>, stop: Arc<AtomicBool>) {
    let _ = std::thread::Builder::new()
        .name("odek-spinner".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                let Some((label, since)) = st.spinner.clone() else {
                    continue;
                };
                // Show the spinner only for waits longer than a blink.
                if since.elapsed() < Duration::from_millis(300) {
                    continue;
                }
                st.frame = (st.frame + 1) % FRAMES.len();
                let frame = FRAMES[st.frame];
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{frame} {label} {:.0}s",
                    since.elapsed().as_secs_f64()
                );
                let _ = err.flush();
                st.spinner_drawn = true;
            }
        });
}

impl Approver for Terminal {
    fn ask(&self, items: &[ApprovalItem]) -> ApprovalAnswer {
        let mut st = self.lock();
        st.spinner = None;
        clear_spinner(&mut st);
        let Ok(tty) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
        else {
            return ApprovalAnswer::Deny;
        };
        let s = self.err_style;
        let mut out = &tty;
        let header = if items.len() == 1 {
            "⚠️  The following tool action requires approval:".to_string()
        } else {
            format!("⚠️  {} tool actions require approval:", items.len())
        };
        let _ = writeln!(out, "\n{}", s.yellow(&header));
        for (i, item) in items.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {}. {} {}  {}",
                i + 1,
                s.cyan(&item.tool),
                item.resource,
                s.dim(&format!(
                    "[risk: {}{}]",
                    item.class.as_str(),
                    reason(&item.reason)
                ))
            );
        }
        let trust_allowed = items.iter().all(|i| trustable(i.class));
        let question = if trust_allowed {
            "[a]pprove  [d]eny  [t]rust these risk classes for this session: "
        } else {
            "[a]pprove  [d]eny (trust-session disabled for this risk): "
        };
        let mut reader = std::io::BufReader::new(&tty);
        loop {
            let _ = write!(out, "{}", s.bold(question));
            let _ = out.flush();
            let mut answer = String::new();
            if reader.read_line(&mut answer).unwrap_or(0) == 0 {
                return ApprovalAnswer::Deny;
            }
            match answer.trim().to_ascii_lowercase().as_str() {
                "a" | "approve" | "y" | "yes" => return ApprovalAnswer::Approve,
                "t" | "trust" if trust_allowed => return ApprovalAnswer::TrustClasses,
                "d" | "deny" | "n" | "no" | "" => return ApprovalAnswer::Deny,
                _ => continue,
            }
        }
    }
}

fn trustable(class: DangerClass) -> bool {
    !matches!(
        class,
        DangerClass::Destructive | DangerClass::Blocked | DangerClass::Unknown
    )
}

fn reason(r: &str) -> String {
    if r.is_empty() {
        String::new()
    } else {
        format!(" — {r}")
    }
}
