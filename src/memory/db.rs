//! `<home>/odek.db`: opening it (WAL, a busy timeout so several odek processes can share it),
//! its schema version (`PRAGMA user_version`) and the migrations that bring an older file up to
//! date. A file of a newer odek, or one that is not a database, is refused with an error that
//! says what to do.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{Memory, MemoryError};

/// The database's name inside the odek home.
pub const DB_FILE: &str = "odek.db";

/// The schema this odek writes; each entry of [`MIGRATIONS`] moves one version up.
pub const SCHEMA_VERSION: i64 = 1;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Migration `n` brings version `n` to version `n + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: facts, the session index, episodes and embedding vectors.
    r#"
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE facts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL CHECK (target IN ('user', 'project')),
    project TEXT NOT NULL DEFAULT '',
    content TEXT NOT NULL,
    norm TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'pending')),
    action TEXT NOT NULL DEFAULT 'add' CHECK (action IN ('add', 'replace', 'remove')),
    replaces INTEGER,
    session_id TEXT,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX facts_by_scope ON facts (target, project, status);
CREATE TABLE indexed_sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    origin TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    messages INTEGER NOT NULL,
    head TEXT NOT NULL,
    user_turns INTEGER NOT NULL DEFAULT 0,
    external INTEGER NOT NULL DEFAULT 0,
    promoted INTEGER NOT NULL DEFAULT 0,
    episode_turns INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE session_text USING fts5 (
    session_id UNINDEXED, kind UNINDEXED, body, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE session_rows (session_id TEXT NOT NULL, row INTEGER NOT NULL);
CREATE INDEX session_rows_by_session ON session_rows (session_id);
CREATE TABLE episodes (
    session_id TEXT PRIMARY KEY,
    summary TEXT NOT NULL,
    turns INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE episode_text USING fts5 (
    session_id UNINDEXED, body, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE vectors (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (kind, key)
);
"#,
];

/// The database's path in `home`.
pub fn path_in(home: &Path) -> PathBuf {
    home.join(DB_FILE)
}

/// Opens (creating when missing) and migrates the database at `path`. Another process
/// opening it at the same moment can hold the lock that switching to WAL or migrating needs,
/// and SQLite reports that at once rather than through the busy timeout: such an open is
/// tried again until the timeout.
pub fn open(path: &Path) -> Result<Connection, MemoryError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match open_once(path) {
            Err(MemoryError::Sqlite(e)) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

impl Memory {
    /// Opens `<home>/odek.db`, creating and migrating it as needed.
    pub fn open(home: &Path) -> Result<Memory, MemoryError> {
        Self::open_file(&path_in(home))
    }

    /// Opens the database at `path`.
    pub fn open_file(path: &Path) -> Result<Memory, MemoryError> {
        Ok(Memory {
            conn: Mutex::new(open(path)?),
            path: path.to_path_buf(),
        })
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn open_once(path: &Path) -> Result<Connection, MemoryError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| MemoryError::Open {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
    }
    let mut conn = Connection::open(path).map_err(|e| MemoryError::from_sqlite(path, e))?;
    configure(&conn).map_err(|e| MemoryError::from_sqlite(path, e))?;
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// Opens the database read-only, whatever its version (for `odek memory export` of a file
/// this odek cannot otherwise use).
pub fn open_read_only(path: &Path) -> Result<Connection, MemoryError> {
    if !path.exists() {
        return Err(MemoryError::Open {
            path: path.to_path_buf(),
            detail: "no such file".into(),
        });
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| MemoryError::from_sqlite(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| MemoryError::from_sqlite(path, e))?;
    Ok(conn)
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL: readers never wait for the writer, and one writer at a time across processes.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::debug!("odek.db: journal mode {mode} (WAL unavailable here)");
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
}

/// The schema version recorded in the file.
pub fn version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<(), MemoryError> {
    let sqlite = |e| MemoryError::from_sqlite(path, e);
    let found = version(conn).map_err(sqlite)?;
    if found > SCHEMA_VERSION {
        return Err(MemoryError::NewerSchema {
            path: path.to_path_buf(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    // One writer migrates; another process waiting on the lock finds the work done.
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sqlite)?;
    let mut current = version(&tx).map_err(sqlite)?;
    while current < SCHEMA_VERSION {
        let step = usize::try_from(current).unwrap_or(usize::MAX);
        let Some(sql) = MIGRATIONS.get(step) else {
            break;
        };
        tx.execute_batch(sql).map_err(sqlite)?;
        current += 1;
        tx.pragma_update(None, "user_version", current)
            .map_err(sqlite)?;
    }
    tx.commit().map_err(sqlite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_gets_the_current_schema_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        let conn = open(&path).unwrap();
        assert_eq!(version(&conn).unwrap(), SCHEMA_VERSION);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        drop(conn);
        let again = open(&path).unwrap();
        assert_eq!(version(&again).unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn fts5_is_compiled_in() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&path_in(dir.path())).unwrap();
        conn.execute(
            "INSERT INTO session_text (session_id, kind, body) VALUES ('s', 'user', 'the quick brown fox')",
            [],
        )
        .unwrap();
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM session_text WHERE session_text MATCH 'brown'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn processes_opening_a_new_file_at_once_all_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || open(&path).map(|_| ()))
            })
            .collect();
        for h in handles {
            h.join().unwrap().expect("opens");
        }
    }

    #[test]
    fn a_newer_schema_is_refused_with_both_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = open(&path).unwrap_err().to_string();
        assert!(err.contains("schema version 99"), "{err}");
        assert!(err.contains(&format!("knows {SCHEMA_VERSION}")), "{err}");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_called_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        std::fs::write(&path, vec![b'x'; 8192]).unwrap();
        let err = open(&path).unwrap_err();
        assert!(matches!(err, MemoryError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("is damaged"), "{err}");
    }
}
