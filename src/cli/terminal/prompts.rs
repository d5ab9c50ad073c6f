//! The approval prompt and the `clarify` question on the controlling terminal, read on a
//! blocking thread, Ctrl-C ending the wait at once.

use std::io::Write;
use std::sync::Arc;

use super::base::Terminal;
use super::spinner::clear_spinner;
use super::state::close_answer_line;
use crate::tools::approval::{ApprovalAnswer, ApprovalItem, Approver, Question, QuestionAnswer};
use tokio_util::sync::CancellationToken;

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
        let mut out = super::sink::Out(&tty);
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
            let answer = match self.read_reply(&tty, cancel) {
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
        let mut out = super::sink::Out(&tty);
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
            match self.read_reply(&tty, cancel) {
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

impl Terminal {
    /// The answer to a prompt: the next line the REPL read, while it reads during a turn
    /// ([`Terminal::take_replies_from`]); else a line of the terminal.
    fn read_reply(&self, tty: &std::fs::File, cancel: &CancellationToken) -> LineRead {
        let replies = self.replies.lock().unwrap_or_else(|p| p.into_inner());
        let Some(replies) = replies.as_ref() else {
            return read_line_cancellable(tty, cancel);
        };
        self.asking.store(true, std::sync::atomic::Ordering::SeqCst);
        let wait = std::time::Duration::from_millis(u64::from(CANCEL_POLL_MS));
        let read = loop {
            if cancel.is_cancelled() {
                break LineRead::Cancelled;
            }
            match replies.recv_timeout(wait) {
                Ok(line) => break LineRead::Line(line),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break LineRead::End,
            }
        };
        self.asking
            .store(false, std::sync::atomic::Ordering::SeqCst);
        read
    }

    /// From now on a prompt's answer is the next line sent on `replies` (the REPL reads the
    /// terminal during a turn and hands the line over while [`Terminal::is_asking`]).
    pub fn take_replies_from(&self, replies: std::sync::mpsc::Receiver<String>) {
        *self.replies.lock().unwrap_or_else(|p| p.into_inner()) = Some(replies);
    }

    /// True while a prompt waits for its answer on the replies channel.
    pub fn is_asking(&self) -> bool {
        self.asking.load(std::sync::atomic::Ordering::SeqCst)
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
