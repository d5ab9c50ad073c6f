//! The terminal itself: its options, the state behind its one lock, lines on stderr, the
//! spinner's label, and shutdown.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::glyphs::{Glyphs, process_locale_is_utf8};
use super::spinner::{ASCII_FRAMES, FRAMES, clear_spinner, spawn_spinner};
use super::state::{AnswerStream, State, close_answer_line};
use crate::cli::style::Style;

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

/// Terminal observer and approver. Every write to stderr goes through one lock so lines never
/// interleave with the spinner.
pub struct Terminal {
    pub(super) opts: TerminalOptions,
    pub(super) err_style: Style,
    pub(super) glyphs: Glyphs,
    pub(super) stderr_tty: bool,
    pub(super) stream_answer: bool,
    /// Final answers rendered as Markdown: the answer stream is a terminal, colours and
    /// rendering are allowed.
    pub(super) markdown: bool,
    /// The answer stream is a terminal.
    pub(super) answer_tty: bool,
    pub(super) state: Arc<Mutex<State>>,
    pub(super) stop: Arc<AtomicBool>,
    /// Where prompts read their answer instead of the terminal (the REPL's reader).
    pub(super) replies: Mutex<Option<std::sync::mpsc::Receiver<String>>>,
    /// A prompt waits on `replies`.
    pub(super) asking: AtomicBool,
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
            replies: Mutex::new(None),
            asking: AtomicBool::new(false),
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
        let mut err = super::sink::Out(std::io::stderr().lock());
        // One write for the line and its newline (stderr is unbuffered: `writeln!` makes two).
        let mut text = String::with_capacity(line.len() + 1);
        text.push_str(line);
        text.push('\n');
        let _ = err.write_all(text.as_bytes());
    }

    /// Stops the spinner thread.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let mut st = self.lock();
        st.spinner = None;
        clear_spinner(&mut st);
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn start_spinner(&self, label: String) {
        if self.stderr_tty && !self.opts.quiet {
            let mut st = self.lock();
            let since = st.spinner.as_ref().map_or_else(Instant::now, |(_, s)| *s);
            st.spinner = Some((label, since));
        }
    }

    pub(super) fn stop_spinner(&self) {
        let mut st = self.lock();
        st.spinner = None;
        clear_spinner(&mut st);
    }
}
