//! `/model`: the chat session's model and the ones it may switch to, numbered as `/sessions`
//! numbers sessions; `/model N` or `/model [PROVIDER:]MODEL` switches it (docs/MODELS.md).

use std::sync::Arc;

use super::parts::{Bot, HOLDER};
use crate::config::ModelRef;

impl Bot {
    /// `/model` with `args`: the list, or a switch of the chat's session.
    pub(super) async fn model(self: &Arc<Self>, chat: i64, args: &str) {
        if self.runs.is_running(chat) {
            return self
                .say(chat, "A turn is running: wait for it, or /stop it.")
                .await;
        }
        let Some(id) = self.chat_session(chat).map(|s| s.session_id) else {
            let configured = &self.runtime.config().model;
            let text = format!(
                "Model: {configured}. Your next message starts a session on it; /model switches the session after that."
            );
            return self.say(chat, &text).await;
        };
        let runtime = self.runtime.clone();
        let opened = tokio::task::spawn_blocking(move || runtime.open_session(&id, HOLDER)).await;
        let session = match opened {
            Ok(Ok(session)) => session,
            Ok(Err(e)) => {
                return self
                    .say(chat, &format!("Cannot open the session: {e}"))
                    .await;
            }
            Err(e) => {
                return self
                    .say(chat, &format!("Cannot open the session: {e}"))
                    .await;
            }
        };
        let args = args.trim();
        let numbered = args.parse::<usize>().ok();
        let choices = if args.is_empty() || numbered.is_some() {
            self.runtime.model_choices(Some(&session)).await
        } else {
            Vec::new()
        };
        if args.is_empty() {
            return self.say(chat, &choices_text(&choices)).await;
        }
        let name = match numbered {
            Some(n) => match n.checked_sub(1).and_then(|i| choices.get(i)) {
                Some(name) => name.clone(),
                None => {
                    let text = format!("No model {n}: /model lists 1 to {}.", choices.len());
                    return self.say(chat, &text).await;
                }
            },
            None => args.to_string(),
        };
        let switched = match ModelRef::parse(&name, self.runtime.config()) {
            Ok(wanted) => self
                .runtime
                .switch_model(&session, &wanted)
                .map_err(|e| e.message_without_paths()),
            Err(e) => Err(e.to_string()),
        };
        let text = match switched {
            Ok(note) => {
                let now = self.runtime.session_model(Some(&session));
                let note = note.map_or_else(String::new, |n| format!(" ({n})"));
                format!("Model: {now}{note}; your next message asks it.")
            }
            Err(e) => format!("Cannot switch: {e}"),
        };
        self.say(chat, &text).await;
    }
}

/// The numbered list of models, the session's first.
fn choices_text(choices: &[String]) -> String {
    let mut out = String::from("Models (the session's first):\n");
    for (i, name) in choices.iter().enumerate() {
        let mark = if i == 0 { "  ← current" } else { "" };
        out.push_str(&format!("{}. {name}{mark}\n", i + 1));
    }
    out.push_str("/model N or /model NAME (PROVIDER:MODEL for another provider) switches.");
    out
}
