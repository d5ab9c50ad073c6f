//! What the terminal's one lock guards — the spinner, the streamed answer and what the
//! answer stream shows — and the writes to the answer stream.

use std::io::Write;
use std::time::Instant;

/// Where the answer text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStream {
    /// Standard output (the default).
    Stdout,
    /// Standard error (when stdout carries the event stream).
    Stderr,
}

/// What the answer stream shows of the current model call's answer, for the re-render of a
/// streamed answer once it is complete.
#[derive(Debug, Default)]
pub(super) enum Screen {
    /// Nothing of it yet.
    #[default]
    Empty,
    /// Exactly this text, written since the answer began.
    Answer(String),
    /// Something else was written in between: its rows are not known.
    Disturbed,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) spinner: Option<(String, Instant)>,
    pub(super) spinner_drawn: bool,
    pub(super) frame: usize,
    pub(super) answer_streamed: bool,
    pub(super) answer_open_line: bool,
    pub(super) running_tools: usize,
    /// The answer text of the current model call shown so far.
    pub(super) shown: String,
    /// After a retry that discarded a partial answer: how much of `shown` the new answer has
    /// repeated so far (it is not shown twice).
    pub(super) replaying: Option<usize>,
    /// A retry notice held back until the answer line it would cut in two is finished.
    pub(super) deferred_notice: Option<String>,
    pub(super) screen: Screen,
}

impl State {
    /// Answer text written to the answer stream.
    pub(super) fn wrote_answer(&mut self, text: &str) {
        match &mut self.screen {
            Screen::Empty => self.screen = Screen::Answer(text.to_string()),
            Screen::Answer(s) => s.push_str(text),
            Screen::Disturbed => {}
        }
    }

    /// Something other than the answer was written (a notice, a reasoning line).
    pub(super) fn wrote_other(&mut self) {
        if let Screen::Answer(_) = self.screen {
            self.screen = Screen::Disturbed;
        }
    }
}

pub(super) fn write_answer(stream: AnswerStream, text: &str) {
    if super::sink::write(text, false) {
        return;
    }
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

pub(super) fn close_answer_line(stream: AnswerStream, st: &mut State) {
    if st.answer_open_line {
        write_answer(stream, "\n");
        st.wrote_answer("\n");
        st.answer_open_line = false;
    }
}

/// `text` ending with a newline.
pub(super) fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_string()
    } else {
        format!("{text}\n")
    }
}

/// Rendered answers are wrapped to the terminal, at most this wide (long lines read badly).
pub(super) const MAX_RENDER_WIDTH: usize = 100;

/// Columns and rows of the terminal behind the answer stream (80×24 when it does not say).
pub(super) fn answer_window(stream: AnswerStream) -> (usize, usize) {
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
pub(super) fn rows_used(text: &str, cols: usize) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
