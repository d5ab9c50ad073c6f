//! Where event lines go.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Mutex;

/// Receives whole lines (without the newline). Called from the writer thread only.
pub trait EventSink: Send {
    /// Writes one line and flushes it.
    fn write_line(&mut self, line: &str) -> std::io::Result<()>;
}

/// Appends to a file opened with [`open_jsonl_file`].
pub struct JsonlFileSink(std::fs::File);

impl EventSink for JsonlFileSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        // One write call per line: with O_APPEND, concurrent writers never split a line.
        self.0.write_all(&buf)?;
        self.0.flush()
    }
}

/// Opens `path` for appending events: created with mode 0600 (an existing file is narrowed
/// to 0600), and a symlink is refused rather than followed.
pub fn open_jsonl_file(path: &Path) -> std::io::Result<JsonlFileSink> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(std::io::Error::other(format!(
            "{} is a symbolic link; refusing to follow it",
            path.display()
        )));
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(JsonlFileSink(file))
}

/// Writes to standard output (`--events-jsonl -`).
pub struct StdoutSink;

impl EventSink for StdoutSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

/// Hands each event to a closure (embedding, the server's ring buffer, tests).
pub struct CallbackSink(pub Box<dyn FnMut(&str) + Send>);

impl EventSink for CallbackSink {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        (self.0)(line);
        Ok(())
    }
}

/// Collects lines in memory (tests).
impl EventSink for std::sync::Arc<Mutex<Vec<String>>> {
    fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if let Ok(mut v) = self.lock() {
            v.push(line.to_string());
        }
        Ok(())
    }
}
