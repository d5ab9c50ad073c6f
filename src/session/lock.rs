//! One writer per session: an exclusive `flock` on `<sessions>/<id>.lock`, held by whoever
//! may write the session (a run, an open REPL, a serve or Telegram turn) for as long as it
//! may write it.
//!
//! The kernel lock decides; the file's content — `{pid, command, since}`, written by the
//! holder after it got the lock — only serves the refusal message. A process killed with
//! `kill -9` releases its lock with its descriptors, so a stale file never blocks anyone.
//! Lock files are unlinked only by their holder (a deleted session, a session that was never
//! written); because an unlinked file can still be locked through a descriptor opened
//! before the unlink, a new holder checks after locking that the path still names the file
//! it locked, and starts over when it does not.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SessionError;
use super::files;

/// Attempts at locking a file that was unlinked under us before giving up.
const MAX_ATTEMPTS: u32 = 5;
/// Largest holder record read for a refusal message.
const MAX_HOLDER_BYTES: u64 = 4096;

/// Who holds a session, as recorded in its lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Process id of the holder.
    pub pid: u32,
    /// What holds it, e.g. `odek repl`.
    pub command: String,
    /// Since when (RFC 3339 UTC).
    #[serde(default)]
    pub since: String,
}

impl Holder {
    /// This process, as `command` (e.g. `odek run`).
    pub fn this_process(command: &str) -> Self {
        Holder {
            pid: std::process::id(),
            command: command.to_string(),
            since: crate::util::timestamp::now_rfc3339(),
        }
    }

    /// `odek repl (pid 123)`.
    pub fn describe(&self) -> String {
        format!("{} (pid {})", self.command, self.pid)
    }
}

/// The held lock of one session; released when dropped.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
    id: String,
}

impl SessionLock {
    /// Takes the lock of session `id` in `dir` for `holder`, or refuses at once with
    /// [`SessionError::Busy`] naming the current holder. Creates `dir` when needed.
    pub fn acquire(dir: &Path, id: &str, holder: &Holder) -> Result<SessionLock, SessionError> {
        super::validate_id(id)?;
        crate::util::files::ensure_dir(dir)
            .map_err(|e| SessionError::io(format!("session {id}: cannot create"), dir, e))?;
        let path = lock_path(dir, id);
        let io_error = |e| SessionError::io(format!("session {id}: cannot lock"), &path, e);
        for _ in 0..MAX_ATTEMPTS {
            let file = files::open_lock_file(&path).map_err(io_error)?;
            if let Err(busy) = lock_now_or_after_a_fork(&file, &path) {
                return match busy {
                    std::fs::TryLockError::WouldBlock => Err(SessionError::Busy {
                        id: id.to_string(),
                        holder: read_holder(&path).map(|h| h.describe()),
                    }),
                    std::fs::TryLockError::Error(e) => Err(io_error(e)),
                };
            }
            if !still_names(&path, &file) {
                continue; // unlinked by its previous holder: lock the file that is there now
            }
            let mut lock = SessionLock {
                file,
                path: path.clone(),
                id: id.to_string(),
            };
            lock.record(holder).map_err(io_error)?;
            return Ok(lock);
        }
        Err(io_error(io::Error::other(
            "the lock file keeps being replaced",
        )))
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Removes the lock file (the session is gone, or was never written). Only the holder
    /// may: anyone who opened the old file meanwhile notices and locks the new one.
    pub fn remove_file(&self) {
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::debug!("cannot remove {}: {e}", self.path.display());
        }
    }

    fn record(&mut self, holder: &Holder) -> io::Result<()> {
        let text = serde_json::to_vec(holder).map_err(io::Error::other)?;
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(&text)
    }
}

/// `<dir>/<id>.lock`; the id must already be validated.
pub(crate) fn lock_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.lock"))
}

/// The holder recorded in a lock file, when it can be read.
/// How long a lock recorded as held by this very process is waited for: a lock this
/// process just released can live on for a moment in a child forked before it was
/// released (until the child's `exec` closes the descriptor).
const SELF_HELD_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Locks `file` at once, except that a lock whose record names this process is retried
/// for up to [`SELF_HELD_WAIT`] (see there); another process's lock is refused at once.
fn lock_now_or_after_a_fork(file: &File, path: &Path) -> Result<(), std::fs::TryLockError> {
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock)
                if started.elapsed() < SELF_HELD_WAIT
                    && read_holder(path).is_some_and(|h| h.pid == std::process::id()) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            result => return result,
        }
    }
}

pub(crate) fn read_holder(path: &Path) -> Option<Holder> {
    let mut text = Vec::new();
    File::open(path)
        .ok()?
        .take(MAX_HOLDER_BYTES)
        .read_to_end(&mut text)
        .ok()?;
    serde_json::from_slice(&text).ok()
}

/// True when `path` still names the file `file` has open (it was not unlinked or replaced).
fn still_names(path: &Path, file: &File) -> bool {
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(on_disk), Ok(open)) => on_disk.dev() == open.dev() && on_disk.ino() == open.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "20261130-0123456789abcdef0123456789abcdef";

    #[test]
    fn a_second_writer_is_refused_with_the_holder_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = SessionLock::acquire(dir.path(), ID, &Holder::this_process("odek repl"))
            .expect("first");
        let err = SessionLock::acquire(dir.path(), ID, &Holder::this_process("odek continue"))
            .expect_err("busy");
        assert_eq!(
            err.to_string(),
            format!(
                "session {ID} is in use by odek repl (pid {})",
                std::process::id()
            )
        );
        drop(first);
        SessionLock::acquire(dir.path(), ID, &Holder::this_process("odek continue"))
            .expect("free again after the first holder let go");
    }

    #[test]
    fn a_stale_record_never_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            lock_path(dir.path(), ID),
            r#"{"pid":999999,"command":"odek run","since":"2026-01-01T00:00:00Z"}"#,
        )
        .expect("write");
        let lock = SessionLock::acquire(dir.path(), ID, &Holder::this_process("odek run"))
            .expect("nobody holds it");
        let holder = read_holder(&lock_path(dir.path(), ID)).expect("recorded");
        assert_eq!(holder.pid, std::process::id());
        assert_eq!(lock.id(), ID);
    }

    #[test]
    fn a_removed_lock_file_cannot_hide_a_second_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = lock_path(dir.path(), ID);
        let first =
            SessionLock::acquire(dir.path(), ID, &Holder::this_process("a")).expect("first");
        // Someone opened the file before the holder removed it…
        let early = files::open_lock_file(&path).expect("open");
        first.remove_file();
        drop(first);
        // …and locks the unlinked file, while a newcomer locks the new one.
        early.try_lock().expect("the orphan can be locked");
        let second = SessionLock::acquire(dir.path(), ID, &Holder::this_process("b"))
            .expect("the newcomer locks the file at the path");
        // A third party is refused: the path's file is held.
        assert!(matches!(
            SessionLock::acquire(dir.path(), ID, &Holder::this_process("c")),
            Err(SessionError::Busy { .. })
        ));
        drop(second);
    }

    #[test]
    fn a_record_that_cannot_be_read_still_refuses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = lock_path(dir.path(), ID);
        let held = files::open_lock_file(&path).expect("open");
        held.try_lock().expect("lock");
        let err =
            SessionLock::acquire(dir.path(), ID, &Holder::this_process("b")).expect_err("busy");
        assert_eq!(
            err.to_string(),
            format!("session {ID} is in use by another odek process")
        );
    }
}
