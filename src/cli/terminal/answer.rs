//! The answer on the answer stream: streamed text as it arrives (a retried answer shown
//! once), the re-render of a complete answer as Markdown, the final answer and the closing
//! report, and the retry notices that must not cut an answer line in two.

use std::io::Write;

use super::base::Terminal;
use super::glyphs::Glyphs;
use super::spinner::clear_spinner;
use super::state::{
    MAX_RENDER_WIDTH, Screen, State, answer_window, close_answer_line, rows_used, with_newline,
    write_answer,
};
use crate::llm::Delta;

impl Terminal {
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
        let look = crate::cli::markdown::Look {
            width: cols.min(MAX_RENDER_WIDTH),
            color: true,
            unicode: self.glyphs != Glyphs::Ascii,
        };
        crate::cli::markdown::render(answer, look)
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
        // Above the REPL's prompt, the printer's clearing of the prompt leaves the cursor
        // right under the streamed text: the same moves reach it.
        let update = format!("\x1b[?2026h\r\x1b[{used}A\x1b[J{rendered}\x1b[?2026l");
        if !super::sink::write(&update, true) {
            write_answer(self.opts.answer, &update);
        }
    }

    pub(super) fn on_delta(&self, delta: Delta<'_>) {
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
                let _ = write!(
                    super::sink::Out(std::io::stderr()),
                    "{}",
                    self.err_style.dim(text)
                );
            }
            // Not streamed: answer text off a terminal or in quiet mode (the final answer is
            // printed whole), a restart with nothing shown, reasoning without `-v` or off a terminal.
            Delta::Content(_) | Delta::Restart | Delta::Reasoning(_) => {}
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
            super::sink::Out(std::io::stderr()),
            "{}",
            self.err_style.yellow(
                "odek: the retried answer differs from the text above, which is discarded:"
            )
        );
    }

    /// A retry notice: printed now (`now`), or — when the text of the broken attempt is
    /// being shown and the notice would cut that answer line in two — once the answer line is
    /// finished (`later`, in the past tense).
    pub(super) fn retry_notice(&self, now: &str, later: &str, discards_partial_answer: bool) {
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

    pub(super) fn on_model_finished(&self, message: &crate::llm::Message, streamed: bool) {
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
            let _ = writeln!(super::sink::Out(std::io::stderr()), "{notice}");
        }
        let narration = !message.tool_calls.is_empty() && !message.content.trim().is_empty();
        if narration && !streamed && !self.opts.quiet {
            let _ = writeln!(
                super::sink::Out(std::io::stderr()),
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
}
