//! The session's audit log of ingested content: every externally derived block odek put into
//! the model's context on its own (a fresh plan render, a compaction digest) is appended to
//! `<home>/sessions/audit/<session id>.jsonl`, redacted.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::engine::{EngineEvent, Observer};
use crate::redact::Redactor;

/// Appends ingested content to one session's audit file (one log per turn of a session; the
/// file is opened on the first record and kept open for the turn).
pub struct AuditLog {
    dir: PathBuf,
    redactor: Arc<Redactor>,
    session_id: String,
    file: Mutex<Option<File>>,
}

impl AuditLog {
    /// The audit log of session `session_id`, under `<sessions dir>/audit`.
    pub fn new(sessions_dir: &Path, redactor: Arc<Redactor>, session_id: &str) -> Self {
        AuditLog {
            dir: sessions_dir.join("audit"),
            redactor,
            session_id: session_id.to_string(),
            file: Mutex::new(None),
        }
    }

    fn open(&self) -> std::io::Result<File> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(self.dir.join(format!("{}.jsonl", self.session_id)))
    }

    fn record(&self, source: &str, content: &str) -> std::io::Result<()> {
        let line = serde_json::json!({
            "timestamp": time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            "source": source,
            "bytes": content.len(),
            "sha256": crate::random::hex(&Sha256::digest(content.as_bytes())),
            "content": self.redactor.redact(content),
        });
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if file.is_none() {
            *file = Some(self.open()?);
        }
        match file.as_mut() {
            Some(f) => f.write_all(format!("{line}\n").as_bytes()),
            None => Ok(()),
        }
    }
}

impl Observer for AuditLog {
    fn on_event(&self, event: &EngineEvent<'_>) {
        if let EngineEvent::ContentIngested { source, content } = event
            && let Err(e) = self.record(source, content)
        {
            tracing::warn!("could not write the audit log: {e}");
        }
    }
}
