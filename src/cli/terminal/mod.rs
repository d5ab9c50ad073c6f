//! The terminal as an observer of the engine: a spinner while waiting, streamed answer text,
//! one line per finished tool call, retries and warnings — and the approval prompt.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::style::Style;
use crate::engine::{EngineEvent, Observer};
use crate::llm::Delta;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};
use tokio_util::sync::CancellationToken;

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
    /// Render final answers as Markdown (only when the answer stream is a terminal and
    /// colours are allowed).
    pub markdown: bool,
}

/// What the answer stream shows of the current model call's answer, for the re-render of a
/// streamed answer once it is complete.
#[derive(Debug, Default)]
enum Screen {
    /// Nothing of it yet.
    #[default]
    Empty,
    /// Exactly this text, written since the answer began.
    Answer(String),
    /// Something else was written in between: its rows are not known.
    Disturbed,
}

#[derive(Default)]
struct State {
    spinner: Option<(String, Instant)>,
    spinner_drawn: bool,
    frame: usize,
    answer_streamed: bool,
    answer_open_line: bool,
    running_tools: usize,
    /// The answer text of the current model call shown so far.
    shown: String,
    /// After a retry that discarded a partial answer: how much of `shown` the new answer has
    /// repeated so far (it is not shown twice).
    replaying: Option<usize>,
    /// A retry notice held back until the answer line it would cut in two is finished.
    deferred_notice: Option<String>,
    screen: Screen,
}

impl State {
    /// Answer text written to the answer stream.
    fn wrote_answer(&mut self, text: &str) {
        match &mut self.screen {
            Screen::Empty => self.screen = Screen::Answer(text.to_string()),
            Screen::Answer(s) => s.push_str(text),
            Screen::Disturbed => {}
        }
    }

    /// Something other than the answer was written (a notice, a reasoning line).
    fn wrote_other(&mut self) {
        if let Screen::Answer(_) = self.screen {
            self.screen = Screen::Disturbed;
        }
    }
}

/// Terminal observer and approver. Every write to stderr goes through one lock so lines never
/// interleave with the spinner.
pub struct Terminal {
    opts: TerminalOptions,
    err_style: Style,
    glyphs: Glyphs,
    stderr_tty: bool,
    stream_answer: bool,
    /// Final answers rendered as Markdown: the answer stream is a terminal, colours and
    /// rendering are allowed.
    markdown: bool,
    /// The answer stream is a terminal.
    answer_tty: bool,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

const FRAMES: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const ASCII_FRAMES: &[&str] = &["-", "\\", "|", "/"];

/// How much of Unicode the tool lines and the spinner use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Glyphs {
    /// A colour terminal that shows UTF-8: the status mark and the tool's emoji.
    Rich,
    /// No colour, or not a terminal: the status mark (✓ ✗), no emoji.
    Plain,
    /// A terminal whose locale is not UTF-8: ASCII only (`ok`, `failed`).
    Ascii,
}

impl Glyphs {
    /// The glyphs for stderr: `color` is the configuration's colour setting.
    pub fn choose(color: bool, stderr_tty: bool, utf8: bool) -> Glyphs {
        match (stderr_tty, utf8, color) {
            (true, false, _) => Glyphs::Ascii,
            (true, true, true) => Glyphs::Rich,
            _ => Glyphs::Plain,
        }
    }
}

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
            glyphs: Glyphs::choose(opts.color, stderr_tty, process_locale_is_utf8()),
            stderr_tty,
            stream_answer: opts.stream && answer_tty && !opts.quiet,
            markdown: opts.markdown && opts.color && answer_tty,
            answer_tty,
            state: Arc::new(Mutex::new(State::default())),
            stop: Arc::new(AtomicBool::new(false)),
        });
        if stderr_tty && !opts.quiet {
            let frames = if t.glyphs == Glyphs::Ascii {
                ASCII_FRAMES
            } else {
                FRAMES
            };
            spawn_spinner(t.state.clone(), t.stop.clone(), frames);
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

    /// Prints a text on the answer stream whatever was streamed before (the closing
    /// summary of a limit, which is never streamed: a streamed answer it follows may have
    /// been cut off), on a line of its own.
    pub fn print_report(&self, text: &str) {
        let mut st = self.lock();
        clear_spinner(&mut st);
        close_answer_line(self.opts.answer, &mut st);
        st.answer_streamed = false;
        let text = if self.answer_tty {
            crate::text::visible(text.trim_end(), true)
        } else {
            std::borrow::Cow::Borrowed(text.trim_end())
        };
        write_answer(self.opts.answer, &format!("{text}\n"));
    }

    /// Prints the final answer — rendered as Markdown on a terminal — unless it was streamed
    /// already (a streamed answer was re-rendered when its model call finished).
    pub fn print_answer(&self, answer: &str) {
        let mut st = self.lock();
        clear_spinner(&mut st);
        if st.answer_streamed {
            close_answer_line(self.opts.answer, &mut st);
            return;
        }
        let text = if self.markdown {
            self.rendered(answer)
        } else if self.answer_tty {
            // Raw on a terminal: the text, the escape sequences a terminal acts on shown.
            with_newline(&crate::text::visible(answer, true))
        } else {
            with_newline(answer)
        };
        write_answer(self.opts.answer, &text);
    }

    fn rendered(&self, answer: &str) -> String {
        let (cols, _) = answer_window(self.opts.answer);
        let look = super::markdown::Look {
            width: cols.min(MAX_RENDER_WIDTH),
            color: true,
            unicode: self.glyphs != Glyphs::Ascii,
        };
        super::markdown::render(answer, look)
    }

    /// Moves up over the streamed text `shown` (closed by a newline), clears it and writes
    /// the rendering, inside a synchronized update. Left as it is when its rows are not known
    /// (control characters) or part of it has scrolled off the screen.
    fn rerender(&self, shown: &str, answer: &str) {
        if shown.trim_end() != answer.trim_end() {
            return;
        }
        let (cols, rows) = answer_window(self.opts.answer);
        let Some(used) = rows_used(shown, cols) else {
            return;
        };
        if used == 0 || used >= rows {
            return;
        }
        let rendered = self.rendered(answer);
        if rendered == shown {
            // Plain text: its rendering is what the screen already shows.
            return;
        }
        write_answer(
            self.opts.answer,
            &format!("\x1b[?2026h\r\x1b[{used}A\x1b[J{rendered}\x1b[?2026l"),
        );
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
        st.wrote_other();
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
                // A terminal acts on escape sequences: the model's are shown, never sent.
                self.show_answer_text(&mut st, &crate::text::visible(text, true));
            }
            Delta::Restart if self.stream_answer => {
                let mut st = self.lock();
                if !st.shown.is_empty() {
                    st.replaying = Some(0);
                }
            }
            Delta::Reasoning(text) if self.opts.verbose > 0 && self.stderr_tty => {
                let mut st = self.lock();
                st.spinner = None;
                clear_spinner(&mut st);
                st.wrote_other();
                let _ = write!(std::io::stderr(), "{}", self.err_style.dim(text));
            }
            _ => {}
        }
    }

    /// Shows streamed answer text. After a retry, the new answer's text that repeats what is
    /// already on screen is skipped, so a retried answer appears once; when it differs, the
    /// user is told and it is shown from its start.
    fn show_answer_text(&self, st: &mut State, text: &str) {
        let fresh = match st.replaying {
            None => text.to_string(),
            Some(at) => {
                let ahead = &st.shown[at..];
                if ahead.starts_with(text) {
                    st.replaying = Some(at + text.len());
                    return;
                }
                st.replaying = None;
                match text.strip_prefix(ahead) {
                    Some(rest) => rest.to_string(),
                    None => {
                        let repeated = st.shown[..at].to_string();
                        self.announce_different_retry(st);
                        st.shown.clear();
                        format!("{repeated}{text}")
                    }
                }
            }
        };
        if fresh.is_empty() {
            return;
        }
        write_answer(self.opts.answer, &fresh);
        st.wrote_answer(&fresh);
        st.shown.push_str(&fresh);
        st.answer_streamed = true;
        st.answer_open_line = !fresh.ends_with('\n');
    }

    /// The retried answer is not the text on screen: say so, on a line of its own.
    fn announce_different_retry(&self, st: &mut State) {
        close_answer_line(self.opts.answer, st);
        st.screen = Screen::Empty;
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            self.err_style.yellow(
                "odek: the retried answer differs from the text above, which is discarded:"
            )
        );
    }

    /// A retry notice: printed now (`now`), or — when the text of the broken attempt is
    /// being shown and the notice would cut that answer line in two — once the answer line is
    /// finished (`later`, in the past tense).
    fn retry_notice(&self, now: &str, later: &str, discards_partial_answer: bool) {
        if self.opts.quiet {
            return;
        }
        let discarded = if discards_partial_answer {
            "; the partial answer was discarded"
        } else {
            ""
        };
        let mut st = self.lock();
        if discards_partial_answer && st.answer_open_line {
            let text = format!("odek: {later}{discarded}");
            st.deferred_notice = Some(self.err_style.yellow(&text));
            return;
        }
        drop(st);
        self.line(&self.err_style.yellow(&format!("odek: {now}{discarded}")));
    }

    fn on_model_finished(&self, message: &crate::llm::Message, streamed: bool) {
        self.stop_spinner();
        let mut st = self.lock();
        if let Some(at) = st.replaying.take()
            && at < st.shown.len()
        {
            // The retried answer ended inside the text shown before the retry.
            self.announce_different_retry(&mut st);
            write_answer(self.opts.answer, &message.content);
            st.wrote_answer(&message.content);
            st.answer_open_line = !message.content.ends_with('\n');
        }
        st.shown.clear();
        close_answer_line(self.opts.answer, &mut st);
        if message.tool_calls.is_empty()
            && self.markdown
            && let Screen::Answer(shown) = std::mem::take(&mut st.screen)
        {
            // The answer is complete and still whole on the screen: replace it by its
            // rendering in one write (no flicker).
            self.rerender(&shown, &message.content);
        }
        if let Some(notice) = st.deferred_notice.take() {
            st.wrote_other();
            let _ = writeln!(std::io::stderr(), "{notice}");
        }
        let narration = !message.tool_calls.is_empty() && !message.content.trim().is_empty();
        if narration && !streamed && !self.opts.quiet {
            let _ = writeln!(
                std::io::stderr(),
                "{}",
                self.err_style
                    .dim(&crate::text::visible(message.content.trim(), true))
            );
        }
        if !message.tool_calls.is_empty() {
            // Narration before tool calls is not the answer; the final call decides.
            st.answer_streamed = false;
            st.screen = Screen::Empty;
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
        let line = tool_line(
            self.err_style,
            self.glyphs,
            ToolLine {
                name,
                ok,
                duration,
                error,
                summary,
            },
        );
        self.line(&line);
    }
}

impl Observer for Terminal {
    fn on_event(&self, event: &EngineEvent<'_>) {
        match event {
            EngineEvent::ModelCallStarted { .. } => {
                {
                    let mut st = self.lock();
                    st.answer_streamed = false;
                    st.shown.clear();
                    st.replaying = None;
                    st.screen = Screen::Empty;
                }
                self.start_spinner("thinking".into());
            }
            EngineEvent::ModelRetry {
                attempt,
                max_attempts,
                wait,
                reason,
                discards_partial_answer,
            } => self.retry_notice(
                &format!("{reason} — retrying in {:.1}s (attempt {attempt}/{max_attempts})", wait.as_secs_f64()),
                &format!("{reason} — retried (attempt {attempt}/{max_attempts})"),
                *discards_partial_answer,
            ),
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
                    format!(
                        "running {} {}",
                        shorten(&call.function.name, 40),
                        shorten(summary, 60)
                    )
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
            EngineEvent::ToolReport { report, .. } => self.on_tool_report(report),
            EngineEvent::BackgroundFinished { ended } => self.line(&self.err_style.dim(&format!(
                "  ⏳ job {} {} after {} s: {}",
                ended.id,
                ended.status,
                ended.duration.as_secs(),
                shorten(&ended.command, 60)
            ))),
            EngineEvent::Hint { text, .. } if self.opts.verbose > 0 => self.line(&self.err_style.yellow(text)),
            EngineEvent::SessionSaveFailed { error } => self.line(&self.err_style.yellow(&format!(
                "odek: warning: could not save the session: {error}"
            ))),
            EngineEvent::ContextTrimmed {
                dropped_groups,
                truncated_results,
                shortened_attachments,
                overflow: Some(overflow),
                ..
            } => self.line(&self.err_style.yellow(&format!(
                "odek: the request was over the model's context window ({overflow}); trimmed to survive: {dropped_groups} message(s) dropped, {truncated_results} output(s) and {shortened_attachments} attachment(s) shortened"
            ))),
            EngineEvent::ContextTrimmed {
                mode,
                dropped_groups,
                truncated_results,
                shortened_attachments,
                ..
            } if self.opts.verbose > 0 => self.line(&self.err_style.dim(&format!(
                "odek: context trimmed ({mode}): {dropped_groups} group(s) dropped, {truncated_results} output(s) and {shortened_attachments} attachment(s) shortened"
            ))),
            EngineEvent::RunStarted { context_window, .. } if self.opts.verbose > 0 => {
                self.line(&self.err_style.dim(&window_line(*context_window)))
            }
            EngineEvent::RunFinished { .. } => {
                self.stop_spinner();
                // A retry notice held back for an answer that never finished.
                let mut st = self.lock();
                if let Some(notice) = st.deferred_notice.take() {
                    close_answer_line(self.opts.answer, &mut st);
                    st.wrote_other();
                    let _ = writeln!(std::io::stderr(), "{notice}");
                }
            }
            _ => {}
        }
    }
}

/// What one finished tool call's line says.
struct ToolLine<'a> {
    name: &'a str,
    ok: bool,
    duration: Duration,
    error: Option<&'a str>,
    summary: &'a str,
}

/// `  ✓ 📋 plan create 0.0s` (rich), `  ✓ plan create 0.0s` (plain) or
/// `  ok plan create 0.0s` (ASCII); a failure adds `— <error>`.
fn tool_line(s: Style, glyphs: Glyphs, call: ToolLine<'_>) -> String {
    let ascii = glyphs == Glyphs::Ascii;
    let mark = match (call.ok, ascii) {
        (true, false) => s.green("✓"),
        (false, false) => s.red("✗"),
        (true, true) => "ok".to_string(),
        (false, true) => "failed".to_string(),
    };
    let mut line = format!("  {mark} ");
    if glyphs == Glyphs::Rich {
        line.push_str(crate::tools::catalog::tool_emoji(call.name));
        line.push(' ');
    }
    let summary = shorten(call.summary, 80);
    let summary = if ascii { to_ascii(&summary) } else { summary };
    let name = shorten(call.name, 80);
    line.push_str(&format!("{} {summary}", s.cyan(&name)));
    line.push_str(&s.dim(&format!(" {:.1}s", call.duration.as_secs_f64())));
    if let Some(e) = call.error {
        let e = shorten(e, 120);
        let text = if ascii {
            format!("- {}", to_ascii(&e))
        } else {
            format!("— {e}")
        };
        line.push_str(&format!(" {}", s.red(&text)));
    }
    line
}

/// Non-ASCII characters as `?`, for terminals that cannot show them.
fn to_ascii(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii() { c } else { '?' })
        .collect()
}

/// The first line of `s` in at most `max` characters in all, its control characters shown
/// ([`crate::text::visible`]): file names, commands and errors reach the terminal as text.
fn shorten(s: &str, max: usize) -> String {
    let first = crate::text::visible(s.lines().next().unwrap_or(""), false);
    crate::text::fit(&first, max).into_owned()
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
        st.wrote_answer("\n");
        st.answer_open_line = false;
    }
}

/// `text` ending with a newline.
fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

/// Rendered answers are wrapped to the terminal, at most this wide (long lines read badly).
const MAX_RENDER_WIDTH: usize = 100;

/// Columns and rows of the terminal behind the answer stream (80×24 when it does not say).
fn answer_window(stream: AnswerStream) -> (usize, usize) {
    let size = match stream {
        AnswerStream::Stdout => terminal_size::terminal_size_of(std::io::stdout()),
        AnswerStream::Stderr => terminal_size::terminal_size_of(std::io::stderr()),
    };
    match size {
        Some((w, h)) if w.0 > 0 && h.0 > 0 => (usize::from(w.0), usize::from(h.0)),
        _ => (80, 24),
    }
}

/// The terminal rows `text` (ending with a newline) takes at `cols` columns; `None` when
/// control characters make that unknowable.
fn rows_used(text: &str, cols: usize) -> Option<usize> {
    use unicode_width::UnicodeWidthStr;
    if text.chars().any(|c| c.is_control() && c != '\n') || cols == 0 {
        return None;
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    Some(
        body.split('\n')
            .map(|line| line.width().div_ceil(cols).max(1))
            .sum(),
    )
}

fn clear_spinner(st: &mut State) {
    if st.spinner_drawn {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
        let _ = std::io::stderr().flush();
        st.spinner_drawn = false;
    }
}

fn spawn_spinner(state: Arc<Mutex<State>>, stop: Arc<AtomicBool>, frames: &'static [&'static str]) {
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
                st.frame = (st.frame + 1) % frames.len();
                let frame = frames[st.frame];
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

/// The terminal's prompt, read on a blocking thread.
pub struct TerminalApprover(pub Arc<Terminal>);

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let (terminal, items, cancel) = (self.0.clone(), items.to_vec(), cancel.clone());
        tokio::task::spawn_blocking(move || terminal.ask_blocking(&items, &cancel))
            .await
            .unwrap_or(ApprovalAnswer::Deny)
    }

    async fn clarify(&self, question: &Question, cancel: &CancellationToken) -> QuestionAnswer {
        let (terminal, question, cancel) = (self.0.clone(), question.clone(), cancel.clone());
        tokio::task::spawn_blocking(move || terminal.clarify_blocking(&question, &cancel))
            .await
            .unwrap_or(QuestionAnswer::NoUser)
    }
}

impl Terminal {
    /// Asks on the controlling terminal. The terminal's lock is held only to clear the
    /// spinner, never while waiting for the answer, and Ctrl-C (which cancels the turn)
    /// ends the wait at once: the calls count as refused.
    fn ask_blocking(&self, items: &[ApprovalItem], cancel: &CancellationToken) -> ApprovalAnswer {
        let Some(tty) = self.open_prompt() else {
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
            // A command of several parts: each on its own row, with its own reason.
            for part in &item.parts {
                let _ = writeln!(
                    out,
                    "     · {}  {}",
                    part.text,
                    s.dim(&format!(
                        "[{}{}]",
                        part.class.as_str(),
                        reason(&part.reason)
                    ))
                );
            }
        }
        let trust_allowed = items.iter().all(ApprovalItem::can_be_trusted);
        let question = if trust_allowed && items.iter().all(|i| i.scope.is_some()) {
            "[a]pprove  [d]eny  [t]rust these hosts for this session: "
        } else if trust_allowed {
            "[a]pprove  [d]eny  [t]rust these risk classes for this session: "
        } else {
            "[a]pprove  [d]eny (trust-session disabled for this risk): "
        };
        loop {
            let _ = write!(out, "{}", s.bold(question));
            let _ = out.flush();
            let answer = match read_line_cancellable(&tty, cancel) {
                LineRead::Line(answer) => answer,
                LineRead::End => return ApprovalAnswer::Deny,
                LineRead::Cancelled => {
                    let _ = writeln!(out);
                    return ApprovalAnswer::Cancelled;
                }
            };
            match answer.trim().to_ascii_lowercase().as_str() {
                "a" | "approve" | "y" | "yes" => return ApprovalAnswer::Approve,
                "t" | "trust" if trust_allowed => return ApprovalAnswer::TrustClasses,
                "d" | "deny" | "n" | "no" | "" => return ApprovalAnswer::Deny,
                _ => continue,
            }
        }
    }
}

impl Terminal {
    /// A sub-agent's start and end, one line each (its goal is the model's text, never
    /// shown here).
    fn on_tool_report(&self, report: &crate::tools::ToolReport) {
        use crate::tools::ToolReport;
        if self.opts.quiet {
            return;
        }
        let s = self.err_style;
        let text = match report {
            // The checkpoint's number is in `odek rewind --list`; a line per edit is noise.
            ToolReport::Checkpoint(_) => return,
            ToolReport::SubagentStarted { index, total } => {
                s.dim(&format!("  ↳ sub-agent {index}/{total} started"))
            }
            ToolReport::SubagentFinished {
                index,
                total,
                status,
                iterations,
                tool_calls,
                duration_ms,
                ..
            } => {
                let line = format!(
                    "  ↳ sub-agent {index}/{total} {status} · {iterations} iterations, {tool_calls} tool calls · {:.1}s",
                    *duration_ms as f64 / 1000.0
                );
                if status == crate::protocol::subagent::EnvelopeStatus::Ok.as_str() {
                    s.dim(&line)
                } else {
                    s.yellow(&line)
                }
            }
        };
        self.line(&text);
    }

    /// Clears the spinner and ends a streamed answer's line, then opens the controlling
    /// terminal for a prompt (`None` when there is none). The terminal's lock is not held
    /// while the prompt waits.
    fn open_prompt(&self) -> Option<std::fs::File> {
        {
            let mut st = self.lock();
            st.spinner = None;
            clear_spinner(&mut st);
            close_answer_line(self.opts.answer, &mut st);
        }
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()
    }

    /// Asks the model's question on the controlling terminal: the options numbered, the
    /// answer a number or words. Ctrl-C ends the wait at once; end of input means nobody is
    /// there to answer.
    fn clarify_blocking(&self, question: &Question, cancel: &CancellationToken) -> QuestionAnswer {
        let Some(tty) = self.open_prompt() else {
            return QuestionAnswer::NoUser;
        };
        let s = self.err_style;
        let mut out = &tty;
        // The model's question and options: their control bytes shown, never acted on.
        let asked = crate::text::visible(&question.question, true);
        let _ = writeln!(out, "\n{} {}", s.yellow("❓"), s.bold(&asked));
        for (i, option) in question.options.iter().enumerate() {
            let _ = writeln!(out, "  {}. {}", i + 1, crate::text::visible(option, false));
        }
        let prompt = if question.options.is_empty() {
            "answer: ".to_string()
        } else {
            format!("answer (1-{} or your own words): ", question.options.len())
        };
        loop {
            let _ = write!(out, "{}", s.bold(&prompt));
            let _ = out.flush();
            match read_line_cancellable(&tty, cancel) {
                LineRead::Line(reply) => {
                    if let Some(answer) = crate::tools::answer_from_reply(&question.options, &reply)
                    {
                        return QuestionAnswer::Answered(answer);
                    }
                }
                LineRead::End => return QuestionAnswer::NoUser,
                LineRead::Cancelled => {
                    let _ = writeln!(out);
                    return QuestionAnswer::Cancelled;
                }
            }
        }
    }
}

/// What a cancellable read of one line gave.
enum LineRead {
    Line(String),
    /// End of input or an error: nobody can answer.
    End,
    Cancelled,
}

/// How often a waiting prompt looks at the cancellation token, in milliseconds.
const CANCEL_POLL_MS: u8 = 100;

/// Reads one line from the terminal, giving up as soon as `cancel` fires. Bytes are read
/// only when `poll` says they are there, so nothing typed after a cancellation is consumed
/// here (it goes to whatever reads the terminal next, e.g. the REPL's prompt).
fn read_line_cancellable(tty: &std::fs::File, cancel: &CancellationToken) -> LineRead {
    use nix::poll::{PollFd, PollFlags, poll};
    use std::io::Read;
    use std::os::fd::AsFd;
    let mut line = Vec::new();
    loop {
        if cancel.is_cancelled() {
            return LineRead::Cancelled;
        }
        let mut fds = [PollFd::new(tty.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, nix::poll::PollTimeout::from(CANCEL_POLL_MS)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return LineRead::End,
        }
        let mut byte = [0u8; 1];
        match (&*tty).read(&mut byte) {
            Ok(0) => return LineRead::End,
            Ok(_) if byte[0] == b'\n' => {
                return LineRead::Line(String::from_utf8_lossy(&line).into_owned());
            }
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return LineRead::End,
        }
    }
}

fn reason(r: &str) -> String {
    if r.is_empty() {
        String::new()
    } else {
        format!(" — {r}")
    }
}

/// The `-v` line that says the context window and where its size came from.
fn window_line(window: Option<&crate::llm::WindowSize>) -> String {
    match window {
        Some(w) => format!("odek: context window {} tokens ({})", w.tokens, w.source),
        None => "odek: context window unknown (the server does not say): nothing is trimmed before the server reports an overflow; set context_window to give it".into(),
    }
}

/// True when a terminal whose locale is described by these variables (`LC_ALL`, then
/// `LC_CTYPE`, then `LANG`, the first one set and non-empty) shows UTF-8. With none set the
/// terminal is assumed to be UTF-8, as nearly every terminal today is.
pub fn locale_is_utf8(lc_all: Option<&str>, lc_ctype: Option<&str>, lang: Option<&str>) -> bool {
    let chosen = [lc_all, lc_ctype, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty());
    match chosen {
        None => true,
        Some(locale) => {
            let l = locale.to_ascii_lowercase();
            l.contains("utf-8") || l.contains("utf8")
        }
    }
}

/// [`locale_is_utf8`] for this process's environment.
pub fn process_locale_is_utf8() -> bool {
    let var = |k: &str| std::env::var(k).ok();
    locale_is_utf8(
        var("LC_ALL").as_deref(),
        var("LC_CTYPE").as_deref(),
        var("LANG").as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_detection() {
        assert!(locale_is_utf8(None, None, None));
        assert!(locale_is_utf8(None, None, Some("en_US.UTF-8")));
        assert!(locale_is_utf8(Some("C.utf8"), None, Some("C")));
        assert!(!locale_is_utf8(Some("C"), None, Some("en_US.UTF-8")));
        assert!(!locale_is_utf8(None, Some("POSIX"), None));
        assert!(!locale_is_utf8(Some(""), None, Some("de_DE.ISO-8859-1")));
    }

    fn call<'a>(name: &'a str, ok: bool, error: Option<&'a str>) -> ToolLine<'a> {
        ToolLine {
            name,
            ok,
            duration: Duration::from_millis(40),
            error,
            summary: "create “Ship it”",
        }
    }

    #[test]
    fn rows_of_streamed_text_count_folded_and_wide_lines() {
        assert_eq!(rows_used("short\n", 80), Some(1));
        assert_eq!(rows_used("a\n\nb\n", 80), Some(3));
        assert_eq!(rows_used(&format!("{}\n", "x".repeat(80)), 80), Some(1));
        assert_eq!(rows_used(&format!("{}\n", "x".repeat(81)), 80), Some(2));
        assert_eq!(rows_used("日本語日本語\n", 10), Some(2));
        assert_eq!(rows_used("tab\there\n", 80), None);
        assert_eq!(rows_used("esc\x1b[2J\n", 80), None);
    }

    #[test]
    fn glyphs_follow_colour_terminal_and_locale() {
        assert_eq!(Glyphs::choose(true, true, true), Glyphs::Rich);
        assert_eq!(Glyphs::choose(false, true, true), Glyphs::Plain);
        assert_eq!(Glyphs::choose(true, false, true), Glyphs::Plain);
        assert_eq!(Glyphs::choose(true, false, false), Glyphs::Plain);
        assert_eq!(Glyphs::choose(true, true, false), Glyphs::Ascii);
        assert_eq!(Glyphs::choose(false, true, false), Glyphs::Ascii);
    }

    #[test]
    fn tool_lines_in_each_mode() {
        let off = Style::new(false);
        assert_eq!(
            tool_line(off, Glyphs::Rich, call("plan", true, None)),
            "  ✓ 📋 plan create “Ship it” 0.0s"
        );
        assert_eq!(
            tool_line(off, Glyphs::Rich, call("fetch", true, None)),
            "  ✓ 🔧 fetch create “Ship it” 0.0s"
        );
        assert_eq!(
            tool_line(off, Glyphs::Plain, call("plan", true, None)),
            "  ✓ plan create “Ship it” 0.0s"
        );
        assert_eq!(
            tool_line(
                off,
                Glyphs::Ascii,
                call("shell", false, Some("exit 1 — boom"))
            ),
            "  failed shell create ?Ship it? 0.0s - exit 1 ? boom"
        );
        let colour = tool_line(Style::new(true), Glyphs::Rich, call("shell", true, None));
        assert!(colour.contains("💻 \x1b[36mshell\x1b[0m"), "{colour:?}");
    }
}
