//! `odek telegram`: the bot. Long polling against `telegram.api_base`, one session per chat
//! through the same runtime, session files and locks as the command line, and the seed's
//! `/plan_status`. See `docs/TELEGRAM.md`.

pub mod api;
mod bot;
mod chats;
mod error;
mod files;
mod outgoing;
pub mod plan_status;
mod plans;
mod schedules;
mod state;
pub mod text;

#[cfg(any(fuzzing, test))]
pub use bot::fuzz_updates;
pub use bot::{BotParts, run_bot};
pub use error::{ChatError, SendError, TelegramError};

/// The chat service of scheduled answers delivered to Telegram: the Bot API of
/// `telegram.bot_token`, when one is set.
pub fn chat_delivery(
    config: &crate::config::Config,
) -> Option<std::sync::Arc<dyn crate::schedule::deliver::ChatDelivery>> {
    let tg = &config.telegram;
    let token = tg.bot_token.as_deref()?;
    let api = api::BotApi::new(
        &tg.api_base,
        token,
        std::time::Duration::from_secs(tg.poll_timeout),
    )
    .ok()?;
    Some(std::sync::Arc::new(api))
}
