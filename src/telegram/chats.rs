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

/// `/status`'s line of the day: `Today: 1,234 tokens (of 50,000) · $0.0123`; the cost only for
/// turns with a known price, and said so when some had none.
pub fn today_line(day: &super::state::DayUsage, budget: u64) -> String {
    let mut line = format!("Today: {} tokens", thousands(day.tokens));
    if budget > 0 {
        line.push_str(&format!(" (of {})", thousands(budget)));
    }
    if day.cost_microusd > 0 || day.unpriced_turns == 0 {
        let cost = crate::llm::pricing::dollars(day.cost_microusd as f64 / 1_000_000.0);
        line.push_str(&format!(" · {cost}"));
        if day.unpriced_turns > 0 {
            line.push_str(&format!(
                " + {} turn(s) without a known price",
                day.unpriced_turns
            ));
        }
    }
    line
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The polite refusal of a chat that spent its day's tokens.
pub fn budget_spent(used: u64, budget: u64) -> String {
    format!(
        "This chat has used {used} of its {budget} tokens for today, so I'll rest until midnight UTC. Your message was not sent to the model; send it again tomorrow."
    )
}

#[cfg(test)]
mod tests {
    use super::super::state::DayUsage;
    use super::*;

    fn day(tokens: u64, cost_microusd: u64, unpriced_turns: u64) -> DayUsage {
        DayUsage {
            day: "2026-12-04".into(),
            tokens,
            cost_microusd,
            unpriced_turns,
        }
    }

    #[test]
    fn the_day_line_shows_cost_only_where_a_price_was_known() {
        assert_eq!(
            today_line(&day(1_234_567, 12_300, 0), 2_000_000),
            "Today: 1,234,567 tokens (of 2,000,000) · $0.0123"
        );
        assert_eq!(today_line(&day(999, 0, 2), 0), "Today: 999 tokens");
        assert_eq!(
            today_line(&day(1_000, 2_500_000, 1), 0),
            "Today: 1,000 tokens · $2.50 + 1 turn(s) without a known price"
        );
    }
}
