//! Approvals and `clarify` questions in a chat: the supervisor's frames heard, each request
//! sent with its inline keyboard, the buttons and replies that answer it, the message edited
//! when it is closed.

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::parts::{Bot, display_name};
use super::pending::OptionPress;
use crate::protocol::{
    ApprovalAction, ApprovalReason, ApprovalRequested, ApprovalResolved, ClarifyRequested,
    ClarifyResolved, Event,
};
use crate::runtime::supervisor::Frame;
use crate::telegram::api::{Button, CallbackQuery, InlineKeyboard};
use crate::tools::approval::REMOTE_APPROVAL_TIMEOUT;

impl Bot {
    /// A message in a chat whose turn waits on a question answers it (the oldest, if the
    /// model asked several); true when it did.
    pub(super) async fn answer_question(
        &self,
        chat: i64,
        text: &str,
        name: Option<String>,
    ) -> bool {
        let Some((id, options)) = self.pending.oldest_question(chat, name) else {
            return false;
        };
        let Some(answer) = crate::tools::answer_from_reply(&options, text) else {
            return false;
        };
        if self.supervisor.answer_question(&id, &answer).is_err() {
            // Closed meanwhile (its frame is on the way): the message is an ordinary one.
            self.pending.close_question(&id);
            return false;
        }
        true
    }

    /// The supervisor's frames for this bot's runs: an approval asked sends its keyboard,
    /// an approval closed (answered, expired, cancelled) edits its message to say how.
    /// Frames left when `done` fires are handled before it returns.
    pub(super) async fn hear_frames(
        self: Arc<Self>,
        mut frames: UnboundedReceiver<Arc<Frame>>,
        done: CancellationToken,
    ) {
        loop {
            let frame = tokio::select! {
                frame = frames.recv() => frame,
                () = done.cancelled() => break,
            };
            match frame {
                Some(frame) => self.hear(&frame).await,
                None => return,
            }
        }
        while let Ok(frame) = frames.try_recv() {
            self.hear(&frame).await;
        }
    }

    /// One frame: a request needs the run's chat; a resolution finds its message by its
    /// own id (the run may have ended, and left `run_chats`, by then).
    pub(super) async fn hear(&self, frame: &Frame) {
        match &frame.event {
            Event::ApprovalResolved(closed) => self.approval_closed(closed).await,
            Event::ClarifyResolved(closed) => self.question_closed(closed).await,
            Event::ApprovalRequested(asked) => {
                if let Some(chat) = self.chat_of(&frame.run_id) {
                    self.approval_asked(chat, asked).await;
                }
            }
            Event::ClarifyRequested(asked) => {
                if let Some(chat) = self.chat_of(&frame.run_id) {
                    self.question_asked(chat, asked).await;
                }
            }
            _ => {}
        }
    }

    /// The chat of one of this bot's runs.
    pub(super) fn chat_of(&self, run_id: &str) -> Option<i64> {
        self.runs.chat_of(run_id)
    }

    pub(super) async fn approval_asked(&self, chat: i64, asked: &ApprovalRequested) {
        let mut text = String::from("⚠️ Approval needed");
        for item in &asked.items {
            text.push_str(&format!(
                "\n{} · {}: {}",
                item.class, item.tool, item.resource
            ));
        }
        self.pending
            .add_approval(&asked.approval_id, chat, text.clone());
        let keyboard = approval_keyboard(&asked.approval_id);
        let sent = self.send(chat, &text, None, Some(keyboard)).await;
        self.pending.approval_sent(&asked.approval_id, sent);
    }

    pub(super) async fn approval_closed(&self, closed: &ApprovalResolved) {
        let pending = self.pending.close_approval(&closed.approval_id);
        let Some(p) = pending else { return };
        let Some(mid) = p.message_id else { return };
        let why = match (closed.reason, closed.action) {
            (ApprovalReason::Answered, action) => {
                let word = if action == ApprovalAction::Approve {
                    "approved"
                } else {
                    "denied"
                };
                match &p.answered_by {
                    Some(name) => format!("{word} by {name}"),
                    None => word.to_string(),
                }
            }
            (ApprovalReason::Expired, _) => format!(
                "expired: no answer in {}s, so not run",
                REMOTE_APPROVAL_TIMEOUT.as_secs()
            ),
            (ApprovalReason::Cancelled, _) => "cancelled: the turn was stopped".into(),
        };
        self.edit(p.chat, mid, &format!("{}\n→ {why}", p.text), None)
            .await;
    }

    pub(super) async fn question_asked(&self, chat: i64, asked: &ClarifyRequested) {
        let mut text = format!("❓ {}", asked.question);
        for (i, option) in asked.options.iter().enumerate() {
            text.push_str(&format!("\n{}. {option}", i + 1));
        }
        text.push_str(if asked.options.is_empty() {
            "\n(reply with your answer)"
        } else {
            "\n(tap an option or reply in your own words)"
        });
        self.pending.add_question(
            &asked.question_id,
            chat,
            text.clone(),
            asked.options.clone(),
        );
        let keyboard = question_keyboard(&asked.question_id, &asked.options);
        let sent = self.send(chat, &text, None, keyboard).await;
        self.pending.question_sent(&asked.question_id, sent);
    }

    pub(super) async fn question_closed(&self, closed: &ClarifyResolved) {
        let pending = self.pending.close_question(&closed.question_id);
        let Some(q) = pending else { return };
        let Some(mid) = q.message_id else { return };
        let why = match closed.reason {
            ApprovalReason::Answered => match &q.answered_by {
                Some(name) => format!("answered by {name}"),
                None => "answered".to_string(),
            },
            ApprovalReason::Expired => format!(
                "no answer in {} minutes: the agent decided on its own",
                crate::tools::approval::REMOTE_QUESTION_TIMEOUT.as_secs() / 60
            ),
            ApprovalReason::Cancelled => "cancelled: the turn was stopped".into(),
        };
        self.edit(q.chat, mid, &format!("{}\n→ {why}", q.text), None)
            .await;
    }

    /// An option button of a question.
    pub(super) async fn on_question_button(
        &self,
        query: &CallbackQuery,
        id: &str,
        index: usize,
    ) -> String {
        let chat = query.message.as_ref().map(|m| m.chat.id);
        if !chat.is_some_and(|c| self.allowed(c, Some(query.from.id))) {
            return "You may not answer this question.".to_string();
        }
        let option = match self
            .pending
            .press_option(id, chat, display_name(&query.from), index)
        {
            OptionPress::OtherChat => return "Not this chat's question.".to_string(),
            OptionPress::Option(option) => option,
        };
        let Some(option) = option else {
            return "This question has already ended.".to_string();
        };
        match self.supervisor.answer_question(id, &option) {
            Ok(()) => format!("answered: {option}"),
            Err(_) => "This question has already ended.".to_string(),
        }
    }

    /// A button of an approval keyboard.
    pub(super) async fn on_callback(&self, query: CallbackQuery) {
        if let Some((id, index)) = query.data.as_deref().and_then(parse_question_callback) {
            let text = self.on_question_button(&query, &id, index).await;
            if let Err(e) = self.api.answer_callback_query(&query.id, &text).await {
                eprintln!("odek telegram: could not answer a button press: {e}");
            }
            return;
        }
        let user = query.from.id;
        let chat = query.message.as_ref().map(|m| m.chat.id);
        let parsed = query.data.as_deref().and_then(parse_callback);
        let allowed = chat.is_some_and(|c| self.allowed(c, Some(user)));
        let name = display_name(&query.from);
        let text = match parsed {
            Some((id, approve)) if allowed => {
                if !self.pending.press_approval(&id, chat, &name) {
                    "Not this chat's approval.".to_string()
                } else {
                    match self.supervisor.answer(&id, approve) {
                        Ok(()) if approve => "approved".to_string(),
                        Ok(()) => "denied".to_string(),
                        Err(_) => "This approval has already ended.".to_string(),
                    }
                }
            }
            Some(_) => "You may not answer this approval.".to_string(),
            None => "Unknown button.".to_string(),
        };
        if let Err(e) = self.api.answer_callback_query(&query.id, &text).await {
            eprintln!("odek telegram: could not answer a button press: {e}");
        }
    }
}

pub(super) fn approval_keyboard(id: &str) -> InlineKeyboard {
    let button = |text: &str, data: String| Button {
        text: text.to_string(),
        callback_data: data,
    };
    InlineKeyboard {
        inline_keyboard: vec![vec![
            button("✅ Approve", format!("ap:{id}:y")),
            button("⛔ Deny", format!("ap:{id}:n")),
        ]],
    }
}

/// `ap:<id>:y|n` → (id, approve).
pub(super) fn parse_callback(data: &str) -> Option<(String, bool)> {
    let rest = data.strip_prefix("ap:")?;
    let (id, answer) = rest.rsplit_once(':')?;
    match answer {
        "y" => Some((id.to_string(), true)),
        "n" => Some((id.to_string(), false)),
        _ => None,
    }
}

/// A question's options as buttons, one per row (`cq:<id>:<index>`); none without options.
pub(super) fn question_keyboard(id: &str, options: &[String]) -> Option<InlineKeyboard> {
    if options.is_empty() {
        return None;
    }
    let rows = options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            vec![Button {
                text: crate::text::fit(option, 60).into_owned(),
                callback_data: format!("cq:{id}:{i}"),
            }]
        })
        .collect();
    Some(InlineKeyboard {
        inline_keyboard: rows,
    })
}

/// `cq:<id>:<index>` → (id, index).
pub(super) fn parse_question_callback(data: &str) -> Option<(String, usize)> {
    let rest = data.strip_prefix("cq:")?;
    let (id, index) = rest.rsplit_once(':')?;
    Some((id.to_string(), index.parse().ok()?))
}
