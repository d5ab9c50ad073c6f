//! A chat's sessions for `/sessions` and `/resume N`, and its daily token budget.

use std::collections::HashMap;

use crate::session::{SessionStore, SessionSummary};

/// The chat's sessions that still exist, newest first, at most 10 (the numbers of
/// `/sessions` and `/resume N`).
pub fn chat_sessions(store: &SessionStore, ids: &[String]) -> Vec<SessionSummary> {
    let mut known: HashMap<String, SessionSummary> = store
        .list_recent(usize::MAX)
        .map(|page| {
            page.sessions
                .into_iter()
                .map(|s| (s.id.clone(), s))
                .collect()
        })
        .unwrap_or_default();
    ids.iter()
        .filter_map(|id| known.remove(id))
        .take(10)
        .collect()
}

/// `/sessions`: the chat's sessions, numbered for `/resume N`.
pub fn sessions_text(listed: &[SessionSummary], current: Option<&str>) -> String {
    if listed.is_empty() {
        return "No sessions in this chat yet: your next message starts one.".into();
    }
    let mut out = String::from("Sessions of this chat, newest first:\n");
    for (i, s) in listed.iter().enumerate() {
        let title = s.title.split_whitespace().collect::<Vec<_>>().join(" ");
        let title = crate::text::truncate(&title, 50);
        let when = s
            .updated_at
            .get(..16)
            .unwrap_or(&s.updated_at)
            .replacen('T', " ", 1);
        let mark = if current == Some(s.id.as_str()) {
            "  ← current"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}. {title} — {when} UTC · {} turn(s){mark}\n",
            i + 1,
            s.turns
        ));
    }
    out.push_str("/resume N continues one; /new starts another.");
    out
}

/// The session `/resume N` names.
pub fn nth_session(
    listed: &[SessionSummary],
    n: &str,
) -> Result<SessionSummary, super::error::ChatError> {
    n.trim()
        .parse::<usize>()
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| listed.get(i))
        .cloned()
        .ok_or(match listed.len() {
            0 => super::error::ChatError::NoSessions,
            len => super::error::ChatError::SessionNumber(len),
        })
}

/// Today (UTC) as `YYYY-MM-DD`, the day of the token budget.
pub fn today() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d").to_string()
}

/// The polite refusal of a chat that spent its day's tokens.
pub fn budget_spent(used: u64, budget: u64) -> String {
    format!(
        "This chat has used {used} of its {budget} tokens for today, so I'll rest until midnight UTC. Your message was not sent to the model; send it again tomorrow."
    )
}
