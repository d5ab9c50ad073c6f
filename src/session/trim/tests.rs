//! Trimming's unit tests: the leading system messages kept, tool-call groups kept whole and
//! never orphaned, by count and by size.

use super::*;
use crate::llm::ToolCall;
use proptest::prelude::*;

fn assistant_calling(ids: &[&str]) -> Message {
    let mut m = Message::assistant("");
    m.tool_calls = ids
        .iter()
        .map(|id| ToolCall::new(*id, "shell", "{}"))
        .collect();
    m
}

fn roles(messages: &[Message]) -> Vec<&'static str> {
    messages.iter().map(|m| m.role.as_str()).collect()
}

#[test]
fn trim_keeps_the_system_message_and_the_latest_messages() {
    let messages = vec![
        Message::system("s"),
        Message::user("u1"),
        Message::assistant("a1"),
        Message::user("u2"),
        Message::assistant("a2"),
    ];
    let kept = trim_transcript(&messages, 3);
    assert_eq!(
        kept,
        vec![
            messages[0].clone(),
            messages[3].clone(),
            messages[4].clone()
        ]
    );
    assert_eq!(trim_transcript(&messages, 10), messages);
}

#[test]
fn trim_never_starts_the_tail_with_a_tool_result() {
    let messages = vec![
        Message::system("s"),
        Message::user("u1"),
        assistant_calling(&["c1", "c2"]),
        Message::tool_result("c1", "shell", "r1"),
        Message::tool_result("c2", "shell", "r2"),
        Message::assistant("done"),
    ];
    // The last 3 would start at r1: the tail moves forward past both results.
    let kept = trim_transcript(&messages, 4);
    assert_eq!(roles(&kept), ["system", "assistant"]);
    assert_eq!(kept[1].content, "done");
    let whole_group = trim_transcript(&messages, 5);
    assert_eq!(
        roles(&whole_group),
        ["system", "assistant", "tool", "tool", "assistant"]
    );
}

#[test]
fn trim_without_system_message_keeps_only_the_tail() {
    let messages = vec![
        Message::user("u1"),
        Message::assistant("a1"),
        Message::user("u2"),
        Message::assistant("a2"),
    ];
    assert_eq!(roles(&trim_transcript(&messages, 2)), ["user", "assistant"]);
    assert_eq!(trim_transcript(&messages, 2)[0].content, "u2");
}

#[test]
fn trim_keeps_the_whole_leading_system_run() {
    let messages = vec![
        Message::system("prompt"),
        Message::system("[Current plan: …]"),
        Message::user("u1"),
        Message::assistant("a1"),
        Message::user("u2"),
    ];
    let kept = trim_transcript(&messages, 2);
    assert_eq!(roles(&kept), ["system", "system", "user"]);
    assert_eq!(kept[2].content, "u2");
}

#[test]
fn orphaned_results_are_dropped() {
    let messages = vec![
        Message::system("s"),
        Message::tool_result("gone", "shell", "orphan"),
        assistant_calling(&["c1"]),
        Message::tool_result("c1", "shell", "ok"),
        Message::tool_result("c9", "shell", "unknown call"),
    ];
    let kept = drop_orphan_tool_results(messages);
    assert_eq!(roles(&kept), ["system", "assistant", "tool"]);
}

#[test]
fn size_cut_drops_whole_groups_oldest_first() {
    let messages = vec![
        Message::system("s"),
        Message::user("u1"),
        assistant_calling(&["c1"]),
        Message::tool_result("c1", "shell", "big"),
        Message::user("u2"),
    ];
    let sizes = [10, 10, 10, 100, 10];
    assert_eq!(
        size_cut(&messages, &sizes, 5),
        2,
        "the first group is enough"
    );
    assert_eq!(
        size_cut(&messages, &sizes, 20),
        4,
        "the call goes with its result"
    );
    assert_eq!(
        size_cut(&messages, &sizes, 10_000),
        5,
        "everything after the head"
    );
    let trimmed = without_oldest_groups(messages, 2);
    assert_eq!(roles(&trimmed), ["system", "assistant", "tool", "user"]);
}

/// One building block of a random valid transcript.
#[derive(Debug, Clone)]
enum Block {
    User,
    Assistant,
    Calls { count: usize, answered: usize },
    Hint,
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        Just(Block::User),
        Just(Block::Assistant),
        (1usize..4, 0usize..4).prop_map(|(count, answered)| Block::Calls {
            count,
            answered: answered.min(count)
        }),
        Just(Block::Hint),
    ]
}

fn transcript(system: bool, blocks: &[Block]) -> Vec<Message> {
    let mut messages = Vec::new();
    if system {
        messages.push(Message::system("prompt"));
    }
    for (n, block) in blocks.iter().enumerate() {
        match block {
            Block::User => messages.push(Message::user(format!("u{n}"))),
            Block::Assistant => messages.push(Message::assistant(format!("a{n}"))),
            Block::Hint => messages.push(Message::system(format!("hint{n}"))),
            Block::Calls { count, answered } => {
                let ids: Vec<String> = (0..*count).map(|c| format!("call_{n}_{c}")).collect();
                let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                messages.push(assistant_calling(&id_refs));
                for id in ids.iter().take(*answered) {
                    messages.push(Message::tool_result(id.clone(), "shell", "out"));
                }
            }
        }
    }
    messages
}

fn every_result_has_an_earlier_call(messages: &[Message]) -> bool {
    messages.iter().enumerate().all(|(at, m)| {
        m.role != Role::Tool
            || messages[..at].iter().any(|earlier| {
                earlier.role == Role::Assistant
                    && earlier
                        .tool_calls
                        .iter()
                        .any(|c| Some(c.id.as_str()) == m.tool_call_id.as_deref())
            })
    })
}

proptest! {
    #[test]
    fn trim_never_orphans_a_tool_result(
        system in any::<bool>(),
        blocks in prop::collection::vec(block(), 0..30),
        keep in 2usize..40,
    ) {
        let messages = transcript(system, &blocks);
        let kept = trim_transcript(&messages, keep);
        prop_assert!(every_result_has_an_earlier_call(&kept));
        let head = protected_head_len(&messages);
        prop_assert!(kept.len() <= keep.max(head + 1) || kept.len() == messages.len());
        prop_assert_eq!(&kept[..head], &messages[..head]);
        let tail = &kept[head..];
        prop_assert!(tail.first().is_none_or(starts_kept_tail));
        // The kept tail is the original's suffix.
        prop_assert!(messages.ends_with(tail));
    }

    #[test]
    fn size_trimming_never_orphans_a_tool_result(
        blocks in prop::collection::vec(block(), 0..30),
        excess in 0u64..400,
    ) {
        let messages = transcript(true, &blocks);
        let sizes: Vec<u64> = messages.iter().map(|m| 5 + m.content.len() as u64).collect();
        let cut = size_cut(&messages, &sizes, excess);
        let trimmed = without_oldest_groups(messages.clone(), cut);
        prop_assert!(every_result_has_an_earlier_call(&trimmed));
        let head = protected_head_len(&messages);
        prop_assert_eq!(&trimmed[..head], &messages[..head]);
        prop_assert!(messages.ends_with(&trimmed[head..]));
        let tail = &trimmed[head..];
        prop_assert!(tail.first().is_none_or(starts_kept_tail));
    }
}
