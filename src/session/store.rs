//! [`SessionStore`]: save, load, list, delete, trim and clean up sessions in one directory.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::files::{self, DirLock};
use super::index::{self, INDEX_FILE, IndexState, LOCK_FILE};
use super::journal;
use super::lock::{Holder, SessionLock};
use super::trim::{self, size_cut, without_oldest_groups};
use super::{
    MAX_SESSION_BYTES, ORIGIN_CLI, RunRecord, SaveReport, Session, SessionError, SessionList,
    SessionPage, SessionSummary, TrimOutcome, count_turns, new_session_id, validate_id,
};
use crate::llm::Message;
use crate::redact::Redactor;
use crate::util::timestamp::{now_rfc3339, parse_rfc3339};
use crate::util::{self, files::Permissions};

/// The holder named when `session delete|trim|cleanup` or a direct save holds a session.
const MAINTENANCE: &str = "odek session";

/// Seconds in a day, for `cleanup`.
const SECONDS_PER_DAY: i64 = 24 * 60 * 60;

/// The sessions directory `<home>/sessions` and the redactor applied to everything written.
#[derive(Clone)]
pub struct SessionStore {
    dir: PathBuf,
    redactor: Arc<Redactor>,
    size_limit: u64,
    /// The last index parsed by [`Self::list`] and the fingerprint of the file it came
    /// from (a server lists sessions again and again; the file rarely changes between).
    parsed_index: Arc<std::sync::Mutex<Option<ParsedIndex>>>,
}

/// An index as parsed, with the fingerprint of the file it was read from.
type ParsedIndex = (index::IndexFingerprint, Arc<[SessionSummary]>);

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
            parsed_index: Arc::default(),
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

    /// The redactor applied to everything written.
    pub(crate) fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    /// A new session with a fresh id and timestamps and its turns counted, started by the
    /// command line (set `origin` for other surfaces); not saved yet.
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
            provider: None,
            origin: Some(ORIGIN_CLI.to_string()),
            turns: count_turns(&messages),
            task: task.to_string(),
            messages,
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

    /// Writes `session` atomically and updates the index, as its writer: refused when
    /// another writer holds the session. Sets `updated_at` (and a missing `created_at`) and
    /// recounts turns. Only the written copy is redacted; the caller's session keeps its
    /// text. When the file would exceed 32 MiB the oldest message groups after the leading
    /// system messages are dropped, from the written copy and from `session` alike, and the
    /// report says how many. A journal beside the file is superseded and removed.
    pub fn save(&self, session: &mut Session) -> Result<SaveReport, SessionError> {
        validate_id(&session.id)?;
        let _held =
            SessionLock::acquire(&self.dir, &session.id, &Holder::this_process(MAINTENANCE))?;
        let mut on_disk = super::redaction::redacted_copy(session, &self.redactor);
        let report = self.write_snapshot(&mut on_disk, Some(&mut session.messages))?;
        session.updated_at = on_disk.updated_at;
        session.created_at = on_disk.created_at;
        session.turns = on_disk.turns;
        self.remove_journal(&session.id)?;
        Ok(report)
    }

    /// Writes an already redacted session as `<id>.json` (atomically) and updates the index.
    /// The caller holds the session's lock. Sets `updated_at` (and a missing `created_at`)
    /// and recounts turns; over the size cap, the oldest groups are dropped from `on_disk`
    /// and from `live` (the caller's unredacted messages, index-aligned) alike.
    pub(crate) fn write_snapshot(
        &self,
        on_disk: &mut Session,
        live: Option<&mut Vec<Message>>,
    ) -> Result<SaveReport, SessionError> {
        validate_id(&on_disk.id)?;
        on_disk.updated_at = now_rfc3339();
        if on_disk.created_at.is_empty() {
            on_disk.created_at = on_disk.updated_at.clone();
        }
        on_disk.turns = count_turns(&on_disk.messages);
        let (bytes, trimmed_messages) = self.serialize_within_limit(on_disk, live)?;
        let mut report = SaveReport {
            bytes_written: bytes.len() as u64,
            trimmed_messages,
            warnings: Vec::new(),
        };
        if trimmed_messages > 0 {
            report.warnings.push(format!(
                "session {} exceeded {} bytes on write — {trimmed_messages} oldest messages dropped to stay within the load cap",
                on_disk.id, self.size_limit
            ));
        }
        // The index lock is held from the temp file to the index update: `cleanup` removes
        // temp files only under it.
        let _index = self.index_lock(&on_disk.id)?;
        let file_name = format!("{}.json", on_disk.id);
        util::files::write_atomically(&self.dir.join(&file_name), &bytes, Permissions::Private)
            .map_err(|e| {
                let context = format!("session {}: cannot write", on_disk.id);
                SessionError::io(context, self.dir.join(&file_name), e)
            })?;
        if let Err(problem) = self.upsert_index_locked(on_disk.summary()) {
            report
                .warnings
                .push(self.give_up_on_index(&on_disk.id, &problem));
        }
        Ok(report)
    }

    /// Replaces (or adds) the index entry of a session; a failure becomes a warning.
    pub(crate) fn update_index(&self, summary: &SessionSummary, warnings: &mut Vec<String>) {
        let updated = self
            .index_lock(&summary.id)
            .and_then(|_lock| self.upsert_index_locked(summary.clone()));
        if let Err(problem) = updated {
            warnings.push(self.give_up_on_index(&summary.id, &problem));
        }
    }

    /// True when `<id>.json` is there (a valid id, not read).
    pub fn exists(&self, id: &str) -> bool {
        validate_id(id).is_ok() && files::session_path(&self.dir, id).is_file()
    }

    /// Loads a session as it stands: `<id>.json`, then its journal when a writer has one
    /// (so a session being written shows its latest saved batch). Validates the id, refuses
    /// files over 32 MiB before reading them, and checks that the file holds the session its
    /// name says. Never waits for a writer.
    pub fn load(&self, id: &str) -> Result<Session, SessionError> {
        Ok(self.load_with_journal(id)?.0)
    }

    /// [`Self::load`], with what the journal replay found. A gap between snapshot and journal
    /// (the writer folded between the two reads) is retried once with a fresh snapshot.
    pub(super) fn load_with_journal(
        &self,
        id: &str,
    ) -> Result<(Session, journal::Replay), SessionError> {
        let mut attempt = 0;
        loop {
            let mut session = self.load_snapshot(id)?;
            let replay = journal::replay(&self.dir, &mut session)?;
            attempt += 1;
            if !replay.gap || attempt > 1 {
                return Ok((session, replay));
            }
        }
    }

    fn load_snapshot(&self, id: &str) -> Result<Session, SessionError> {
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

    fn remove_journal(&self, id: &str) -> Result<(), SessionError> {
        journal::remove(&self.dir, id).map_err(|e| {
            SessionError::io(
                format!("session {id}: cannot remove"),
                journal::journal_path(&self.dir, id),
                e,
            )
        })
    }

    /// All sessions, most recently updated first, from the index. One `readdir` checks that
    /// the index names exactly the files present; when it does not (or it is missing or
    /// unreadable) it is reconciled with the directory and rewritten. Unusable files are
    /// reported in `problems` by name and never hide the other sessions.
    pub fn list(&self) -> Result<SessionList, SessionError> {
        if index::stamp_is_current(&self.dir)
            && let Some(entries) = self.current_index()
        {
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
                sessions: entries.into(),
                problems: Vec::new(),
            });
        }
        self.rebuild_index()
    }

    /// The index's entries, newest first: the ones parsed last time when the file has not
    /// been replaced since, else parsed now (and kept). `None` when there is no usable index.
    fn current_index(&self) -> Option<Arc<[SessionSummary]>> {
        let fingerprint = index::index_fingerprint(&self.dir)?;
        let mut parsed = self
            .parsed_index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, entries)) = parsed.as_ref()
            && *seen == fingerprint
        {
            return Some(Arc::clone(entries));
        }
        // The fingerprint was taken before reading: a file replaced meanwhile only makes the
        // next call parse again.
        let IndexState::Entries(mut entries) = index::read_index(&self.dir) else {
            return None;
        };
        index::sort_newest_first(&mut entries);
        let entries: Arc<[SessionSummary]> = entries.into();
        *parsed = Some((fingerprint, Arc::clone(&entries)));
        Some(entries)
    }

    /// The run records dated at or after `since` (Unix seconds; `None` = all), per
    /// session, newest session first; sessions without such a record are left out, and
    /// sessions not updated since are never opened. Only the figures are decoded, never the
    /// transcript. Tokens a session's totals hold beyond its records (a session saved
    /// before run records existed, or by the Go original) come as one record without a
    /// run. Unusable files are reported in `problems` and skipped.
    pub fn run_records(&self, since: Option<i64>) -> Result<RunRecords, SessionError> {
        let list = self.list()?;
        let mut out = RunRecords {
            problems: list.problems,
            ..RunRecords::default()
        };
        let recent =
            |at: &str| since.is_none_or(|s| parse_rfc3339(at).is_some_and(|(t, _)| t >= s));
        for entry in list.sessions.iter().filter(|e| recent(&e.updated_at)) {
            match files::read_session_json::<UsageFields>(&self.dir, &entry.id, self.size_limit) {
                Ok(fields) => {
                    let mut runs = fields.into_records();
                    runs.retain(|r| recent(&r.at));
                    if !runs.is_empty() {
                        out.sessions.push((entry.id.clone(), runs));
                    }
                }
                Err(e) => out.problems.push(e.to_string()),
            }
        }
        Ok(out)
    }

    /// The `limit` most recently updated sessions and how many there are in all. When the
    /// directory has not changed since the index was written, only those entries are read
    /// from it (fast with thousands of sessions); otherwise this is [`Self::list`] cut short.
    pub fn list_recent(&self, limit: usize) -> Result<SessionPage, SessionError> {
        self.list_recent_where(limit, |_| true)
    }

    /// [`SessionStore::list_recent`] of the sessions `keep` accepts (`total` still counts
    /// every session).
    pub fn list_recent_where(
        &self,
        limit: usize,
        keep: fn(&SessionSummary) -> bool,
    ) -> Result<SessionPage, SessionError> {
        if index::stamp_is_current(&self.dir)
            && let Some((sessions, total)) = index::read_index_head_where(&self.dir, limit, keep)
        {
            return Ok(SessionPage {
                sessions,
                total,
                problems: Vec::new(),
            });
        }
        let SessionList { sessions, problems } = self.list()?;
        Ok(SessionPage {
            sessions: sessions
                .iter()
                .filter(|s| keep(s))
                .take(limit)
                .cloned()
                .collect(),
            total: sessions.len(),
            problems,
        })
    }

    /// The most recently updated session, if any.
    pub fn latest(&self) -> Result<Option<SessionSummary>, SessionError> {
        Ok(self.list_recent(1)?.sessions.into_iter().next())
    }

    /// The most recently updated session started by the command line (`continue` and `repl`
    /// without `--id` resume it, never a chat of the Telegram bot or a run of `serve`).
    pub fn latest_cli(&self) -> Result<Option<SessionSummary>, SessionError> {
        if index::stamp_is_current(&self.dir)
            && let Some(found) = index::first_matching(&self.dir, SessionSummary::is_cli)
        {
            return Ok(found);
        }
        Ok(self.list()?.sessions.iter().find(|s| s.is_cli()).cloned())
    }

    /// Deletes `<id>.json`, its journal and its index entry, as the session's writer
    /// (refused while another writer holds it). Idempotent: `Ok(false)` when there was no
    /// such file.
    pub fn delete(&self, id: &str) -> Result<bool, SessionError> {
        validate_id(id)?;
        // Only standard ids name sessions: `index` or another program's file is not one.
        if !super::is_standard_id(id) {
            return Err(SessionError::InvalidId {
                shown_id: id.to_string(),
                reason: "not a session id (session ids look like YYYYMMDD-<32 hex digits>)",
            });
        }
        if !self.dir.is_dir() {
            return Ok(false);
        }
        let held = SessionLock::acquire(&self.dir, id, &Holder::this_process(MAINTENANCE))?;
        let existed = self.remove_session_files(id)?;
        {
            let _index = self.index_lock(id)?;
            self.remove_from_index_locked(&HashSet::from([id.to_string()]));
        }
        held.remove_file();
        self.forget_checkpoints(&[id.to_string()]);
        Ok(existed)
    }

    /// The checkpoints of session `id`, a rewind recorded in `turn` (its latest): what
    /// `odek rewind`, the REPL and `odek serve` read and rewind.
    pub fn checkpoints(
        &self,
        id: &str,
        turn: u32,
    ) -> std::sync::Arc<crate::checkpoint::Checkpoints> {
        crate::checkpoint::of_session(self.dir.parent().unwrap_or(&self.dir), id, turn)
    }

    /// The checkpoints of deleted sessions go with them, and the pre-images only they held
    /// (see docs/UNDO.md); a failure is a warning, never a failed delete.
    fn forget_checkpoints(&self, ids: &[String]) {
        let Some(home) = self.dir.parent() else {
            return;
        };
        let root = crate::checkpoint::root(home);
        if !root.is_dir() {
            return;
        }
        if let Err(e) = crate::checkpoint::forget_sessions(&root, ids) {
            tracing::warn!("could not remove the checkpoints of deleted sessions: {e}");
        }
    }

    /// Names a session (the index lists the name instead of the task), as its writer:
    /// refused while another writer holds it. The name is redacted like the task.
    pub fn rename(&self, id: &str, name: &str) -> Result<SessionSummary, SessionError> {
        validate_id(id)?;
        let _held = SessionLock::acquire(&self.dir, id, &Holder::this_process(MAINTENANCE))?;
        let mut session = self.load(id)?;
        let mut name = name.to_string();
        super::redaction::redact_text(&self.redactor, &mut name);
        session.name = Some(name);
        self.write_snapshot(&mut session, None)?;
        self.remove_journal(id)?;
        Ok(session.summary())
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
        let _held = SessionLock::acquire(&self.dir, id, &Holder::this_process(MAINTENANCE))?;
        let mut session = self.load(id)?;
        let before = session.messages.len();
        let kept = trim::trim_transcript(&session.messages, keep);
        if kept.len() == before {
            return Ok(TrimOutcome {
                before,
                after: before,
            });
        }
        session.messages = kept;
        self.write_snapshot(&mut session, None)?;
        self.remove_journal(id)?;
        Ok(TrimOutcome {
            before,
            after: session.messages.len(),
        })
    }

    /// Deletes every session last updated more than `older_than_days` days ago (0 = all
    /// sessions) and any temp file left by a crashed write. Sessions held by a writer are
    /// skipped, as are files that cannot be parsed (they are reported by `list`); lock files
    /// of sessions that no longer exist are removed.
    pub fn cleanup(&self, older_than_days: u64) -> Result<Cleanup, SessionError> {
        let mut outcome = Cleanup::default();
        if !self.dir.is_dir() {
            return Ok(outcome);
        }
        // Decide under the lock, so a session saved meanwhile is judged by its new time.
        let _lock = self.index_lock("cleanup")?;
        let Reconciled {
            mut entries,
            previous,
            ..
        } = self.reconcile_locked()?;
        let holder = Holder::this_process(MAINTENANCE);
        let mut removed = HashSet::new();
        for id in sessions_older_than(&entries, older_than_days) {
            let held = match SessionLock::acquire(&self.dir, &id, &holder) {
                Ok(held) => held,
                Err(SessionError::Busy { .. }) => {
                    outcome.skipped_busy.push(id);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if self.remove_session_files(&id)? {
                outcome.deleted += 1;
            }
            held.remove_file();
            removed.insert(id);
        }
        self.remove_leftovers()?;
        entries.retain(|e| !removed.contains(&e.id));
        self.write_index_if_changed(&entries, previous.as_deref());
        if !removed.is_empty() {
            self.forget_checkpoints(&removed.iter().cloned().collect::<Vec<_>>());
        }
        Ok(outcome)
    }

    /// Serializes `on_disk`, dropping the oldest message groups (from it and from `live`,
    /// identically) when it is over the size limit. Returns the bytes and the number of
    /// messages dropped.
    fn serialize_within_limit(
        &self,
        on_disk: &mut Session,
        live: Option<&mut Vec<Message>>,
    ) -> Result<(Vec<u8>, usize), SessionError> {
        let bytes = self.serialize(on_disk)?;
        if bytes.len() as u64 <= self.size_limit {
            return Ok((bytes, 0));
        }
        let too_large = |size: u64| SessionError::TooLargeToSave {
            id: on_disk.id.clone(),
            size,
            limit: self.size_limit,
        };
        let Some(live) = live else {
            return Err(too_large(bytes.len() as u64));
        };
        let sizes: Vec<u64> = on_disk.messages.iter().map(json_len).collect();
        let excess = bytes.len() as u64 - self.size_limit;
        let cut = size_cut(&on_disk.messages, &sizes, excess);
        let before = on_disk.messages.len();
        on_disk.messages = without_oldest_groups(std::mem::take(&mut on_disk.messages), cut);
        *live = without_oldest_groups(std::mem::take(live), cut);
        on_disk.turns = count_turns(&on_disk.messages);
        let bytes = self.serialize(on_disk)?;
        if bytes.len() as u64 > self.size_limit {
            return Err(too_large(bytes.len() as u64));
        }
        Ok((bytes, before - on_disk.messages.len()))
    }

    fn serialize(&self, session: &Session) -> Result<Vec<u8>, SessionError> {
        serde_json::to_vec(session).map_err(|source| SessionError::Serialize {
            id: session.id.clone(),
            source,
        })
    }

    /// Creates the directory if needed and takes the lock of the index (held briefly by every
    /// index update); `subject` names the session (or operation) in errors.
    fn index_lock(&self, subject: &str) -> Result<DirLock, SessionError> {
        util::files::ensure_dir(&self.dir).map_err(|e| {
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
        let Ok(_lock) = self.index_lock("index") else {
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
        let lock = self.index_lock("index");
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
        Ok(SessionList {
            sessions: sessions.into(),
            problems,
        })
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
    fn upsert_index_locked(&self, summary: SessionSummary) -> Result<(), SessionError> {
        let mut entries = match index::read_index(&self.dir) {
            IndexState::Entries(entries) => entries,
            IndexState::Missing | IndexState::Unusable(_) => self.reconcile_locked()?.entries,
        };
        entries.retain(|e| e.id != summary.id);
        entries.push(summary);
        index::sort_newest_first(&mut entries);
        index::write_index(&self.dir, &entries)
            .map_err(|e| SessionError::io("cannot write", self.dir.join(INDEX_FILE), e))
    }

    /// After a failed index update the index may be stale in a way `list` cannot see (an old
    /// `updated_at`); removing it forces a rebuild on the next `list`. Returns the warning.
    fn give_up_on_index(&self, id: &str, problem: &SessionError) -> String {
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

    /// Removes `<id>.json` and its journal; `Ok(false)` when there was no session file.
    fn remove_session_files(&self, id: &str) -> Result<bool, SessionError> {
        self.remove_journal(id)?;
        // Its audit log goes with it (what reached the model is as private as the transcript).
        let audit = super::audit::audit_path(&self.dir, id);
        if let Err(e) = std::fs::remove_file(&audit)
            && e.kind() != io::ErrorKind::NotFound
        {
            return Err(SessionError::io(
                format!("session {id}: cannot delete"),
                audit,
                e,
            ));
        }
        let path = files::session_path(&self.dir, id);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                let _ = util::files::sync_dir(&self.dir);
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

    /// Removes temp files of interrupted writes, and lock files of sessions that have no file
    /// (a REPL that never saved, a crash during `delete`) and nobody holds. Call with the
    /// index lock held: every snapshot writer holds it while its temp file exists, so any
    /// temp file seen now is a crash leftover.
    fn remove_leftovers(&self) -> Result<(), SessionError> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| SessionError::io("cannot list sessions in", &self.dir, e))?;
        let holder = Holder::this_process(MAINTENANCE);
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if util::files::is_temp_file_name(name) {
                let _ = std::fs::remove_file(entry.path());
            } else if let Some(id) = name.strip_suffix(".lock")
                && super::is_standard_id(id)
                && !files::session_path(&self.dir, id).exists()
                && let Ok(held) = SessionLock::acquire(&self.dir, id, &holder)
            {
                held.remove_file();
            }
        }
        Ok(())
    }
}

/// What [`SessionStore::cleanup`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Sessions deleted.
    pub deleted: usize,
    /// Sessions old enough that were left alone because a writer holds them.
    pub skipped_busy: Vec<String>,
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
    let now = crate::util::timestamp::now_unix_seconds();
    let age = i64::try_from(days)
        .unwrap_or(i64::MAX)
        .saturating_mul(SECONDS_PER_DAY);
    let cutoff = now.saturating_sub(age);
    sessions
        .iter()
        .filter(|s| days == 0 || parse_rfc3339(&s.updated_at).is_some_and(|(t, _)| t < cutoff))
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
mod tests;

/// What [`SessionStore::run_records`] found.
#[derive(Debug, Default)]
pub struct RunRecords {
    /// Per session (id), its run records.
    pub sessions: Vec<(String, Vec<RunRecord>)>,
    /// Files that could not be read, by name.
    pub problems: Vec<String>,
}

/// The figures of a session file; the transcript is skipped unread.
#[derive(serde::Deserialize)]
struct UsageFields {
    #[serde(default)]
    created_at: String,
    #[serde(default)]
    updated_at: String,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_tokens: u64,
    #[serde(default)]
    runs: Vec<RunRecord>,
    #[serde(default)]
    model: String,
}

impl UsageFields {
    /// The run records, plus one record without a run for the tokens the session's totals
    /// hold beyond them (a session saved before run records existed, or by the Go
    /// original): dated by its last update when it has no record at all, else by its
    /// creation (those tokens came before its first record).
    fn into_records(mut self) -> Vec<RunRecord> {
        let sum = |f: fn(&RunRecord) -> u64| self.runs.iter().map(f).sum::<u64>();
        let at = if self.runs.is_empty() {
            std::mem::take(&mut self.updated_at)
        } else {
            std::mem::take(&mut self.created_at)
        };
        let earlier = RunRecord {
            at,
            input_tokens: self.input_tokens.saturating_sub(sum(|r| r.input_tokens)),
            output_tokens: self.output_tokens.saturating_sub(sum(|r| r.output_tokens)),
            cached_tokens: self.cached_tokens.saturating_sub(sum(|r| r.cached_tokens)),
            ..RunRecord::default()
        };
        if earlier.input_tokens + earlier.output_tokens > 0 {
            self.runs.insert(0, earlier);
        }
        let model = Some(self.model).filter(|m| !m.is_empty());
        for run in self.runs.iter_mut().filter(|r| r.model.is_none()) {
            run.model.clone_from(&model);
        }
        self.runs
    }
}
