//! What the bot keeps between restarts, in `<home>/telegram/state.json` (mode 0600, replaced
//! atomically): the next update offset — saved before an update is handled, so a restart
//! never answers an update twice — the session of each chat, the chat's earlier sessions
//! (`/sessions`, `/resume N`) and its tokens of the day (`telegram.daily_token_budget`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The state file's name inside `<home>/telegram/`.
pub const STATE_FILE: &str = "state.json";

/// One chat's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatSession {
    /// A standard session id (`odek continue --id` opens it).
    pub session_id: String,
    /// Unix seconds of the chat's last turn (for `telegram.session_ttl_hours`).
    pub last_active: u64,
}

/// The bot's saved state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BotState {
    /// The `offset` of the next `getUpdates`: one past the last update taken.
    pub offset: i64,
    /// Chat id → its session.
    pub chats: BTreeMap<String, ChatSession>,
    /// Chat id → its sessions, newest first (at most [`MAX_HISTORY`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub history: BTreeMap<String, Vec<String>>,
    /// Chat id → the tokens its turns used on one day (UTC).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage: BTreeMap<String, DayUsage>,
}

/// The sessions of a chat `/sessions` remembers.
pub const MAX_HISTORY: usize = 20;

/// Tokens (in and out) a chat's turns used on `day`, and what the priced ones cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayUsage {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// Tokens in and out.
    pub tokens: u64,
    /// Millionths of a dollar the turns with a known price cost.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_microusd: u64,
    /// Turns whose model had no known price (their cost is not in `cost_microusd`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_turns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl BotState {
    /// Puts `session_id` first in the chat's sessions.
    pub fn remember_session(&mut self, chat: i64, session_id: &str) {
        let list = self.history.entry(chat.to_string()).or_default();
        list.retain(|id| id != session_id);
        list.insert(0, session_id.to_string());
        list.truncate(MAX_HISTORY);
    }

    /// The chat's sessions, newest first.
    pub fn sessions_of(&self, chat: i64) -> &[String] {
        self.history
            .get(&chat.to_string())
            .map_or(&[], Vec::as_slice)
    }

    /// Tokens the chat used on `day`.
    pub fn tokens_on(&self, chat: i64, day: &str) -> u64 {
        self.usage_on(chat, day).map_or(0, |u| u.tokens)
    }

    /// What the chat used on `day`, if anything.
    pub fn usage_on(&self, chat: i64, day: &str) -> Option<&DayUsage> {
        self.usage.get(&chat.to_string()).filter(|u| u.day == day)
    }

    /// Adds a turn's tokens and cost (`None`: no known price) to the chat's day (a new day
    /// starts from zero).
    pub fn add_usage(&mut self, chat: i64, day: &str, tokens: u64, cost_microusd: Option<u64>) {
        let used = self.usage.entry(chat.to_string()).or_default();
        if used.day != day {
            *used = DayUsage {
                day: day.to_string(),
                ..DayUsage::default()
            };
        }
        used.tokens = used.tokens.saturating_add(tokens);
        match cost_microusd {
            Some(cost) => used.cost_microusd = used.cost_microusd.saturating_add(cost),
            None => used.unpriced_turns += 1,
        }
    }
}

/// The state in `dir`, saved after every change.
#[derive(Debug)]
pub struct StateFile {
    dir: PathBuf,
    /// The current state.
    pub state: BotState,
}

impl StateFile {
    /// Loads `dir/state.json` (creating `dir`); a missing file is a fresh state, an
    /// unreadable one is reported and replaced by a fresh state.
    pub fn open(dir: &Path) -> std::io::Result<(StateFile, Option<String>)> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(STATE_FILE);
        let (state, warning) = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(state) => (state, None),
                Err(e) => (
                    BotState::default(),
                    Some(format!(
                        "{} is not valid ({e}); starting with a fresh state",
                        path.display()
                    )),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (BotState::default(), None),
            Err(e) => return Err(e),
        };
        Ok((
            StateFile {
                dir: dir.to_path_buf(),
                state,
            },
            warning,
        ))
    }

    /// Writes the state (atomically, mode 0600).
    pub fn save(&self) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(&self.state).map_err(std::io::Error::other)?;
        crate::util::files::write_atomically(
            &self.dir.join(STATE_FILE),
            &bytes,
            crate::util::files::Permissions::Private,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keeps_the_newest_first_once_and_usage_restarts_each_day() {
        let mut s = BotState::default();
        for id in ["a", "b", "a", "c"] {
            s.remember_session(7, id);
        }
        assert_eq!(s.sessions_of(7), ["c", "a", "b"]);
        assert!(s.sessions_of(8).is_empty());
        for n in 0..30 {
            s.remember_session(9, &n.to_string());
        }
        assert_eq!(s.sessions_of(9).len(), MAX_HISTORY);
        s.add_usage(7, "2026-12-02", 100, Some(1_500));
        s.add_usage(7, "2026-12-02", 50, None);
        assert_eq!(s.tokens_on(7, "2026-12-02"), 150);
        let day = s.usage_on(7, "2026-12-02").unwrap();
        assert_eq!((day.cost_microusd, day.unpriced_turns), (1_500, 1));
        assert_eq!(s.tokens_on(7, "2026-12-03"), 0);
        s.add_usage(7, "2026-12-03", 5, Some(7));
        assert_eq!(s.tokens_on(7, "2026-12-03"), 5);
        let day = s.usage_on(7, "2026-12-03").unwrap();
        assert_eq!((day.cost_microusd, day.unpriced_turns), (7, 0));
        // A state file of an earlier version (no history, no usage) still reads.
        let old: BotState = serde_json::from_str(r#"{"offset":3,"chats":{}}"#).expect("old");
        assert_eq!(old.offset, 3);
    }

    #[test]
    fn round_trip_and_a_corrupt_file_is_replaced_with_a_warning() {
        let dir = tempfile::tempdir().expect("dir");
        let tg = dir.path().join("telegram");
        let (mut file, warning) = StateFile::open(&tg).expect("open");
        assert!(warning.is_none());
        file.state.offset = 42;
        file.state.chats.insert(
            "-100".into(),
            ChatSession {
                session_id: "20261201-0123456789abcdef0123456789abcdef".into(),
                last_active: 7,
            },
        );
        file.save().expect("save");
        let (again, _) = StateFile::open(&tg).expect("reopen");
        assert_eq!(again.state, file.state);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(tg.join(STATE_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        std::fs::write(tg.join(STATE_FILE), b"{not json").expect("write");
        let (fresh, warning) = StateFile::open(&tg).expect("reopen");
        assert_eq!(fresh.state, BotState::default());
        assert!(warning.expect("warning").contains("not valid"));
    }
}
