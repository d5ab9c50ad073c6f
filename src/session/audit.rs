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

/// One record's line, newline included, appended to `out`: the bytes `serde_json` writes for
/// an [`AuditRecord`] of these fields, written from borrowed text (a tool's output is not
/// copied into a record first).
pub struct AuditLine<'a> {
    /// [`AuditRecord::timestamp`].
    pub timestamp: &'a str,
    /// [`AuditRecord::turn`].
    pub turn: Option<u32>,
    /// [`AuditRecord::iteration`].
    pub iteration: Option<u32>,
    /// [`AuditRecord::source`].
    pub source: &'a str,
    /// [`AuditRecord::bytes`].
    pub bytes: usize,
    /// [`AuditRecord::sha256`].
    pub sha256: &'a str,
    /// [`AuditRecord::content`].
    pub content: &'a str,
}

impl AuditLine<'_> {
    /// Appends the line to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"timestamp\":");
        serde_json::to_writer(&mut *out, self.timestamp)?;
        for (key, value) in [("turn", self.turn), ("iteration", self.iteration)] {
            if let Some(n) = value {
                out.extend_from_slice(b",\"");
                out.extend_from_slice(key.as_bytes());
                out.extend_from_slice(b"\":");
                serde_json::to_writer(&mut *out, &n)?;
            }
        }
        out.extend_from_slice(b",\"source\":");
        serde_json::to_writer(&mut *out, self.source)?;
        out.extend_from_slice(b",\"bytes\":");
        serde_json::to_writer(&mut *out, &self.bytes)?;
        out.extend_from_slice(b",\"sha256\":");
        serde_json::to_writer(&mut *out, self.sha256)?;
        out.extend_from_slice(b",\"content\":");
        serde_json::to_writer(&mut *out, self.content)?;
        out.extend_from_slice(b"}\n");
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_the_bytes_of_the_record_serialised() {
        for (turn, iteration) in [(Some(3), Some(0)), (None, None), (Some(1), None)] {
            let record = AuditRecord {
                timestamp: "2026-12-06T00:00:00.123456Z".into(),
                turn,
                iteration,
                source: "read_file:src/\"x\".rs".into(),
                bytes: 4096,
                sha256: "ab".repeat(32),
                content: "line 1\n\ttab \\ \u{1} é [REDACTED]".into(),
            };
            let mut line = Vec::new();
            AuditLine {
                timestamp: &record.timestamp,
                turn,
                iteration,
                source: &record.source,
                bytes: record.bytes,
                sha256: &record.sha256,
                content: &record.content,
            }
            .write_to(&mut line)
            .expect("writes");
            let expected = serde_json::to_string(&record).expect("serialises") + "\n";
            assert_eq!(String::from_utf8(line).expect("utf-8"), expected);
        }
    }
}
