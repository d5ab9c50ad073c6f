//! Transcript surgery that keeps message groups whole: `trim` and the write-path size cap.
//!
//! Message groups and the protected head are `llm`'s (`llm::message_groups`,
//! `llm::HeadRule`). A saved transcript's layout is known here only by roles, so its head is
//! [`HeadRule::LEADING_SYSTEM`] — the leading system messages (system prompt, and the digest,
//! plan and injections that sit right after it) — and a cap may drop the task. A cut falls
//! only before a user or assistant message: a system hint or a tool result stays with the
//! group before it, so a kept tail never starts with one.

use std::collections::HashSet;

use crate::llm::{HeadRule, Message, Role, message_groups};

/// The length of a saved transcript's protected head: its leading system messages.
pub(crate) fn protected_head_len(messages: &[Message]) -> usize {
    HeadRule::LEADING_SYSTEM.len_of(messages)
}

/// True for a message a kept tail may start with (a cut may fall right before it).
fn starts_kept_tail(message: &Message) -> bool {
    matches!(message.role, Role::User | Role::Assistant)
}

/// Keeps the protected head and the most recent messages, at most `keep` in all, starting the
/// kept tail at a group boundary; may keep fewer than `keep` to respect groups. When the head
/// alone reaches `keep`, the latest message is still kept if it starts a group. Tool results
/// whose call is not in an earlier kept assistant message are dropped, so the result is
/// always a valid transcript. `keep` below 2 is treated as 2 (the store refuses it earlier).
pub fn trim_transcript(messages: &[Message], keep: usize) -> Vec<Message> {
    let keep = keep.max(2);
    if messages.len() <= keep {
        return messages.to_vec();
    }
    let head = protected_head_len(messages);
    let tail_budget = keep.saturating_sub(head).max(1);
    let mut start = messages.len().saturating_sub(tail_budget).max(head);
    while start < messages.len() && !starts_kept_tail(&messages[start]) {
        start += 1;
    }
    let kept = messages[..head].iter().chain(&messages[start..]).cloned();
    drop_orphan_tool_results(kept.collect())
}

/// Removes tool results whose `tool_call_id` matches no call of an earlier message in the
/// list; a result without an id is an orphan too.
pub(crate) fn drop_orphan_tool_results(messages: Vec<Message>) -> Vec<Message> {
    let mut known_calls: HashSet<String> = HashSet::new();
    let mut kept = Vec::with_capacity(messages.len());
    for message in messages {
        if message.role == Role::Tool {
            let answered = message
                .tool_call_id
                .as_deref()
                .is_some_and(|id| known_calls.contains(id));
            if !answered {
                continue;
            }
        }
        if message.role == Role::Assistant {
            known_calls.extend(message.tool_calls.iter().map(|c| c.id.clone()));
        }
        kept.push(message);
    }
    kept
}

/// The end of the oldest run of whole groups after the head whose removal saves at least
/// `excess` bytes, given each message's serialized size (a removed message also saves its
/// separating comma); the run ends before a user or assistant message (or at the end).
/// Returns `messages.len()` when even removing every group is not enough; the caller checks
/// the final size.
pub(crate) fn size_cut(messages: &[Message], message_sizes: &[u64], excess: u64) -> usize {
    let head = protected_head_len(messages);
    let mut saved = 0u64;
    for group in message_groups(messages, head) {
        let end = group.end;
        saved += group
            .map(|at| message_sizes.get(at).copied().unwrap_or(0) + 1)
            .sum::<u64>();
        if saved >= excess && messages.get(end).is_none_or(starts_kept_tail) {
            return end;
        }
    }
    messages.len()
}

/// `messages` without `messages[head..cut]`, then without any orphaned tool result.
pub(crate) fn without_oldest_groups(messages: Vec<Message>, cut: usize) -> Vec<Message> {
    let head = protected_head_len(&messages);
    let cut = cut.clamp(head, messages.len());
    let mut messages = messages;
    messages.drain(head..cut);
    drop_orphan_tool_results(messages)
}

#[cfg(test)]
mod tests;
