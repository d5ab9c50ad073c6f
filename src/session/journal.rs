//! The journal beside a session snapshot: `<sessions>/<id>.journal`.
//!
//! While a writer holds a session, each save appends one JSON line — the edits of one tool
//! batch (already redacted), the plan state when it changed, the revision it brings the
//! session to and when — in one `write`. So a save costs the size of what changed, however
//! long the history, and a process that dies at any moment (`kill -9`, a panic) has lost
//! nothing it saved. Getting the lines to the disk itself (`fdatasync`) is the job of a
//! background thread that syncs at most [`SYNC_INTERVAL`] after a write, so several saves
//! share one sync: a power loss can cost the last fraction of a second of a turn, never the
//! consistency of the file (a torn last line is ignored). The same thread syncs the directory
//! once after the journal is created, so a new journal's name is as durable as its first
//! lines. The snapshot `<id>.json` records the revision it contains; the writer folds the
//! journal into it at the end of every turn (and when the journal outgrows the snapshot), then
//! drops the journal unsynced and removes it without syncing the directory: the snapshot,
//! synced first, holds every line, and a journal that comes back after a power loss holds
//! only lines the snapshot has, which readers skip.
//!
//! Reading is the same for everyone: the snapshot, then every journal line whose revision
//! continues it, in order. A line torn by a crash (no newline yet, or not JSON) ends the
//! replay; lines the snapshot already holds (a crash between writing the snapshot and
//! removing the journal) are skipped; a gap (the journal was folded and restarted while a
//! reader was between its two reads) ends it too, and the reader tries once more.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::files::{self, CappedRead};
use super::{Session, SessionError};
use crate::plan::PlanState;
use crate::transcript::{self, Edit};
use crate::util;

/// Largest journal that is read (a writer folds long before: at twice the snapshot's size).
pub(crate) const MAX_JOURNAL_BYTES: u64 = 256 * 1024 * 1024;
/// Longest time a written line waits for its `fdatasync`: the saves made meanwhile share it.
pub(crate) const SYNC_INTERVAL: Duration = Duration::from_millis(200);

/// One journal line: what one save changed.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct JournalLine {
    /// The revision this line brings the session to (the snapshot's plus one for the first).
    pub rev: u64,
    /// When it was saved (RFC 3339 UTC, milliseconds).
    pub at: String,
    /// The edits, in order, redacted.
    #[serde(default)]
    pub edits: Vec<Edit>,
    /// The plan's structured state when it changed, redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanState>,
}

/// `<dir>/<id>.journal`; the id must already be validated.
pub(crate) fn journal_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.journal"))
}

/// An open journal, appended to by the session's writer only.
#[derive(Debug)]
pub(crate) struct JournalFile {
    file: File,
    bytes: u64,
    syncer: Syncer,
}

impl JournalFile {
    /// Starts a new journal (mode 0600), replacing any previous one: the writer folds every
    /// journal it finds before it writes, so nothing left in the file is needed.
    pub(crate) fn create(dir: &Path, id: &str) -> io::Result<JournalFile> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(journal_path(dir, id))?;
        let syncer = Syncer::start(file.try_clone()?, dir.to_path_buf());
        Ok(JournalFile {
            file,
            bytes: 0,
            syncer,
        })
    }

    /// Appends one line (the JSON text and its newline) in one write; the background thread
    /// syncs it to the disk within [`SYNC_INTERVAL`].
    pub(crate) fn append(&mut self, line: &[u8]) -> io::Result<()> {
        self.file.write_all(line)?;
        self.bytes += line.len() as u64;
        self.syncer.mark_dirty();
        Ok(())
    }

    /// Closes a journal whose lines a synced snapshot now holds: the sync still pending is
    /// not made (the journal is about to be removed).
    pub(crate) fn discard(self) {
        self.syncer.cancel_pending();
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The thread that `fdatasync`s a journal a moment after it was written (and once more when
/// the journal is closed, so nothing written is left unsynced).
#[derive(Debug)]
struct Syncer {
    state: Arc<(Mutex<SyncState>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct SyncState {
    dirty: bool,
    closed: bool,
}

impl Syncer {
    /// Starts the thread; its first sync also syncs `dir`, where the journal was created.
    fn start(file: File, dir: PathBuf) -> Syncer {
        let state = Arc::new((Mutex::new(SyncState::default()), Condvar::new()));
        let shared = state.clone();
        let thread = std::thread::Builder::new()
            .name("odek-journal-sync".into())
            .spawn(move || sync_loop(&file, Some(&dir), &shared))
            .map_err(|e| tracing::warn!("no journal sync thread ({e}); lines sync at fold"))
            .ok();
        Syncer { state, thread }
    }

    /// Forgets the sync asked for (the lines are safe elsewhere); the thread then ends
    /// without syncing when the syncer is dropped.
    fn cancel_pending(&self) {
        let (lock, _) = &*self.state;
        lock.lock().unwrap_or_else(PoisonError::into_inner).dirty = false;
    }

    /// Asks for a sync; wakes the thread only when it was idle (saves made while a sync is
    /// pending simply join it).
    fn mark_dirty(&self) {
        let (lock, wake) = &*self.state;
        let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if !s.dirty {
            s.dirty = true;
            wake.notify_one();
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let (lock, wake) = &*self.state;
        lock.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
        wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn sync_loop(file: &File, mut dir: Option<&Path>, state: &(Mutex<SyncState>, Condvar)) {
    let (lock, wake) = state;
    let mut s = lock.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        s = wake
            .wait_while(s, |s| !s.dirty && !s.closed)
            .unwrap_or_else(PoisonError::into_inner);
        if !s.closed {
            // Let the saves of the next moment join this sync.
            s = wake
                .wait_timeout_while(s, SYNC_INTERVAL, |s| !s.closed)
                .map(|(s, _)| s)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        let (dirty, closed) = (s.dirty, s.closed);
        s.dirty = false;
        drop(s);
        if dirty && let Err(e) = file.sync_data() {
            tracing::warn!("cannot sync the session journal: {e}");
        }
        if dirty && let Some(created_in) = dir.take() {
            // The journal's name: synced once, with its first lines.
            if let Err(e) = util::files::sync_dir(created_in) {
                tracing::warn!("cannot sync the sessions directory: {e}");
            }
        }
        if closed {
            return;
        }
        s = lock.lock().unwrap_or_else(PoisonError::into_inner);
    }
}

/// Removes `<id>.journal`; a missing file is fine. The directory is not synced: a journal
/// that a power loss brings back holds only lines the snapshot has (see the module docs).
pub(crate) fn remove(dir: &Path, id: &str) -> io::Result<()> {
    match std::fs::remove_file(journal_path(dir, id)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// What a replay found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Replay {
    /// Lines applied.
    pub applied: usize,
    /// True when the journal file exists (applied or not).
    pub present: bool,
    /// True when a line continued from a revision the snapshot does not have.
    pub gap: bool,
    /// Why the replay stopped before the end, when a line was unusable.
    pub problem: Option<String>,
}

/// Applies the journal lines that continue `session`'s revision, in order; see the module
/// docs for what ends a replay. `updated_at`, the plan and the revision follow the last
/// applied line; the turn count is recounted.
pub(crate) fn replay(dir: &Path, session: &mut Session) -> Result<Replay, SessionError> {
    let path = journal_path(dir, &session.id);
    let bytes = match files::read_capped(&path, MAX_JOURNAL_BYTES) {
        Ok(CappedRead::Bytes(bytes)) => bytes,
        Ok(CappedRead::TooLarge(size)) => {
            return Err(SessionError::TooLarge {
                id: session.id.clone(),
                path,
                size,
                limit: MAX_JOURNAL_BYTES,
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Replay::default()),
        Err(e) => {
            let context = format!("session {}: cannot read", session.id);
            return Err(SessionError::io(context, path, e));
        }
    };
    let mut outcome = Replay {
        present: true,
        ..Replay::default()
    };
    // The last piece has no newline: a line still being written, or torn by a crash.
    let mut complete = bytes.split(|b| *b == b'\n').collect::<Vec<_>>();
    complete.pop();
    for (number, text) in complete.into_iter().enumerate() {
        let line: JournalLine = match serde_json::from_slice(text) {
            Ok(line) => line,
            Err(e) => {
                outcome.problem = Some(format!("line {} is not a journal line: {e}", number + 1));
                break;
            }
        };
        if line.rev <= session.revision {
            continue;
        }
        if line.rev != session.revision + 1 {
            outcome.gap = true;
            break;
        }
        if let Err(e) = transcript::apply_all(&mut session.messages, line.edits) {
            outcome.problem = Some(format!("line {}: {e}", number + 1));
            break;
        }
        if line.plan.is_some() {
            session.plan = line.plan;
        }
        session.revision = line.rev;
        session.updated_at = line.at;
        outcome.applied += 1;
    }
    if outcome.applied > 0 {
        session.turns = super::count_turns(&session.messages);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;

    const ID: &str = "20261130-0123456789abcdef0123456789abcdef";

    fn session() -> Session {
        Session {
            id: ID.into(),
            created_at: "2026-11-30T00:00:00.000Z".into(),
            updated_at: "2026-11-30T00:00:00.000Z".into(),
            model: "m".into(),
            base_url: None,
            provider: None,
            origin: None,
            turns: 1,
            task: "t".into(),
            messages: vec![Message::system("s"), Message::user("u")],
            input_tokens: 0,
            output_tokens: 0,
            cached_tokens: 0,
            runs: Vec::new(),
            plan: None,
            revision: 0,
            sandbox: None,
            dangerous_override: None,
            parent_session: None,
            schedule: None,
            turn_plans: Vec::new(),
            forked_from: None,
            name: None,
        }
    }

    fn line(rev: u64, text: &str) -> Vec<u8> {
        serde_json::to_vec(&JournalLine {
            rev,
            at: format!("2026-11-30T00:00:0{rev}.000Z"),
            edits: vec![Edit::Append {
                message: Message::assistant(text),
            }],
            plan: None,
        })
        .expect("serialises")
    }

    fn journal_with(dir: &Path, lines: &[Vec<u8>], tail: &[u8]) {
        let mut j = JournalFile::create(dir, ID).expect("create");
        for l in lines {
            let mut l = l.clone();
            l.push(b'\n');
            j.append(&l).expect("append");
        }
        j.file.write_all(tail).expect("tail");
    }

    fn texts(s: &Session) -> Vec<&str> {
        s.messages.iter().map(|m| m.content.as_str()).collect()
    }

    #[test]
    fn lines_continuing_the_snapshot_are_applied_and_a_torn_tail_is_ignored() {
        let dir = tempfile::tempdir().expect("tempdir");
        journal_with(
            dir.path(),
            &[line(1, "a"), line(2, "b")],
            br#"{"rev":3,"at":"#,
        );
        let mut s = session();
        let r = replay(dir.path(), &mut s).expect("replays");
        assert_eq!(r.applied, 2);
        assert!(r.problem.is_none() && !r.gap);
        assert_eq!(texts(&s), ["s", "u", "a", "b"]);
        assert_eq!(s.revision, 2);
        assert_eq!(s.updated_at, "2026-11-30T00:00:02.000Z");
    }

    #[test]
    fn lines_the_snapshot_holds_are_skipped_and_a_gap_stops_the_replay() {
        let dir = tempfile::tempdir().expect("tempdir");
        journal_with(dir.path(), &[line(1, "a"), line(2, "b"), line(4, "d")], b"");
        let mut s = session();
        s.revision = 1;
        let r = replay(dir.path(), &mut s).expect("replays");
        assert_eq!(r.applied, 1);
        assert!(r.gap);
        assert_eq!(texts(&s), ["s", "u", "b"]);
    }

    #[test]
    fn a_corrupt_line_ends_the_replay_with_a_reason() {
        let dir = tempfile::tempdir().expect("tempdir");
        journal_with(
            dir.path(),
            &[line(1, "a"), b"garbage".to_vec(), line(2, "b")],
            b"",
        );
        let mut s = session();
        let r = replay(dir.path(), &mut s).expect("replays");
        assert_eq!(r.applied, 1);
        assert!(r.problem.expect("problem").starts_with("line 2"));
        assert_eq!(texts(&s), ["s", "u", "a"]);
    }

    #[test]
    fn no_journal_is_nothing_to_replay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = session();
        assert_eq!(replay(dir.path(), &mut s).expect("ok"), Replay::default());
    }
}
