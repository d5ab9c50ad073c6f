//! The editor's files: when the client declares `fs.readTextFile` / `fs.writeTextFile`,
//! odek's file tools (`read_file`, `batch_read`, `patch`, `batch_patch`, `write_file`) read
//! and write through it — its unsaved buffers are what the model reads, and edits land in
//! its undo history. Paths are absolute, resolved and classified as for the local files;
//! checkpoints (`odek rewind`) are still taken from the disk. `shell`, `glob` and
//! `search_files` see the disk.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::rpc::Connection;
use crate::tools::{EditorFiles, EditorFilesError};

/// What the client declared it does with files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FileCapabilities {
    pub read: bool,
    pub write: bool,
}

impl FileCapabilities {
    /// From `initialize`'s `clientCapabilities`.
    pub(crate) fn of(capabilities: &Value) -> FileCapabilities {
        let fs = &capabilities["fs"];
        FileCapabilities {
            read: fs["readTextFile"].as_bool().unwrap_or(false),
            write: fs["writeTextFile"].as_bool().unwrap_or(false),
        }
    }
}

/// A file the editor wrote: its path, its text before (`None`: new, or not known) and after.
pub(crate) type Written = (PathBuf, Option<String>, String);

/// The files the editor wrote for a prompt's calls, until their updates show them.
#[derive(Debug, Default)]
pub(crate) struct WriteLog(Mutex<Vec<Written>>);

impl WriteLog {
    fn push(&self, written: Written) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(written);
    }

    /// Takes the writes of the files in `paths`.
    pub(crate) fn take(&self, paths: &[PathBuf]) -> Vec<Written> {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (taken, kept): (Vec<Written>, Vec<Written>) =
            log.drain(..).partition(|(path, _, _)| paths.contains(path));
        *log = kept;
        taken
    }
}

/// One session's files through the client.
pub(crate) struct ClientFiles {
    conn: Arc<Connection>,
    session_id: String,
    can: FileCapabilities,
    written: Arc<WriteLog>,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session_id", &self.session_id)
            .field("can", &self.can)
            .finish()
    }
}

impl ClientFiles {
    /// The files of `session_id`, when the client does anything with files; what it writes
    /// goes in `written` too.
    pub(crate) fn of(
        conn: &Arc<Connection>,
        session_id: &str,
        can: FileCapabilities,
        written: &Arc<WriteLog>,
    ) -> Option<Arc<dyn EditorFiles>> {
        (can.read || can.write).then(|| {
            Arc::new(ClientFiles {
                conn: conn.clone(),
                session_id: session_id.to_string(),
                can,
                written: written.clone(),
            }) as Arc<dyn EditorFiles>
        })
    }
}

#[async_trait::async_trait]
impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.can.read
    }

    fn writes(&self) -> bool {
        self.can.write
    }

    async fn read(&self, path: &Path) -> Result<String, EditorFilesError> {
        let params = json!({"sessionId": self.session_id, "path": path.to_string_lossy()});
        let answer = self
            .conn
            .request("fs/read_text_file", params)
            .await
            .map_err(|e| EditorFilesError::Refused(e.message))?;
        answer["content"]
            .as_str()
            .map(str::to_string)
            .ok_or(EditorFilesError::NoText)
    }

    async fn write(&self, path: &Path, text: &str) -> Result<(), EditorFilesError> {
        // What was there, for the call's diff: the editor's text when it reads files.
        let before = if self.can.read {
            self.read(path).await.ok()
        } else {
            std::fs::read_to_string(path).ok()
        };
        let params = json!({
            "sessionId": self.session_id,
            "path": path.to_string_lossy(),
            "content": text,
        });
        self.conn
            .request("fs/write_text_file", params)
            .await
            .map_err(|e| EditorFilesError::Refused(e.message))?;
        self.written
            .push((path.to_path_buf(), before, text.to_string()));
        Ok(())
    }
}
