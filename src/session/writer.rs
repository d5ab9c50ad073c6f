//! [`SessionWriter`]: the one writer of a session while it is held.
//!
//! It holds the session's lock, a redacted mirror of what is on disk, and the journal. A
//! turn goes: [`SessionWriter::begin_turn`] (a new session's first snapshot, the index entry
//! refreshed), one [`SessionWriter::save_delta`] per save of the engine (one journal line: the
//! batch's edits, redacted once), and [`SessionWriter::finish_turn`] (the journal folded into
//! a complete `<id>.json` that the Go original can read, the index entry refreshed). Saving a
//! batch therefore costs the size of the batch; only the turn's end pays for the history.

use std::path::Path;

use super::id::validate_id;
use super::journal::{self, JournalFile, JournalLine};
use super::lock::{Holder, SessionLock};
use super::redaction::{redact_text, redact_together, redacted_copy};
use super::{RunRecord, SaveReport, Session, SessionError, SessionStore, count_turns};
use crate::llm::{Message, Role};
use crate::transcript::{self, Edit, TranscriptDelta};
use crate::util::timestamp::now_rfc3339;

/// A journal is folded into the file once it is larger than this and than twice the file,
/// so folding stays a small share of the saving however long a turn runs.
const MIN_FOLD_BYTES: u64 = 1024 * 1024;

/// A batch's edits that do not fit the transcript as saved (the whole transcript is then
/// rewritten at the end of the turn).
#[derive(Debug, thiserror::Error)]
enum Mismatch {
    /// An edit refers to messages the saved transcript does not have.
    #[error(transparent)]
    Edit(#[from] transcript::EditError),
    /// The lengths differ after the edits.
    #[error("{saved} messages saved, {expected} expected")]
    Length { saved: usize, expected: usize },
}

impl crate::error::Classified for Mismatch {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Internal
    }
}

/// The writer of one session; see the module docs. Dropping it folds what is still only in
/// the journal and releases the lock (a session never written leaves no lock file behind).
#[derive(Debug)]
pub struct SessionWriter {
    store: SessionStore,
    lock: SessionLock,
    /// What is on disk (snapshot plus journal), redacted.
    mirror: Session,
    journal: Option<JournalFile>,
    /// Journal size at which it is folded into the file in the middle of a turn.
    fold_at: u64,
    on_disk: bool,
    /// A delta did not fit the mirror (a bug): the turn's end rewrites the session from the
    /// caller's messages instead of trusting the mirror.
    diverged: bool,
    /// Tool results arrive redacted with this store's redactor (see
    /// [`SessionWriter::trust_tool_result_redaction`]).
    tool_results_redacted: bool,
    /// The journal line being written, kept between saves so a save allocates nothing for it.
    line: Vec<u8>,
}

/// A line buffer larger than this is not kept for the next save (a batch that reset the
/// whole transcript).
const KEPT_LINE_BYTES: usize = 64 * 1024;

/// The store hands out its sessions' writers (here, beside the writer: the store itself
/// knows nothing of writing turns).
impl SessionStore {
    /// Takes a new session for writing: its lock is held until the writer is dropped. Nothing
    /// is written before the writer's first [`SessionWriter::begin_turn`].
    pub fn create(&self, session: Session, holder: &Holder) -> Result<SessionWriter, SessionError> {
        let lock = SessionLock::acquire(self.dir(), &session.id, holder)?;
        let mirror = redacted_copy(&session, self.redactor());
        Ok(SessionWriter::new(self.clone(), lock, mirror, false))
    }

    /// Takes a saved session for writing, or refuses at once when another writer holds it
    /// ([`SessionError::Busy`]). A journal left by a writer that crashed is folded in now.
    pub fn open(&self, id: &str, holder: &Holder) -> Result<SessionWriter, SessionError> {
        validate_id(id)?;
        let lock = SessionLock::acquire(self.dir(), id, holder)?;
        let (session, replay) = self.load_with_journal(id)?;
        if let Some(problem) = &replay.problem {
            tracing::warn!("session {id}: journal replay stopped early: {problem}");
        }
        let mut writer = SessionWriter::new(self.clone(), lock, session, true);
        if replay.present {
            writer.recover()?;
        }
        Ok(writer)
    }
}

impl SessionWriter {
    pub(crate) fn new(
        store: SessionStore,
        lock: SessionLock,
        mirror: Session,
        on_disk: bool,
    ) -> Self {
        SessionWriter {
            store,
            lock,
            mirror,
            journal: None,
            fold_at: MIN_FOLD_BYTES,
            on_disk,
            diverged: false,
            tool_results_redacted: false,
            line: Vec::new(),
        }
    }

    /// Declares that the content of every tool result this writer will be given was already
    /// redacted with the same redactor as the store's (the engine redacts each tool output
    /// before it enters the transcript, and the runtime gives engine and store one
    /// redactor), so [`Self::save_delta`] redacts it once instead of twice. Everything else
    /// — user and assistant text, reasoning, tool-call arguments, the plan — is always
    /// redacted here.
    pub fn trust_tool_result_redaction(&mut self) {
        self.tool_results_redacted = true;
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.mirror.id
    }

    /// The session as saved (redacted): metadata, messages, plan state.
    pub fn session(&self) -> &Session {
        &self.mirror
    }

    /// Number of saved messages.
    pub fn len(&self) -> usize {
        self.mirror.messages.len()
    }

    /// True when no message is saved.
    pub fn is_empty(&self) -> bool {
        self.mirror.messages.is_empty()
    }

    /// True once the session has a file on disk.
    pub fn is_saved(&self) -> bool {
        self.on_disk
    }

    /// Replaces the task label (a REPL session is named by its first input).
    pub fn set_task(&mut self, task: &str) {
        let mut task = task.to_string();
        redact_text(self.store.redactor(), &mut task);
        self.mirror.task = task;
    }

    /// Records how this process runs the session's tools: whether shell commands are
    /// sandboxed, and what (if anything) allowed every class without asking. An override
    /// stays recorded once made.
    pub fn set_posture(&mut self, sandbox: bool, dangerous_override: Option<&str>) {
        self.mirror.sandbox = Some(sandbox);
        if let Some(by) = dangerous_override {
            self.mirror.dangerous_override = Some(by.to_string());
        }
    }

    /// Moves the session to another provider or model (`continue --provider`): the next
    /// snapshot records them. When the provider changes, what the old one kept for itself
    /// (thinking signatures, encrypted reasoning, tool-call extras) is dropped, as no other
    /// provider can read it; returns how many messages lost theirs.
    pub fn retarget(&mut self, provider: Option<&str>, model: &str, base_url: &str) -> usize {
        let mut dropped = 0;
        if self.mirror.provider.as_deref() != provider {
            for message in &mut self.mirror.messages {
                dropped += usize::from(message.provider_state.take().is_some());
            }
        }
        self.mirror.provider = provider.map(str::to_string);
        self.mirror.model = model.to_string();
        self.mirror.base_url = Some(base_url.to_string());
        // Saved with the turn's closing snapshot: a turn that never ends leaves the session
        // on its old provider, state and all.
        dropped
    }

    /// Saves the session now, between turns (a switch of model): a session not yet on disk
    /// is saved by its first turn.
    pub fn save_now(&mut self) -> Result<SaveReport, SessionError> {
        if !self.on_disk {
            return Ok(SaveReport::default());
        }
        self.mirror.updated_at = now_rfc3339();
        self.fold(None)
    }

    /// The start of a turn: a new session gets its first snapshot; the index entry is
    /// brought up to date (the only index write until the turn ends).
    pub fn begin_turn(&mut self) -> Result<SaveReport, SessionError> {
        if !self.on_disk {
            return self.fold(None);
        }
        self.mirror.updated_at = now_rfc3339();
        let mut report = SaveReport::default();
        self.store
            .update_index(&self.mirror.summary(), &mut report.warnings);
        Ok(report)
    }

    /// Saves one delta of the engine: its edits (redacted here, once) and plan state as one
    /// synced journal line. A delta that does not fit what is saved is not journaled; the
    /// turn's end then rewrites the session whole.
    pub fn save_delta(&mut self, delta: TranscriptDelta) -> Result<(), SessionError> {
        if delta.is_empty() || self.diverged {
            return Ok(());
        }
        let expected_len = delta.len;
        let line = self.journal_line(delta);
        let mut json = std::mem::take(&mut self.line);
        json.clear();
        if json.capacity() > KEPT_LINE_BYTES {
            json = Vec::new();
        }
        serde_json::to_writer(&mut json, &line).map_err(|source| SessionError::Serialize {
            id: self.mirror.id.clone(),
            source,
        })?;
        json.push(b'\n');
        let written = self.journal_and_apply(line, &json, expected_len);
        self.line = json;
        written
    }

    /// The second half of [`Self::save_delta`]: `line`, encoded as `json` (newline included),
    /// applied to the mirror and appended to the journal.
    fn journal_and_apply(
        &mut self,
        line: JournalLine,
        json: &[u8],
        expected_len: usize,
    ) -> Result<(), SessionError> {
        if let Err(e) = self.apply_to_mirror(line.edits, expected_len) {
            tracing::warn!(
                "session {}: a save did not fit the saved transcript ({e}); it is rewritten whole at the end of the turn",
                self.mirror.id
            );
            self.diverged = true;
            return Ok(());
        }
        if line.plan.is_some() {
            self.mirror.plan = line.plan;
        }
        self.mirror.revision = line.rev;
        self.mirror.updated_at = line.at;
        if let Err(e) = self.append_line(json) {
            // The journal may now end in a torn line: rewrite the session whole instead.
            self.journal = None;
            self.fold(None).map_err(|_| e)?;
            return Ok(());
        }
        if self.journal_bytes() > self.fold_at {
            self.fold_within_limit()?;
        }
        Ok(())
    }

    /// The journal line of `delta`: the next revision, now, and the delta redacted.
    fn journal_line(&self, mut delta: TranscriptDelta) -> JournalLine {
        let skip_tool_results = self.tool_results_redacted;
        let mut untrusted: Vec<&mut Message> = delta
            .edits
            .iter_mut()
            .flat_map(Edit::messages_mut)
            .filter(|message| !(skip_tool_results && message.role == Role::Tool))
            .collect();
        redact_together(self.store.redactor(), &mut untrusted, delta.plan.as_mut());
        JournalLine {
            rev: self.mirror.revision + 1,
            at: now_rfc3339(),
            edits: delta.edits,
            plan: delta.plan,
        }
    }

    /// Applies redacted edits to the mirror and checks the length the engine expects.
    fn apply_to_mirror(&mut self, edits: Vec<Edit>, expected_len: usize) -> Result<(), Mismatch> {
        transcript::apply_all(&mut self.mirror.messages, edits)?;
        match self.mirror.messages.len() {
            n if n == expected_len => Ok(()),
            saved => Err(Mismatch::Length {
                saved,
                expected: expected_len,
            }),
        }
    }

    /// The end of a turn: the run's record kept (its tokens added to the session's
    /// totals), the journal folded into a complete snapshot, the index entry refreshed.
    /// When the file would exceed the size cap, the oldest message groups are dropped from
    /// it and from `messages` (the caller's copy of the transcript) alike.
    pub fn finish_turn(
        &mut self,
        messages: &mut Vec<Message>,
        mut run: RunRecord,
    ) -> Result<SaveReport, SessionError> {
        if self.diverged || self.mirror.messages.len() != messages.len() {
            let mut rebuilt = self.mirror.clone();
            rebuilt.messages = messages.clone();
            rebuilt.plan = None;
            let redacted = redacted_copy(&rebuilt, self.store.redactor());
            self.mirror.messages = redacted.messages;
            self.diverged = false;
        }
        self.mirror.input_tokens += run.input_tokens;
        self.mirror.output_tokens += run.output_tokens;
        self.mirror.cached_tokens += run.cached_tokens;
        if run.at.is_empty() {
            run.at = now_rfc3339();
        }
        self.mirror.runs.push(run);
        self.record_turn_plan();
        self.fold(Some(messages))
    }

    /// Notes the plan as this turn leaves it, when it differs from the last one noted (a
    /// fork at this turn takes it).
    fn record_turn_plan(&mut self) {
        let turn = super::count_turns(&self.mirror.messages);
        let plan = self.mirror.plan.clone();
        if self.mirror.turn_plans.last().map(|t| &t.plan) != Some(&plan) {
            self.mirror.turn_plans.push(super::TurnPlan { turn, plan });
        }
    }

    fn journal_bytes(&self) -> u64 {
        self.journal.as_ref().map_or(0, JournalFile::bytes)
    }

    /// Appends one line (newline included), creating the journal on the first.
    fn append_line(&mut self, json: &[u8]) -> Result<(), SessionError> {
        let dir = self.store.dir();
        let id = &self.mirror.id;
        let written = match self.journal.as_mut() {
            Some(journal) => journal.append(json),
            None => JournalFile::create(dir, id).and_then(|mut journal| {
                let appended = journal.append(json);
                self.journal = Some(journal);
                appended
            }),
        };
        written.map_err(|e| {
            SessionError::io(
                format!("session {id}: cannot write"),
                journal::journal_path(dir, id),
                e,
            )
        })
    }

    /// Folds a journal left by a writer that crashed into the snapshot (when a session is
    /// opened), dropping the oldest groups if it no longer fits the size cap.
    pub(crate) fn recover(&mut self) -> Result<(), SessionError> {
        let mut scratch = self.mirror.messages.clone();
        for w in self.fold(Some(&mut scratch))?.warnings {
            tracing::warn!("{w}");
        }
        Ok(())
    }

    /// A fold in the middle of a turn. When the file would exceed the size cap it is put off
    /// until the journal has doubled (only the turn's end may drop messages: the caller's
    /// copy must drop them too), so a session over the cap is not re-serialised per batch.
    fn fold_within_limit(&mut self) -> Result<(), SessionError> {
        match self.fold(None) {
            Err(SessionError::TooLargeToSave { .. }) => {
                self.fold_at = 2 * self.journal_bytes();
                Ok(())
            }
            other => other.map(|_| ()),
        }
    }

    /// Writes the mirror as the complete snapshot, removes the journal, updates the index.
    fn fold(&mut self, live: Option<&mut Vec<Message>>) -> Result<SaveReport, SessionError> {
        let report = self.store.write_snapshot(&mut self.mirror, live)?;
        self.on_disk = true;
        self.fold_at = MIN_FOLD_BYTES.max(2 * report.bytes_written);
        let had_journal = match self.journal.take() {
            // The snapshot just synced holds every line: the journal's pending sync is not made.
            Some(journal) => {
                journal.discard();
                true
            }
            None => false,
        };
        if had_journal || self.journal_exists() {
            journal::remove(self.store.dir(), &self.mirror.id).map_err(|e| {
                SessionError::io(
                    format!("session {}: cannot remove", self.mirror.id),
                    journal::journal_path(self.store.dir(), &self.mirror.id),
                    e,
                )
            })?;
        }
        self.mirror.turns = count_turns(&self.mirror.messages);
        Ok(report)
    }

    fn journal_exists(&self) -> bool {
        journal_file_exists(self.store.dir(), &self.mirror.id)
    }
}

fn journal_file_exists(dir: &Path, id: &str) -> bool {
    journal::journal_path(dir, id).exists()
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        if self.journal.is_some()
            && let Err(e) = self.fold(None)
        {
            tracing::warn!(
                "session {}: the journal could not be folded in ({e}); the next writer will",
                self.mirror.id
            );
        }
        if !self.on_disk {
            self.lock.remove_file();
        }
    }
}

#[cfg(test)]
mod tests;
