//! `/compact [what to keep]`: the chat session's conversation before its last turns
//! summarised by the model (docs/COMPACTION.md).

use std::sync::Arc;

use super::parts::{Bot, HOLDER};

impl Bot {
    /// `/compact` with `args`, what the summary must keep: refused while a turn runs or
    /// before the chat has a session; otherwise the outcome's line.
    pub(super) async fn compact(self: &Arc<Self>, chat: i64, args: &str) {
        if self.runs.is_running(chat) {
            return self
                .say(chat, "A turn is running: wait for it, or /stop it.")
                .await;
        }
        let Some(id) = self.chat_session(chat).map(|s| s.session_id) else {
            return self
                .say(chat, "Nothing to compact: this chat has no session yet.")
                .await;
        };
        let runtime = self.runtime.clone();
        let opened = tokio::task::spawn_blocking(move || runtime.open_session(&id, HOLDER)).await;
        let session = match opened {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => {
                let text = format!("Cannot open the session: {}", e.message_without_paths());
                return self.say(chat, &text).await;
            }
            Err(e) => {
                return self
                    .say(chat, &format!("Cannot open the session: {e}"))
                    .await;
            }
        };
        self.say(chat, "Summarising the conversation…").await;
        let focus = Some(args.trim()).filter(|a| !a.is_empty());
        let cancel = tokio_util::sync::CancellationToken::new();
        let text = match self.runtime.compact(&session, focus, &cancel).await {
            Ok(outcome) => outcome.line().trim_start_matches("odek: ").to_string(),
            Err(e) => format!("Not compacted: {}", e.message_without_paths()),
        };
        self.say(chat, &text).await;
    }
}
