//! What the bot keeps between restarts, in `<home>/telegram/state.json` (mode 0600, replaced
//! atomically): the next update offset — saved before an update is handled, so a restart
//! never answers an update twice — and the session of each chat.

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
        crate::session::write_atomically(&self.dir, STATE_FILE, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
