//! A chat's turn: its session opened or started, submitted to the supervisor, and its tool
//! progress in one message edited in place.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::parts::{Bot, HOLDER, PROGRESS_EDIT_INTERVAL, lock, now_secs};
use crate::engine::{EngineEvent, Observer};
use crate::llm::Message;
use crate::runtime::{
    Approvals, Delivered, Delivery, Runtime, RuntimeError, SessionHandle, Submission, TurnScope,
};
use crate::session::{ORIGIN_TELEGRAM, SessionError};
use crate::telegram::chats;
use crate::telegram::outgoing;
use crate::telegram::state::ChatSession;
use crate::telegram::text::{MAX_MESSAGE_UNITS, utf16_len};
use crate::tools::catalog::tool_emoji;

/// The reply to a message given to the running turn.
pub(super) const STEERED: &str = "↳ Given to the running turn: it reads this before its next step.";

/// What a chat's turn starts with.
pub(super) struct ChatTurn {
    /// The user message (its text and images).
    pub input: Message,
    /// Where external content in it came from (a file sent through the chat).
    pub external: Vec<String>,
    /// What a custom command narrows for the turn.
    pub scope: TurnScope,
    /// A new session's name when it is not the message's text (a command as typed).
    pub title: Option<String>,
}

impl ChatTurn {
    /// A turn of `input` as it is.
    pub(super) fn of(input: Message) -> ChatTurn {
        ChatTurn {
            input,
            external: Vec::new(),
            scope: TurnScope::default(),
            title: None,
        }
    }
}

impl Bot {
    /// A turn of `text`; while the chat's turn runs, `text` goes to that turn instead (a
    /// steer: the model reads it at its next request).
    pub(super) async fn start_turn(self: &Arc<Self>, chat: i64, text: String) {
        let Some(text) = self.steer_running(chat, text).await else {
            return;
        };
        self.start_turn_with(chat, ChatTurn::of(Message::user(text)))
            .await;
    }

    /// Gives `text` to the chat's running turn and says so; the text back when none runs.
    async fn steer_running(&self, chat: i64, text: String) -> Option<String> {
        if !self.runs.is_running(chat) {
            return Some(text);
        }
        let session = self.chat_session(chat)?;
        match self
            .supervisor
            .deliver(&session.session_id, text, Delivery::Steer)
        {
            Delivered::NotRunning(text) => Some(text),
            Delivered::Taken { .. } => {
                self.say(chat, STEERED).await;
                None
            }
        }
    }

    /// The chat's next turn, of a message its ended turn did not take (boxed: that turn
    /// continues in turn when it ends).
    fn run_next(
        self: Arc<Self>,
        chat: i64,
        text: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move { self.start_turn(chat, text).await })
    }

    /// A turn of the chat's session with `turn`'s message, external content and scope.
    pub(super) async fn start_turn_with(self: &Arc<Self>, chat: i64, turn: ChatTurn) {
        let ChatTurn {
            input,
            external,
            scope,
            title,
        } = turn;
        if let Some(refusal) = self.no_turn_now(chat) {
            self.say(chat, &refusal).await;
            return;
        }
        let existing = self.chat_session(chat).map(|s| s.session_id);
        let runtime = self.runtime.clone();
        let task_text = title.unwrap_or_else(|| input.content.clone());
        let opened =
            tokio::task::spawn_blocking(move || open_session(&runtime, existing, &task_text))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
        let session = match opened {
            Ok(session) => session,
            Err(e) => {
                self.say(chat, &format!("Cannot start the turn: {e}")).await;
                return;
            }
        };
        let session_id = session.id().to_string();
        {
            let mut state = lock(&self.state);
            state.state.chats.insert(
                chat.to_string(),
                ChatSession {
                    session_id: session_id.clone(),
                    last_active: now_secs(),
                },
            );
            state.state.remember_session(chat, &session_id);
            if let Err(e) = state.save() {
                eprintln!("odek telegram: warning: could not save the chat's session: {e}");
            }
        }
        let (progress_tx, progress_rx) = unbounded_channel();
        let progress_end = progress_tx.clone();
        let handle = match self.supervisor.submit(Submission {
            runtime: self.runtime.clone(),
            session: Some(session),
            input: vec![input],
            approvals: Approvals::remote(),
            output: Arc::new(ProgressObserver { tx: progress_tx }),
            external,
            origin: crate::session::ORIGIN_TELEGRAM,
            files: None,
            scope,
        }) {
            Ok(handle) => handle,
            Err(e) => {
                self.say(chat, &format!("Cannot start the turn: {e}")).await;
                return;
            }
        };
        self.runs.start(chat, &handle.run_id);
        let progress = tokio::spawn(self.clone().show_progress(chat, progress_rx));
        let bot = self.clone();
        let task = tokio::spawn(async move {
            let run_id = handle.run_id.clone();
            let (outcome, next) = handle.outcome_and_next().await;
            let _ = progress_end.send(Progress::End);
            let _ = progress.await;
            // The chat is free before the answer goes out: a message sent the moment the
            // answer arrives starts the next turn instead of being told one is running.
            bot.runs.end(chat, &run_id);
            {
                let mut state = lock(&bot.state);
                if let Some(s) = state.state.chats.get_mut(&chat.to_string()) {
                    s.last_active = now_secs();
                }
                if let Ok(o) = &outcome {
                    let tokens = o.run.usage.input_tokens + o.run.usage.output_tokens;
                    let cost = o.run.cost_usd.map(crate::llm::pricing::microdollars);
                    state.state.add_usage(chat, &chats::today(), tokens, cost);
                }
                let _ = state.save();
            }
            // An answer goes as MarkdownV2; how a turn ended otherwise, as plain text.
            match outcome {
                Ok(o) => match o.run.result {
                    Ok(answer) => bot.deliver(chat, &answer).await,
                    Err(crate::engine::RunError::Cancelled) => bot.say(chat, "Cancelled.").await,
                    Err(e) => {
                        let text = match o.run.summary {
                            Some(summary) => format!("{e}\n\n{summary}"),
                            None => format!("The turn failed: {e}"),
                        };
                        bot.say(chat, &text).await;
                    }
                },
                Err(e) => bot.say(chat, &format!("The turn failed: {e}")).await,
            }
            if let Some(next) = next {
                bot.run_next(chat, next).await;
            }
        });
        self.runs.keep_task(task);
    }

    /// Tool progress: one message, created at the first tool call and edited as calls end.
    pub(super) async fn show_progress(
        self: Arc<Self>,
        chat: i64,
        mut rx: UnboundedReceiver<Progress>,
    ) {
        let mut lines: Vec<String> = Vec::new();
        let mut message_id: Option<i32> = None;
        let mut shown = String::new();
        let mut last_edit = Instant::now() - PROGRESS_EDIT_INTERVAL;
        loop {
            let next = if message_id.is_some() && last_edit.elapsed() < PROGRESS_EDIT_INTERVAL {
                match tokio::time::timeout(PROGRESS_EDIT_INTERVAL, rx.recv()).await {
                    Ok(line) => line.map(Some),
                    Err(_) => Some(None),
                }
            } else {
                rx.recv().await.map(Some)
            };
            let done = match next {
                None | Some(Some(Progress::End)) => true,
                Some(Some(Progress::Line(line))) => {
                    lines.push(line);
                    // Many calls: keep the newest under the cap.
                    while utf16_len(&lines.join("\n")) > MAX_MESSAGE_UNITS - 64 && lines.len() > 1 {
                        lines.remove(0);
                    }
                    false
                }
                Some(None) => false,
            };
            let text = lines.join("\n");
            let due = done || last_edit.elapsed() >= PROGRESS_EDIT_INTERVAL;
            if !text.is_empty() && text != shown && due {
                match message_id {
                    None => message_id = self.send(chat, &text, None, None).await,
                    Some(id) => self.edit(chat, id, &text, None).await,
                }
                shown = text;
                last_edit = Instant::now();
            }
            if done {
                return;
            }
        }
    }
}

/// The session for a chat's turn: its saved one when it still exists, else a new one
/// (origin `telegram`) whose task is the message.
pub(super) fn open_session(
    runtime: &Runtime,
    existing: Option<String>,
    text: &str,
) -> Result<Arc<SessionHandle>, RuntimeError> {
    if let Some(id) = existing {
        match runtime.open_session(&id, HOLDER) {
            Ok(session) => return Ok(session),
            Err(RuntimeError::Session(SessionError::NotFound { .. })) => {}
            Err(e) => return Err(e),
        }
    }
    let (head, warning) = runtime.first_messages_on(Some(outgoing::SURFACE_NOTE));
    if let Some(w) = warning {
        eprintln!("odek telegram: warning: {w}");
    }
    runtime.new_session(text, head, ORIGIN_TELEGRAM, HOLDER)
}

/// One finished tool call for the progress message.
pub(super) struct ToolLine {
    name: String,
    summary: String,
    ok: bool,
    seconds: f64,
}

impl ToolLine {
    fn render(&self) -> String {
        let mark = if self.ok { "✓" } else { "✗" };
        let summary = crate::text::first_line(&self.summary, 60);
        format!(
            "{} {} {summary} {mark} {:.1}s",
            tool_emoji(&self.name),
            self.name,
            self.seconds
        )
    }
}

/// What the progress message hears.
pub(super) enum Progress {
    /// A tool call ended, a fallback or a compaction happened: its line.
    Line(String),
    /// The turn ended: the last edit, then done.
    End,
}

/// The turn's output: finished tool calls go to the progress message.
pub(super) struct ProgressObserver {
    tx: UnboundedSender<Progress>,
}

impl Observer for ProgressObserver {
    fn on_event(&self, event: &EngineEvent<'_>) {
        if let EngineEvent::ToolCallFinished {
            call,
            summary,
            ok,
            duration,
            ..
        } = event
        {
            let line = ToolLine {
                name: call.function.name.clone(),
                summary: summary.to_string(),
                ok: *ok,
                seconds: duration.as_secs_f64(),
            };
            let _ = self.tx.send(Progress::Line(line.render()));
        } else if let Some(notice) = event.notice() {
            let _ = self.tx.send(Progress::Line(format!("⚠️ {notice}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_lines_use_the_emoji_table() {
        let line = ToolLine {
            name: "plan".into(),
            summary: "create".into(),
            ok: true,
            seconds: 0.04,
        };
        assert_eq!(line.render(), "📋 plan create ✓ 0.0s");
        let failed = ToolLine {
            name: "shell".into(),
            summary: "x".repeat(70),
            ok: false,
            seconds: 1.25,
        };
        assert_eq!(
            failed.render(),
            format!("💻 shell {}… ✗ 1.2s", "x".repeat(60))
        );
    }
}
