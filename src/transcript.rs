//! Edits to a transcript: what changed in a conversation since it was last saved.
//!
//! The engine records every change it makes to its message list as an [`Edit`] (a message
//! appended, replaced in place, inserted, or a range removed) and hands the edits of one
//! tool batch to the persist callback as a [`TranscriptDelta`]. The session store journals
//! them and replays them with [`apply`], so saving a batch costs the size of the batch, not
//! the size of the history. A neutral module (it depends only on the `llm` and `plan` leaves):
//! the engine produces deltas, the session store consumes them, and neither knows the other.

/// How a leading injection (attached files, AGENTS.md) begins: trimming may drop such a
/// message, never the original task.
pub const INJECTION_PREFIX: &str = "[Injected context:";

use serde::{Deserialize, Serialize};

use crate::llm::Message;
use crate::plan::PlanState;

/// One change to a message list. Indices refer to the list as it stands when the edit is
/// applied, so edits must be applied in the order they were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Edit {
    /// `message` added at the end.
    Append {
        /// The new message.
        message: Message,
    },
    /// The message at `index` replaced by `message`.
    Replace {
        /// Position of the replaced message.
        index: usize,
        /// Its new value.
        message: Message,
    },
    /// `message` inserted at `index`; the messages from there on move up by one.
    Insert {
        /// Position of the new message.
        index: usize,
        /// The new message.
        message: Message,
    },
    /// `messages[start..end]` removed.
    Remove {
        /// First removed position.
        start: usize,
        /// One past the last removed position.
        end: usize,
    },
    /// The whole list replaced (a survival trim rebuilds the transcript from a few messages).
    Reset {
        /// The new list.
        messages: Vec<Message>,
    },
}

/// An edit that does not fit the list it is applied to (a journal that does not belong to
/// its snapshot, or a bug).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transcript edit {op} at {index} does not fit a transcript of {len} messages")]
pub struct EditError {
    /// The edit's name.
    pub op: &'static str,
    /// The position it named.
    pub index: usize,
    /// Length of the list it was applied to.
    pub len: usize,
}

impl crate::error::Classified for EditError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Internal
    }
}

impl Edit {
    /// The edit's name, as written in journals.
    pub fn op(&self) -> &'static str {
        match self {
            Edit::Append { .. } => "append",
            Edit::Replace { .. } => "replace",
            Edit::Insert { .. } => "insert",
            Edit::Remove { .. } => "remove",
            Edit::Reset { .. } => "reset",
        }
    }

    /// Every message the edit carries (for redaction and size accounting).
    pub fn messages_mut(&mut self) -> &mut [Message] {
        match self {
            Edit::Append { message }
            | Edit::Replace { message, .. }
            | Edit::Insert { message, .. } => std::slice::from_mut(message),
            Edit::Reset { messages } => messages,
            Edit::Remove { .. } => &mut [],
        }
    }
}

/// Applies one edit; a list the edit does not fit is left unchanged.
pub fn apply(messages: &mut Vec<Message>, edit: Edit) -> Result<(), EditError> {
    let len = messages.len();
    let misfit = |op, index| EditError { op, index, len };
    match edit {
        Edit::Append { message } => messages.push(message),
        Edit::Replace { index, message } => match messages.get_mut(index) {
            Some(slot) => *slot = message,
            None => return Err(misfit("replace", index)),
        },
        Edit::Insert { index, message } if index <= len => messages.insert(index, message),
        Edit::Insert { index, .. } => return Err(misfit("insert", index)),
        Edit::Remove { start, end } if start <= end && end <= len => {
            messages.drain(start..end);
        }
        Edit::Remove { end, .. } => return Err(misfit("remove", end)),
        Edit::Reset { messages: all } => *messages = all,
    }
    Ok(())
}

/// Applies edits in order; stops at the first that does not fit.
pub fn apply_all(
    messages: &mut Vec<Message>,
    edits: impl IntoIterator<Item = Edit>,
) -> Result<(), EditError> {
    edits.into_iter().try_for_each(|e| apply(messages, e))
}

/// What changed since the previous save: the edits of one tool batch (or of the start or end
/// of a run), the resulting length, and the plan state when its version changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscriptDelta {
    /// The changes, in the order they were made.
    pub edits: Vec<Edit>,
    /// Number of messages once the edits are applied (a consistency check for the saver).
    pub len: usize,
    /// The plan's structured state, when it changed since the previous delta.
    pub plan: Option<PlanState>,
}

impl TranscriptDelta {
    /// True when there is nothing to save.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.plan.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.content.as_str()).collect()
    }

    #[test]
    fn edits_apply_in_order() {
        let mut m = vec![Message::system("s"), Message::user("u")];
        apply_all(
            &mut m,
            [
                Edit::Append {
                    message: Message::assistant("a"),
                },
                Edit::Insert {
                    index: 1,
                    message: Message::system("plan"),
                },
                Edit::Replace {
                    index: 3,
                    message: Message::assistant("b"),
                },
                Edit::Remove { start: 2, end: 3 },
            ],
        )
        .expect("fits");
        assert_eq!(texts(&m), ["s", "plan", "b"]);
        apply(
            &mut m,
            Edit::Reset {
                messages: vec![Message::user("x")],
            },
        )
        .expect("fits");
        assert_eq!(texts(&m), ["x"]);
    }

    #[test]
    fn edits_that_do_not_fit_are_refused_and_change_nothing() {
        let mut m = vec![Message::user("u")];
        let bad = [
            Edit::Replace {
                index: 1,
                message: Message::user("x"),
            },
            Edit::Insert {
                index: 2,
                message: Message::user("x"),
            },
            Edit::Remove { start: 0, end: 2 },
            Edit::Remove { start: 1, end: 0 },
        ];
        for edit in bad {
            let op = edit.op();
            let err = apply(&mut m, edit).expect_err("refused");
            assert_eq!(err.op, op);
            assert_eq!(texts(&m), ["u"]);
        }
    }

    #[test]
    fn edits_round_trip_through_json_with_an_op_tag() {
        let edit = Edit::Replace {
            index: 2,
            message: Message::system("p"),
        };
        let text = serde_json::to_string(&edit).expect("serialises");
        assert!(text.starts_with(r#"{"op":"replace","index":2,"#), "{text}");
        let back: Edit = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, edit);
    }
}
