//! [`SessionStore`]: save, load, list, delete, trim and clean up sessions in one directory.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::files::{self, DirLock};
use super::index::{self, INDEX_FILE, IndexState, LOCK_FILE};
use super::transcript::{self, size_cut, without_oldest_groups};
use super::{
    MAX_SESSION_BYTES, SaveReport, Session, SessionError, SessionList, SessionPage, SessionSummary,
    TrimOutcome, count_turns, new_session_id, now_rfc3339, parse_timestamp, validate_id,
};
use crate::llm::Message;
use crate::redact::Redactor;

/// Seconds in a day, for `cleanup`.
const SECONDS_PER_DAY: i64 = 24 * 60 * 60;

/// The sessions directory `<home>/sessions` and the redactor applied to everything written.
#[derive(Clone)]
pub struct SessionStore {
    dir: PathBuf,
    redactor: Arc<Redactor>,
    size_limit: u64,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("dir", &self.dir)
            .field("size_limit", &self.size_limit)
            .finish_non_exhaustive()
    }
}

impl SessionStore {
    /// A store in `<home>/sessions`; the directory is created (0700) on the first write.
    pub fn new(home: &Path, redactor: Arc<Redactor>) -> Self {
        SessionStore {
            dir: home.join("sessions"),
            redactor,
            size_limit: MAX_SESSION_BYTES,
        }
    }

    /// The same store with a different size cap (tests exercise trimming with small files).
    #[cfg(test)]
    pub(crate) fn with_size_limit(mut self, size_limit: u64) -> Self {
        self.size_limit = size_limit;
        self
    }

    /// The sessions directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A new session with a fresh id and timestamps and its turns counted; not saved yet.
    pub fn new_session(
        &self,
        model: &str,
        base_url: Option<&str>,
        task: &str,
        messages: Vec<Message>,
    ) -> Session {
        let now = now_rfc3339();
        Session {
            id: new_session_id(),
            created_at: now.clone(),
            updated_at: now,
            model: model.to_string(),
            base_url: base_url.map(str::to_string),
            turns: count_turns(&messages),
            task: task.to_string(),
            messages,
            input_tokens: 0,
            output_tokens: 0,
        }
    }

    /// Writes `session` atomically and updates the index. Sets `updated_at` (and a missing
    /// `created_at`) and recounts turns. Only the written copy is redacted; the caller's
    /// session keeps its text. When the file would exceed 32 MiB the oldest message groups
    /// after the leading system messages are dropped, from the written copy and from
    /// `session` alike, and the report says how many.
    pub fn save(&self, session: &mut Session) -> Result<SaveReport, SessionError> {
        validate_id(&session.id)?;
        session.updated_at = now_rfc3339();
        if session.created_at.is_empty() {
            session.created_at = session.updated_at.clone();
        }
        session.turns = count_turns(&session.messages);
        let mut on_disk = super::redaction::redacted_copy(session, &self.redactor);
        let (bytes, trimmed_messages) = self.serialize_within_limit(session, &mut on_disk)?;
        let mut report = SaveReport {
            bytes_written: bytes.len() as u64,
            trimmed_messages,
            warnings: Vec::new(),
        };
        if trimmed_messages > 0 {
            report.warnings.push(format!(
                "session {} exceeded {} bytes on write — {trimmed_messages} oldest messages dropped to stay within the load cap",
                session.id, self.size_limit
            ));
        }
        let _lock = self.lock(&session.id)?;
        let file_name = format!("{}.json", session.id);
        files::write_atomically(&self.dir, &file_name, &bytes).map_err(|e| {
            let context = format!("session {}: cannot write", session.id);
            SessionError::io(context, self.dir.join(&file_name), e)
        })?;
        if let Err(problem) = self.upsert_index_locked(on_disk.summary()) {
            report
                .warnings
                .push(self.give_up_on_index(&session.id, &problem));
        }
        Ok(report)
    }

    /// Loads `<id>.json`: validates the id, refuses files over 32 MiB before reading them,
    /// and checks that the file holds the session its name says.
    pub fn load(&self, id: &str) -> Result<Session, SessionError> {
        validate_id(id)?;
        let session: Session = files::read_session_json(&self.dir, id, self.size_limit)?;
        if session.id != id {
            return Err(SessionError::IdMismatch {
                id: id.to_string(),
                path: files::session_path(&self.dir, id),
                found: session.id,
            });
        }
        Ok(session)
    }

    /// All sessions, most recently updated first, from the index. One `readdir` checks that
    /// the index names exactly the files present; when it does not (or it is missing or
    /// unreadable) it is reconciled with the directory and rewritten. Unusable files are
    /// reported in `problems` by name and never hide the other sessions.
    pub fn list(&self) -> Result<SessionList, SessionError> {
        if index::stamp_is_current(&self.dir)
            && let IndexState::Entries(mut entries) = index::read_index(&self.dir)
        {
            index::sort_newest_first(&mut entries);
            return Ok(SessionList {
                sessions: entries,
                problems: Vec::new(),
            });
        }
        let listed_at = index::dir_mtime(&self.dir).ok();
        let ids = match self.ids_on_disk()? {
            Some(ids) => ids,
            None => return Ok(SessionList::default()),
        };
        if let IndexState::Entries(mut entries) = index::read_index(&self.dir)
            && index::index_matches(&entries, &ids)
        {
            self.stamp_if_unchanged(listed_at);
            index::sort_newest_first(&mut entries);
            return Ok(SessionList {
                sessions: entries,
                problems: Vec::new(),
            });
        }
        self.rebuild_index()
    }

    /// The `limit` most recently updated sessions and how many there are in all. When the
    /// directory has not changed since the index was written, only those entries are read
    /// from it (fast with thousands of sessions); otherwise this is [`Self::list`] cut short.
    pub fn list_recent(&self, limit: usize) -> Result<SessionPage, SessionError> {
        if index::stamp_is_current(&self.dir)
            && let Some((sessions, total)) = index::read_index_head(&self.dir, limit)
        {
            return Ok(SessionPage {
                sessions,
                total,
                problems: Vec::new(),
            });
        }
        let SessionList {
            mut sessions,
            problems,
        } = self.list()?;
        let total = sessions.len();
        sessions.truncate(limit);
        Ok(SessionPage {
            sessions,
            total,
            problems,
        })
    }

    /// The most recently updated session, if any.
    pub fn latest(&self) -> Result<Option<SessionSummary>, SessionError> {
        Ok(self.list_recent(1)?.sessions.into_iter().next())
    }

    /// Deletes `<id>.json` and its index entry. Idempotent: `Ok(false)` when there was no
    /// such file.
    pub fn delete(&self, id: &str) -> Result<bool, SessionError> {
        validate_id(id)?;
        if !self.dir.is_dir() {
            return Ok(false);
        }
        let _lock = self.lock(id)?;
        let existed = self.remove_session_file(id)?;
        self.remove_from_index_locked(&HashSet::from([id.to_string()]));
        Ok(existed)
    }

    /// Keeps the leading system messages and the most recent messages, `keep` in all, never
    /// splitting an assistant message from its tool results (so it may keep a little fewer),
    /// then saves. `keep` must be at least 2.
    pub fn trim(&self, id: &str, keep: usize) -> Result<TrimOutcome, SessionError> {
        validate_id(id)?;
        if keep < 2 {
            return Err(SessionError::KeepTooSmall {
                id: id.to_string(),
                keep,
            });
        }
        let mut session = self.load(id)?;
        let before = session.messages.len();
        let kept = transcript::trim_transcript(&session.messages, keep);
        if kept.len() == before {
            return Ok(TrimOutcome {
                before,
                after: before,
            });
        }
        session.messages = kept;
        self.save(&mut session)?;
        Ok(TrimOutcome {
            before,
            after: session.messages.len(),
        })
    }

    /// Deletes every session last updated more than `older_than_days` days ago (0 = all
    /// sessions) and any temp file left by a crashed write. Files that cannot be parsed are
    /// left alone (they are reported by `list`). Returns how many sessions were deleted.
    pub fn cleanup(&self, older_than_days: u64) -> Result<usize, SessionError> {
        if !self.dir.is_dir() {
            return Ok(0);
        }
        // Decide under the lock, so a session saved meanwhile is judged by its new time.
        let _lock = self.lock("cleanup")?;
        let Reconciled {
            mut entries,
            previous,
            ..
        } = self.reconcile_locked()?;
        let victims = sessions_older_than(&entries, older_than_days);
        let mut deleted = 0;
        for id in &victims {
            if self.remove_session_file(id)? {
                deleted += 1;
            }
        }
        self.remove_temp_files()?;
        entries.retain(|e| !victims.contains(&e.id));
        self.write_index_if_changed(&entries, previous.as_deref());
        Ok(deleted)
    }

    /// Serializes `on_disk`, dropping the oldest message groups (from it and from `session`
    /// identically) when it is over the size limit. Returns the bytes and the number of
    /// messages dropped.
    fn serialize_within_limit(
        &self,
        session: &mut Session,
        on_disk: &mut Session,
    ) -> Result<(Vec<u8>, usize), SessionError> {
        let bytes = self.serialize(on_disk)?;
        if bytes.len() as u64 <= self.size_limit {
            return Ok((bytes, 0));
        }
        let sizes: Vec<u64> = on_disk.messages.iter().map(json_len).collect();
        let excess = bytes.len() as u64 - self.size_limit;
        let cut = size_cut(&on_disk.messages, &sizes, excess);
        let before = session.messages.len();
        for copy in [&mut *session, &mut *on_disk] {
            copy.messages = without_oldest_groups(std::mem::take(&mut copy.messages), cut);
            copy.turns = count_turns(&copy.messages);
        }
        let bytes = self.serialize(on_disk)?;
        if bytes.len() as u64 > self.size_limit {
            return Err(SessionError::TooLargeToSave {
                id: session.id.clone(),
                size: bytes.len() as u64,
                limit: self.size_limit,
            });
        }
        Ok((bytes, before - session.messages.len()))
    }

    fn serialize(&self, session: &Session) -> Result<Vec<u8>, SessionError> {
        serde_json::to_vec(session).map_err(|source| SessionError::Serialize {
            id: session.id.clone(),
            source,
        })
    }

    /// Creates the directory if needed and takes the store-wide lock; `subject` names the
    /// session (or operation) in errors.
    fn lock(&self, subject: &str) -> Result<DirLock, SessionError> {
        files::ensure_dir(&self.dir).map_err(|e| {
            SessionError::io(format!("session {subject}: cannot create"), &self.dir, e)
        })?;
        let path = self.dir.join(LOCK_FILE);
        DirLock::acquire(&path)
            .map_err(|e| SessionError::io(format!("session {subject}: cannot lock"), path, e))
    }

    /// Session ids present on disk; `None` when the directory does not exist yet.
    fn ids_on_disk(&self) -> Result<Option<HashSet<String>>, SessionError> {
        match index::session_ids_on_disk(&self.dir) {
            Ok(ids) => Ok(Some(ids)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SessionError::io("cannot list sessions in", &self.dir, e)),
        }
    }

    /// Records the stamp after a `list` found the index consistent with the directory as it
    /// was at `listed_at` — under the lock, and only if nothing changed since, so a save in
    /// between can never be hidden behind the stamp.
    fn stamp_if_unchanged(&self, listed_at: Option<std::time::SystemTime>) {
        let Some(listed_at) = listed_at else { return };
        let Ok(_lock) = self.lock("index") else {
            return;
        };
        if index::dir_mtime(&self.dir).is_ok_and(|now| now == listed_at)
            && let Err(e) = index::write_stamp(&self.dir)
        {
            tracing::debug!("cannot write the index stamp: {e}");
        }
    }

    /// The index reconciled with the directory under the lock, rewritten when it changed.
    fn rebuild_index(&self) -> Result<SessionList, SessionError> {
        let lock = self.lock("index");
        let mut problems = Vec::new();
        if let Err(e) = &lock {
            problems.push(format!("{e}; the index is rebuilt in memory only"));
        }
        let Reconciled {
            entries: sessions,
            previous,
            problems: mut found,
        } = self.reconcile_locked()?;
        problems.append(&mut found);
        if lock.is_ok() {
            let written = if previous.as_ref() == Some(&sessions) {
                // Same content: only the stamp is refreshed, so later lists take the fast path.
                index::write_stamp(&self.dir)
            } else {
                index::write_index(&self.dir, &sessions)
            };
            if let Err(e) = written {
                let path = self.dir.join(INDEX_FILE);
                problems.push(format!("cannot rewrite {}: {e}", path.display()));
            }
        }
        Ok(SessionList { sessions, problems })
    }

    /// The current index (if usable) reconciled with the directory. Call with the lock held.
    fn reconcile_locked(&self) -> Result<Reconciled, SessionError> {
        let previous = match index::read_index(&self.dir) {
            IndexState::Entries(entries) => Some(entries),
            IndexState::Missing => None,
            IndexState::Unusable(why) => {
                tracing::debug!("rebuilding the session index: {why}");
                None
            }
        };
        let ids = self.ids_on_disk()?.unwrap_or_default();
        let known = previous.clone().unwrap_or_default();
        let (entries, problems) = index::reconcile(&self.dir, known, &ids, self.size_limit);
        Ok(Reconciled {
            entries,
            previous,
            problems,
        })
    }

    /// Replaces (or adds) `summary` in the index. Call with the lock held.
    fn upsert_index_locked(&self, summary: SessionSummary) -> Result<(), String> {
        let mut entries = match index::read_index(&self.dir) {
            IndexState::Entries(entries) => entries,
            IndexState::Missing | IndexState::Unusable(_) => {
                self.reconcile_locked().map_err(|e| e.to_string())?.entries
            }
        };
        entries.retain(|e| e.id != summary.id);
        entries.push(summary);
        index::sort_newest_first(&mut entries);
        index::write_index(&self.dir, &entries)
            .map_err(|e| format!("cannot write {}: {e}", self.dir.join(INDEX_FILE).display()))
    }

    /// After a failed index update the index may be stale in a way `list` cannot see (an old
    /// `updated_at`); removing it forces a rebuild on the next `list`. Returns the warning.
    fn give_up_on_index(&self, id: &str, problem: &str) -> String {
        let removed = std::fs::remove_file(self.dir.join(INDEX_FILE)).is_ok();
        let consequence = if removed {
            "it will be rebuilt on the next list"
        } else {
            "`session list` may show it out of date"
        };
        format!("session {id} was saved but the index was not updated ({problem}); {consequence}")
    }

    /// Drops `ids` from the index. Call with the lock held.
    fn remove_from_index_locked(&self, ids: &HashSet<String>) {
        match self.reconcile_locked() {
            Ok(Reconciled {
                mut entries,
                previous,
                ..
            }) => {
                entries.retain(|e| !ids.contains(&e.id));
                self.write_index_if_changed(&entries, previous.as_deref());
            }
            Err(e) => tracing::warn!("cannot update the session index: {e}"),
        }
    }

    /// Rewrites the index when `entries` differ from what it held. Call with the lock held.
    /// Failure is only logged: the index then names files that are gone, which `list`
    /// notices and repairs.
    fn write_index_if_changed(
        &self,
        entries: &[SessionSummary],
        previous: Option<&[SessionSummary]>,
    ) {
        if previous == Some(entries) {
            return;
        }
        if let Err(e) = index::write_index(&self.dir, entries) {
            tracing::warn!("cannot update the session index: {e}");
        }
    }

    /// Removes `<id>.json`; `Ok(false)` when it was not there.
    fn remove_session_file(&self, id: &str) -> Result<bool, SessionError> {
        let path = files::session_path(&self.dir, id);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let _ = files::sync_dir(&self.dir);
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(SessionError::io(
                format!("session {id}: cannot delete"),
                path,
                e,
            )),
        }
    }

    /// Removes temp files of interrupted writes. Call with the lock held: every writer holds
    /// it while its temp file exists, so any temp file seen now is a crash leftover.
    fn remove_temp_files(&self) -> Result<(), SessionError> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| SessionError::io("cannot list sessions in", &self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.to_str().is_some_and(files::is_temp_file_name) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }
}

/// The index brought in line with the directory.
struct Reconciled {
    /// Entries for exactly the parseable session files, newest first.
    entries: Vec<SessionSummary>,
    /// The index as it was on disk, when it was usable.
    previous: Option<Vec<SessionSummary>>,
    /// One line per session file that could not be used.
    problems: Vec<String>,
}

/// Ids of the sessions last updated before now − `days` (all of them for 0; unparseable
/// timestamps only for 0).
fn sessions_older_than(sessions: &[SessionSummary], days: u64) -> HashSet<String> {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let age = i64::try_from(days)
        .unwrap_or(i64::MAX)
        .saturating_mul(SECONDS_PER_DAY);
    let cutoff = now.saturating_sub(age);
    sessions
        .iter()
        .filter(|s| days == 0 || parse_timestamp(&s.updated_at).is_some_and(|(t, _)| t < cutoff))
        .map(|s| s.id.clone())
        .collect()
}

/// Serialized size of one message, without building the string.
fn json_len(message: &Message) -> u64 {
    struct Counter(u64);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Serializing plain data into a counter cannot fail; a failure would only undercount,
    // and the caller re-checks the final size.
    let _ = serde_json::to_writer(&mut counter, message);
    counter.0
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
