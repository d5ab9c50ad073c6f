//! What the bot's chats are asked and have not answered yet: approvals waiting for a button,
//! `clarify` questions waiting for a button or a reply — each with its chat, its message once
//! sent, its text and who answered, under one lock.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// An approval waiting for a button: its chat, its message once sent, its text, and who
/// pressed a button.
pub(super) struct PendingApproval {
    pub(super) chat: i64,
    pub(super) message_id: Option<i32>,
    pub(super) text: String,
    pub(super) answered_by: Option<String>,
}

/// A `clarify` question waiting for a button or a reply: its chat, its message once sent,
/// its text and options, and who answered.
pub(super) struct PendingQuestion {
    pub(super) chat: i64,
    pub(super) message_id: Option<i32>,
    pub(super) text: String,
    pub(super) options: Vec<String>,
    pub(super) answered_by: Option<String>,
}

/// What a press of a question's option button found.
pub(super) enum OptionPress {
    /// The question belongs to another chat.
    OtherChat,
    /// The option pressed (recorded as answered by the presser), or `None` when the question
    /// or the option is not there.
    Option(Option<String>),
}

/// The approvals and questions waiting, by their ids.
#[derive(Default)]
pub(super) struct Pending {
    inner: Mutex<Asked>,
}

#[derive(Default)]
struct Asked {
    approvals: HashMap<String, PendingApproval>,
    questions: HashMap<String, PendingQuestion>,
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, Asked> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An approval asked in `chat`, its message not sent yet.
    pub(super) fn add_approval(&self, id: &str, chat: i64, text: String) {
        self.lock().approvals.insert(
            id.to_string(),
            PendingApproval {
                chat,
                message_id: None,
                text,
                answered_by: None,
            },
        );
    }

    /// The approval's message was sent (`None`: it could not be).
    pub(super) fn approval_sent(&self, id: &str, message_id: Option<i32>) {
        if let Some(p) = self.lock().approvals.get_mut(id) {
            p.message_id = message_id;
        }
    }

    /// The approval closed: it is no longer waiting.
    pub(super) fn close_approval(&self, id: &str) -> Option<PendingApproval> {
        self.lock().approvals.remove(id)
    }

    /// A button of approval `id` pressed in `chat` by `name`: false when the approval
    /// waits in another chat (the press is refused); otherwise the presser is recorded when
    /// it waits here, and the press goes on to the supervisor.
    pub(super) fn press_approval(&self, id: &str, chat: Option<i64>, name: &str) -> bool {
        let mut asked = self.lock();
        match asked.approvals.get_mut(id) {
            Some(p) if Some(p.chat) == chat => {
                p.answered_by = Some(name.to_string());
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    /// A question asked in `chat`, its message not sent yet.
    pub(super) fn add_question(&self, id: &str, chat: i64, text: String, options: Vec<String>) {
        self.lock().questions.insert(
            id.to_string(),
            PendingQuestion {
                chat,
                message_id: None,
                text,
                options,
                answered_by: None,
            },
        );
    }

    /// The question's message was sent (`None`: it could not be).
    pub(super) fn question_sent(&self, id: &str, message_id: Option<i32>) {
        if let Some(q) = self.lock().questions.get_mut(id) {
            q.message_id = message_id;
        }
    }

    /// The question closed: it is no longer waiting.
    pub(super) fn close_question(&self, id: &str) -> Option<PendingQuestion> {
        self.lock().questions.remove(id)
    }

    /// The chat's oldest waiting question (by its message), recorded as answered by `name`:
    /// its id and options.
    pub(super) fn oldest_question(
        &self,
        chat: i64,
        name: Option<String>,
    ) -> Option<(String, Vec<String>)> {
        let mut asked = self.lock();
        let oldest = asked
            .questions
            .iter_mut()
            .filter(|(_, q)| q.chat == chat)
            .min_by_key(|(_, q)| q.message_id.unwrap_or(i32::MAX));
        oldest.map(|(id, q)| {
            q.answered_by = name;
            (id.clone(), q.options.clone())
        })
    }

    /// Option `index` of question `id` pressed in `chat` by `name`.
    pub(super) fn press_option(
        &self,
        id: &str,
        chat: Option<i64>,
        name: String,
        index: usize,
    ) -> OptionPress {
        let mut asked = self.lock();
        match asked.questions.get_mut(id) {
            Some(q) if Some(q.chat) != chat => OptionPress::OtherChat,
            Some(q) => {
                q.answered_by = Some(name);
                OptionPress::Option(q.options.get(index).cloned())
            }
            None => OptionPress::Option(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_press_from_another_chat_is_refused_and_records_nobody() {
        let pending = Pending::default();
        pending.add_approval("a1", 7, "⚠️".into());
        assert!(!pending.press_approval("a1", Some(8), "eve"));
        assert!(pending.press_approval("a1", Some(7), "ann"));
        assert!(pending.press_approval("gone", Some(7), "ann"));
        let closed = pending.close_approval("a1").expect("pending");
        assert_eq!(closed.answered_by.as_deref(), Some("ann"));
        assert!(pending.close_approval("a1").is_none());
    }

    #[test]
    fn the_oldest_question_of_the_chat_is_answered_first() {
        let pending = Pending::default();
        pending.add_question("q2", 7, "b".into(), vec![]);
        pending.add_question("q1", 7, "a".into(), vec!["x".into()]);
        pending.add_question("q3", 8, "c".into(), vec![]);
        pending.question_sent("q1", Some(10));
        pending.question_sent("q2", Some(11));
        let (id, options) = pending.oldest_question(7, Some("ann".into())).expect("one");
        assert_eq!((id.as_str(), options), ("q1", vec!["x".to_string()]));
        assert!(matches!(
            pending.press_option("q3", Some(7), "ann".into(), 0),
            OptionPress::OtherChat
        ));
        assert!(matches!(
            pending.press_option("q1", Some(7), "ann".into(), 0),
            OptionPress::Option(Some(ref o)) if o == "x"
        ));
    }
}
