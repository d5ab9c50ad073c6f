//! `odek telegram`: the bot. Long polling against `telegram.api_base`, one session per chat
//! through the same runtime, session files and locks as the command line, and the seed's
//! `/plan_status`. See `docs/TELEGRAM.md`.

pub mod api;
mod bot;
mod chats;
mod files;
mod outgoing;
pub mod plan_status;
mod plans;
mod schedules;
mod state;
pub mod text;

pub use bot::{BotParts, TelegramError, run_bot};
