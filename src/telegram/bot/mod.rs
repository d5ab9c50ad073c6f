//! The bot: long polling with the offset saved before each update is handled, the
//! allowlist, one session per chat through the shared runtime (same files and locks as the
//! CLI), the commands, replies under Telegram's cap with a plain-text retry, tool progress in
//! one message edited in place, and approvals as inline keyboards.
//!
//! This file is the folder's face: the bot and its parts are `parts.rs`, polling and routing
//! `polling.rs`, the chats' running turns `runs.rs`, the approvals and questions waiting
//! `pending.rs`.

mod approvals;
mod attachments;
mod commands;
mod compact;
mod custom;
mod model;
mod parts;
mod pending;
mod polling;
mod runs;
mod sending;
mod turns;

pub use parts::BotParts;
pub use polling::run_bot;

/// Fuzzing entry: `data` as a `getUpdates` answer, decoded, and each message's command and
/// each button's data parsed, as the bot does.
#[cfg(any(fuzzing, test))]
pub fn fuzz_updates(data: &[u8]) {
    let Ok(updates) = crate::telegram::api::decode_updates(data) else {
        return;
    };
    for update in updates {
        if let Some(message) = &update.message {
            let text = message.text.as_deref().or(message.caption.as_deref());
            if let Some(text) = text {
                let _ = commands::command(text);
                let _ = crate::telegram::text::escape(text);
            }
            if let Some(from) = &message.from {
                let _ = parts::display_name(from);
            }
        }
        if let Some(data) = update
            .callback_query
            .as_ref()
            .and_then(|q| q.data.as_deref())
        {
            let _ = approvals::parse_callback(data);
            let _ = approvals::parse_question_callback(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::approvals::{parse_callback, parse_question_callback, question_keyboard};
    use super::commands::command;

    #[test]
    fn commands_and_callbacks_parse() {
        assert_eq!(command("/plan_status"), Some("plan_status"));
        assert_eq!(command("/plan_status@odek_bot extra"), Some("plan_status"));
        assert_eq!(command("  /new"), Some("new"));
        assert_eq!(command("hello /new"), None);
        assert_eq!(command("/"), None);
        assert_eq!(parse_callback("ap:a7:y"), Some(("a7".into(), true)));
        assert_eq!(parse_callback("ap:a7:n"), Some(("a7".into(), false)));
        assert_eq!(parse_callback("ap:a7:x"), None);
        assert_eq!(parse_callback("zz"), None);
        assert_eq!(parse_question_callback("cq:q1f:2"), Some(("q1f".into(), 2)));
        assert_eq!(parse_question_callback("cq:q1f:x"), None);
        assert_eq!(parse_question_callback("ap:a7:y"), None);
        let keyboard = question_keyboard("q1", &["red".into(), "blue".into()]).expect("buttons");
        assert_eq!(keyboard.inline_keyboard.len(), 2);
        assert_eq!(keyboard.inline_keyboard[1][0].callback_data, "cq:q1:1");
        assert!(question_keyboard("q1", &[]).is_none());
    }
}
