//! The bot and what it is made of: the parts it is started with, its state in parts that
//! each keep their own lock, and the small helpers every file of the bot uses.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::pending::Pending;
use super::runs::ChatRuns;
use crate::config::TelegramConfig;
use crate::runtime::{Runtime, Supervisor};
use crate::telegram::api::{BotApi, User};
use crate::telegram::state::StateFile;

/// The lock holder name of the bot's turns.
pub(super) const HOLDER: &str = "odek telegram";

/// The progress message is edited at most this often (plus once at the end).
pub(super) const PROGRESS_EDIT_INTERVAL: Duration = Duration::from_millis(800);

/// Everything the bot needs: the runtime shared with every surface and its settings.
pub struct BotParts {
    /// The runtime (configuration, model client, tools, session store, events).
    pub runtime: Arc<Runtime>,
    /// The process's supervisor, where every turn runs.
    pub supervisor: Supervisor,
    /// The `telegram` section.
    pub config: TelegramConfig,
    /// `<home>/telegram`.
    pub dir: PathBuf,
}

/// The bot: the runtime and supervisor it shares with every surface, its settings and Bot
/// API client, and its state in parts that each keep their own lock — the state file
/// (offset, chat sessions, usage), the chats' running turns, what the chats are asked, and
/// the refusals sent to chats that may not use it.
pub(super) struct Bot {
    pub(super) runtime: Arc<Runtime>,
    pub(super) supervisor: Supervisor,
    pub(super) config: TelegramConfig,
    pub(super) api: BotApi,
    pub(super) state: Mutex<StateFile>,
    /// The chats' running turns, both ways, and their tasks.
    pub(super) runs: ChatRuns,
    /// Approvals and questions waiting for an answer.
    pub(super) pending: Pending,
    /// When each refused chat was last told so.
    pub(super) refused: Mutex<HashMap<i64, Instant>>,
}

impl Bot {
    /// True when the chat, or the user, is on the allowlist.
    pub(super) fn allowed(&self, chat: i64, user: Option<i64>) -> bool {
        self.config.allowed_chats.contains(&chat)
            || user.is_some_and(|u| self.config.allowed_users.contains(&u))
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How a person is named in the chat: their username, else their first name.
pub(super) fn display_name(user: &User) -> String {
    user.username.clone().unwrap_or(user.first_name.clone())
}
