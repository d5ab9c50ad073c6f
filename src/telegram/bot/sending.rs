//! Messages out: replies split under Telegram's cap, MarkdownV2 with a plain-text retry,
//! sends retried on 429 and network errors, edits.

use super::parts::Bot;
use crate::telegram::api::SEND_ATTEMPTS;
use crate::telegram::api::{BotError, EditMessageText, InlineKeyboard, ParseMode, SendMessage};
use crate::telegram::text::{MAX_MESSAGE_UNITS, split};

impl Bot {
    /// Sends the answer (redacted) in pieces under the cap, MarkdownV2 or plain
    /// ([`BotApi::send_answer`]).
    pub(super) async fn reply(&self, chat: i64, text: &str) {
        let text = self.runtime.redactor().redact(text);
        if let Err(e) = self.api.send_answer(chat, &text).await {
            eprintln!("odek telegram: could not send a reply to chat {chat}: {e}");
        }
    }

    /// Plain text (redacted), split under the cap.
    pub(super) async fn say(&self, chat: i64, text: &str) {
        let text = self.runtime.redactor().redact(text);
        for piece in split(&text, MAX_MESSAGE_UNITS) {
            let _ = self.send(chat, &piece, None, None).await;
        }
    }

    /// Sends one message; errors are reported on stderr. Returns its id.
    pub(super) async fn send(
        &self,
        chat: i64,
        text: &str,
        mode: Option<ParseMode>,
        markup: Option<InlineKeyboard>,
    ) -> Option<i32> {
        match self.send_once_retrying(chat, text, mode, markup).await {
            Ok(id) => Some(id),
            Err(e) => {
                eprintln!("odek telegram: could not send a message to chat {chat}: {e}");
                None
            }
        }
    }

    /// `sendMessage`, retried after 429 (`retry_after`) and network errors.
    pub(super) async fn send_once_retrying(
        &self,
        chat: i64,
        text: &str,
        mode: Option<ParseMode>,
        markup: Option<InlineKeyboard>,
    ) -> Result<i32, BotError> {
        let params = SendMessage {
            chat_id: chat,
            text,
            parse_mode: mode,
            reply_markup: markup.as_ref(),
        };
        self.api.send_retrying(&params).await
    }

    pub(super) async fn edit(
        &self,
        chat: i64,
        message_id: i32,
        text: &str,
        markup: Option<InlineKeyboard>,
    ) {
        let params = EditMessageText {
            chat_id: chat,
            message_id,
            text,
            reply_markup: markup.as_ref(),
        };
        for attempt in 1..=SEND_ATTEMPTS {
            match self.api.edit_message_text(&params).await {
                Ok(_) => return,
                Err(e) => match e.retry_delay() {
                    Some(wait) if attempt < SEND_ATTEMPTS => tokio::time::sleep(wait).await,
                    _ => {
                        eprintln!("odek telegram: could not edit a message in chat {chat}: {e}");
                        return;
                    }
                },
            }
        }
    }
}
