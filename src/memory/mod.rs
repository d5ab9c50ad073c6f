//! Memory: what the agent learns, kept across sessions, and recall of past sessions.
//!
//! One embedded database, `<home>/odek.db` ([`db`]), holds
//! - **facts** ([`facts`]): two stores of short facts, `user` (global) and `project` (keyed by
//!   the project root), each within a character budget, written by the `memory` tool
//!   ([`tool`]) and by people (`odek memory …`). A turn that took in external content writes
//!   *pending* facts, which no model sees until the user accepts them;
//! - the **memory block** ([`block`]): the active facts of both stores as one system message,
//!   built once per turn and sent right after the system prompt, byte-identical for the turn;
//! - the **session index** ([`index`]): FTS5 over saved sessions (user messages, final
//!   answers, one-line tool-call summaries, redacted), kept up to date at turn end, searched
//!   by `session_search` ([`search_tool`]) and `odek session search`;
//! - **episodes** ([`episodes`]): a short summary of a session with at least three user
//!   turns; the two most relevant are recalled at the start of a new session;
//! - optional **embeddings** ([`embed`]) for hybrid ranking.
//!
//! Session files stay the source of truth: the index can always be rebuilt from them.

pub mod block;
pub mod db;
pub mod embed;
pub mod episodes;
pub mod facts;
pub mod index;
pub mod search_tool;
pub mod tool;
pub mod transfer;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rusqlite::Connection;

pub use crate::protocol::api::{Fact, FactStatus, MemoryTarget};
pub use facts::WriteOutcome;

/// Origin of a fact or of a pending write: the model's `memory` tool.
pub const SOURCE_MODEL: &str = "model";
/// Origin of a fact a person added (`odek memory add`, the web UI).
pub const SOURCE_USER: &str = "user";
/// Origin of an imported fact.
pub const SOURCE_IMPORT: &str = "import";

/// Why the memory database could not be used.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The file could not be opened or created.
    #[error("cannot open the memory database {}: {detail}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The file is not a database, or is damaged.
    #[error(
        "the memory database {} is damaged ({detail}); `odek memory export` saves what it can still read, then move the file aside and odek starts a new one",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's words.
        detail: String,
    },
    /// A newer odek wrote the file.
    #[error(
        "the memory database {} has schema version {found}; this odek knows {known}: use the newer odek, or move the file aside (`odek memory export` still reads it)",
        path.display()
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// The file's version.
        found: i64,
        /// Ours.
        known: i64,
    },
    /// Any other database failure.
    #[error("memory database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The write cannot be done as asked (over budget, a duplicate, an ambiguous match…):
    /// the message says why and what to do.
    #[error("{0}")]
    Refused(String),
    /// No such fact, pending write or session.
    #[error("{0}")]
    NotFound(String),
    /// Something around the database failed (the session files could not be listed, a
    /// worker thread died).
    #[error("{0}")]
    Other(String),
}

impl crate::error::Classified for MemoryError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            MemoryError::Open { .. }
            | MemoryError::Corrupt { .. }
            | MemoryError::Sqlite(_)
            | MemoryError::Other(_) => ErrorKind::Io,
            MemoryError::NewerSchema { .. } | MemoryError::Refused(_) => ErrorKind::Conflict,
            MemoryError::NotFound(_) => ErrorKind::NotFound,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            MemoryError::Open { .. } => Some(
                "check that its folder exists and can be written (odek's home: $ODEK_HOME, else ~/.odek)",
            ),
            MemoryError::Corrupt { .. } => Some(
                "odek memory export --output FILE, move the database aside, then odek memory import FILE",
            ),
            MemoryError::NewerSchema { .. } => {
                Some("odek upgrade installs the newest odek, which reads it")
            }
            MemoryError::Refused(_) => {
                Some("odek memory list shows the facts; odek memory edit or rm makes room")
            }
            MemoryError::NotFound(_) => Some(
                "odek memory list shows the facts' numbers, odek memory review the pending writes'",
            ),
            MemoryError::Sqlite(_) | MemoryError::Other(_) => None,
        }
    }
}

impl MemoryError {
    /// Names a damaged file as such; other errors keep SQLite's words.
    pub fn from_sqlite(path: &Path, e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => MemoryError::Corrupt {
                path: path.to_path_buf(),
                detail: e.to_string(),
            },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => {
                MemoryError::Open {
                    path: path.to_path_buf(),
                    detail: e.to_string(),
                }
            }
            _ => MemoryError::Sqlite(e),
        }
    }
}

/// Character budgets of the two fact stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// `memory.user_max_chars`.
    pub user: usize,
    /// `memory.project_max_chars`.
    pub project: usize,
}

impl Budgets {
    /// The budgets of `memory.user_max_chars` and `memory.project_max_chars`.
    pub fn from_config(memory: &crate::config::MemoryConfig) -> Self {
        let chars = |n: u64, default| usize::try_from(n).unwrap_or(default);
        Budgets {
            user: chars(memory.user_max_chars, 1500),
            project: chars(memory.project_max_chars, 2500),
        }
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            user: 1500,
            project: 2500,
        }
    }
}

impl Budgets {
    /// The budget of one store.
    pub fn of(&self, target: MemoryTarget) -> usize {
        match target {
            MemoryTarget::User => self.user,
            MemoryTarget::Project => self.project,
        }
    }
}

/// The open database, shared by a process's turns (one connection, used briefly under a
/// lock; other processes wait on SQLite's own lock); opened by `Memory::open` (`db.rs`).
pub struct Memory {
    conn: Mutex<Connection>,
    path: PathBuf,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory").field("path", &self.path).finish()
    }
}

impl Memory {
    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for one short piece of work.
    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Maps a SQLite error of this database.
    pub(crate) fn err(&self, e: rusqlite::Error) -> MemoryError {
        MemoryError::from_sqlite(&self.path, e)
    }
}

/// The key of the `project` store for a working directory: the root of the Git work tree
/// that holds it, else the directory itself (canonical, so every path to it agrees).
pub fn project_key(cwd: &Path) -> String {
    let dir = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let root = dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&dir);
    root.display().to_string()
}

/// Lower-case words of `text` joined by single spaces: how two facts are compared.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_keeps_words_only() {
        assert_eq!(
            normalise("  Use `cargo test --locked`!  "),
            "use cargo test locked"
        );
        assert_eq!(normalise("Prefers ÉTÉ"), "prefers été");
    }

    #[test]
    fn the_project_key_is_the_git_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let root = dir.path().canonicalize().unwrap().display().to_string();
        assert_eq!(project_key(&dir.path().join("a/b")), root);
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(
            project_key(plain.path()),
            plain.path().canonicalize().unwrap().display().to_string()
        );
    }
}
