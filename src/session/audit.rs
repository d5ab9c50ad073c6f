//! A session's audit file of ingested content, `<home>/sessions/audit/<session id>.jsonl`:
//! where it lives, one record's format, and reading it back (`odek audit`). It goes with its
//! session (`odek session delete`). The runtime writes it as each turn runs.

use std::fs::File;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One line of an audit file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AuditRecord {
    /// When it entered (RFC 3339, UTC).
    pub timestamp: String,
    /// The session's turn (1 = the first); absent in files written before turns were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Model calls made in that turn before it entered (0: with the input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// Where it came from (`read_file:src/x.rs`, `$ cargo test`, `ctx:notes.md`, `plan`…).
    pub source: String,
    /// Its size in bytes, before redaction.
    pub bytes: usize,
    /// SHA-256 of the text before redaction (hex).
    pub sha256: String,
    /// The text, redacted.
    pub content: String,
}

/// The audit file of session `id` under the sessions directory.
pub fn audit_path(sessions_dir: &Path, id: &str) -> PathBuf {
    sessions_dir.join("audit").join(format!("{id}.jsonl"))
}

/// A session's audit file read back: its records, and the lines that could not be read
/// (a line cut by a crash, say), by number.
#[derive(Debug, Default)]
pub struct AuditTrail {
    /// The records, oldest first.
    pub records: Vec<AuditRecord>,
    /// Line numbers (1-based) that are not records.
    pub unreadable: Vec<usize>,
}

/// Reads the audit file of session `id`; `Ok(None)` when it has none.
pub fn read_audit(sessions_dir: &Path, id: &str) -> std::io::Result<Option<AuditTrail>> {
    let file = match File::open(audit_path(sessions_dir, id)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut trail = AuditTrail::default();
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<AuditRecord>(&line) {
            Ok(r) => trail.records.push(r),
            Err(_) => trail.unreadable.push(n + 1),
        }
    }
    Ok(Some(trail))
}

/// The ids of the sessions that have an audit file.
pub fn audited_sessions(sessions_dir: &Path) -> std::io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(sessions_dir.join("audit")) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".jsonl")?;
            super::is_standard_id(id).then(|| id.to_string())
        })
        .collect();
    ids.sort();
    Ok(ids)
}
