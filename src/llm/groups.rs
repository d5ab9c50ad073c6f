//! How a transcript may be cut, defined once beside [`Message`]: its message groups and its
//! protected head. Every trim keeps both — the context's before a model call
//! (`engine::context`) and the session store's cap on a saved transcript (`session::trim`).

use std::ops::Range;

use super::types::{Message, Role};

/// The message groups of `messages[from..]`, oldest first, as index ranges: an assistant
/// message with tool calls together with the tool results right after it, or any other
/// message alone. Dropping whole groups never separates a tool result from the call it
/// answers.
pub fn message_groups(messages: &[Message], from: usize) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut start = from;
    while start < messages.len() {
        let mut end = start + 1;
        if messages[start].has_tool_calls() {
            while end < messages.len() && messages[end].role == Role::Tool {
                end += 1;
            }
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// The protected head — the beginning of a transcript that trimming never drops — as a
/// caller's knowledge of the layout shapes it. The rule is one: the leading system messages
/// up to the first droppable one; then, when none ended them and the caller keeps the task,
/// the task (the user message right after them) and the system messages after it that the
/// caller pins.
#[derive(Debug, Clone, Copy)]
pub struct HeadRule {
    /// A leading system message that ends the head: droppable context (an injection).
    pub droppable: fn(&Message) -> bool,
    /// With `Some`, the task is in the head, and so are the system messages right after it
    /// that this accepts (the plan, the digest).
    pub pinned_after_task: Option<fn(&Message) -> bool>,
}

/// No leading system message is droppable.
fn never(_: &Message) -> bool {
    false
}

impl HeadRule {
    /// Every leading system message and nothing after them: for a transcript whose layout
    /// is not known beyond roles (a saved session's cap keeps its latest turns, not its task).
    pub const LEADING_SYSTEM: HeadRule = HeadRule {
        droppable: never,
        pinned_after_task: None,
    };

    /// The number of messages at the start of `messages` that make up its protected head.
    pub fn len_of(self, messages: &[Message]) -> usize {
        let system = |m: &Message| m.role == Role::System && !(self.droppable)(m);
        let mut at = messages.iter().take_while(|m| system(m)).count();
        let Some(pinned) = self.pinned_after_task else {
            return at;
        };
        if messages.get(at).is_some_and(|m| (self.droppable)(m)) {
            return at;
        }
        if messages.get(at).is_some_and(|m| m.role == Role::User) {
            at += 1;
        }
        while messages.get(at).is_some_and(pinned) {
            at += 1;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn calling(ids: &[&str]) -> Message {
        let mut m = Message::assistant("");
        m.tool_calls = ids
            .iter()
            .map(|id| ToolCall::new(*id, "shell", "{}"))
            .collect();
        m
    }

    fn injection(m: &Message) -> bool {
        m.content.starts_with("[inj")
    }

    fn plan(m: &Message) -> bool {
        m.role == Role::System && m.content.starts_with("[plan")
    }

    const WITH_TASK: HeadRule = HeadRule {
        droppable: injection,
        pinned_after_task: Some(plan),
    };

    #[test]
    fn a_call_and_its_results_are_one_group_and_everything_else_stands_alone() {
        let messages = vec![
            Message::system("s"),
            Message::user("u"),
            calling(&["a", "b"]),
            Message::tool_result("a", "shell", "ra"),
            Message::tool_result("b", "shell", "rb"),
            Message::system("hint"),
            Message::assistant("done"),
            Message::tool_result("x", "shell", "orphan"),
        ];
        assert_eq!(
            message_groups(&messages, 0),
            [0..1, 1..2, 2..5, 5..6, 6..7, 7..8]
        );
        assert_eq!(message_groups(&messages, 3), [3..4, 4..5, 5..6, 6..7, 7..8]);
        assert!(message_groups(&messages, 8).is_empty());
    }

    #[test]
    fn the_head_is_the_leading_system_run_up_to_a_droppable_one() {
        let messages = vec![
            Message::system("prompt"),
            Message::system("[plan v1"),
            Message::system("[injected files"),
            Message::user("the task"),
        ];
        assert_eq!(HeadRule::LEADING_SYSTEM.len_of(&messages), 3);
        assert_eq!(WITH_TASK.len_of(&messages), 2, "the injection ends it");
    }

    #[test]
    fn without_a_droppable_one_the_task_and_what_is_pinned_after_it_are_in() {
        let messages = vec![
            Message::system("prompt"),
            Message::user("the task"),
            Message::system("[plan v1"),
            Message::system("a hint"),
            Message::assistant("a"),
        ];
        assert_eq!(HeadRule::LEADING_SYSTEM.len_of(&messages), 1);
        assert_eq!(WITH_TASK.len_of(&messages), 3);
        assert_eq!(WITH_TASK.len_of(&messages[..1]), 1);
        assert_eq!(WITH_TASK.len_of(&[]), 0);
        assert_eq!(WITH_TASK.len_of(&messages[1..]), 2, "no system prompt");
    }
}
