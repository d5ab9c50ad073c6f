//! The session's audit log of ingested content: every externally derived block that entered
//! the model's context — a tool's wrapped output, a wrapped attachment of the input, a fresh
//! plan render, a compaction digest — is appended to
//! `<home>/sessions/audit/<session id>.jsonl`, redacted, with the turn and model call it
//! entered in. `odek audit` reads it back.

use std::borrow::Cow;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest, Sha256};

use crate::engine::{EngineEvent, Observer};
use crate::redact::Redactor;
use crate::session::audit::{AuditLine, audit_path};

/// Appends ingested content to one session's audit file (one log per turn of a session; the
/// file is opened on the first record and kept open for the turn).
pub struct AuditLog {
    path: PathBuf,
    redactor: Arc<Redactor>,
    turn: u32,
    file: Mutex<AuditFile>,
}

/// The open file and the line being written (kept between records: a record allocates
/// nothing for its line).
#[derive(Default)]
struct AuditFile {
    file: Option<File>,
    line: Vec<u8>,
}

/// A line buffer larger than this is not kept for the next record.
const KEPT_LINE_BYTES: usize = 64 * 1024;

use crate::engine::IMAGE_SOURCE;

/// An image of the input (a `data:` URL) is logged by its size and hash, its text only as
/// `data:image/png;base64,… (N bytes)`.
fn image_note(url: &str) -> String {
    let head = url.split_once(',').map_or("data:", |(head, _)| head);
    let head: String = head.chars().take(64).collect();
    format!("{head},… ({} bytes)", url.len())
}

impl AuditLog {
    /// The audit log of turn `turn` (1-based) of session `session_id`.
    pub fn new(sessions_dir: &Path, redactor: Arc<Redactor>, session_id: &str, turn: u32) -> Self {
        AuditLog {
            path: audit_path(sessions_dir, session_id),
            redactor,
            turn,
            file: Mutex::new(AuditFile::default()),
        }
    }

    fn open(&self) -> std::io::Result<File> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.path)
    }

    fn record(&self, iteration: u32, source: &str, content: &str) -> std::io::Result<()> {
        let timestamp = crate::util::timestamp::now_rfc3339_precise();
        let sha256 = crate::util::hex::encode(&Sha256::digest(content.as_bytes()));
        let shown = if source == IMAGE_SOURCE {
            Cow::Owned(image_note(content))
        } else {
            self.redactor.redact(content)
        };
        let line = AuditLine {
            timestamp: &timestamp,
            turn: Some(self.turn),
            iteration: Some(iteration),
            source: &self.redactor.redact(source),
            bytes: content.len(),
            sha256: &sha256,
            content: &shown,
        };
        let mut out = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let AuditFile { file, line: buf } = &mut *out;
        buf.clear();
        if buf.capacity() > KEPT_LINE_BYTES {
            *buf = Vec::new();
        }
        line.write_to(buf).map_err(std::io::Error::other)?;
        if file.is_none() {
            *file = Some(self.open()?);
        }
        match file.as_mut() {
            Some(f) => f.write_all(buf),
            None => Ok(()),
        }
    }
}

impl Observer for AuditLog {
    fn on_event(&self, event: &EngineEvent<'_>) {
        let written = match event {
            EngineEvent::ContentIngested {
                iteration,
                source,
                content,
            } => self.record(*iteration, source, content),
            EngineEvent::Hook { iteration, report } => self.record(
                *iteration,
                &format!("hook:{}", report.event.as_str()),
                &hook_line(report),
            ),
            _ => Ok(()),
        };
        if let Err(e) = written {
            tracing::warn!("could not write the audit log: {e}");
        }
    }
}

/// A hook's audit line: what ran, what it decided, how long it took (never its output).
pub(crate) fn hook_line(report: &crate::hooks::HookReport) -> String {
    format!(
        "{} ({} ms): {}",
        report.decision, report.duration_ms, report.command
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::audit::{audited_sessions, read_audit};

    #[test]
    fn records_are_written_redacted_with_their_turn_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = "20261202-0123456789abcdef0123456789abcdef";
        let log = AuditLog::new(dir.path(), Arc::new(Redactor::new()), id, 3);
        let secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD";
        log.on_event(&EngineEvent::ContentIngested {
            iteration: 2,
            source: "read_file:.env",
            content: &format!("KEY={secret}\n"),
        });
        let path = audit_path(dir.path(), id);
        std::fs::write(
            &path,
            format!("{}{{\"cut\n", std::fs::read_to_string(&path).expect("read")),
        )
        .expect("append a broken line");
        let trail = read_audit(dir.path(), id).expect("read").expect("a trail");
        assert_eq!(trail.records.len(), 1);
        let r = &trail.records[0];
        assert_eq!((r.turn, r.iteration), (Some(3), Some(2)));
        assert_eq!(r.source, "read_file:.env");
        assert_eq!(r.bytes, secret.len() + 5);
        assert!(!r.content.contains(secret), "{}", r.content);
        assert_eq!(trail.unreadable, vec![2]);
        assert_eq!(
            audited_sessions(dir.path()).expect("list"),
            vec![id.to_string()]
        );
        assert!(
            read_audit(dir.path(), "20261202-00000000000000000000000000000000")
                .expect("read")
                .is_none()
        );
    }
}
