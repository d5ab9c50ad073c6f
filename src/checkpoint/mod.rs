//! Checkpoints: what a file-changing tool call found before it wrote, so that `odek rewind`
//! can put it back (see docs/UNDO.md).
//!
//! - **Blobs** are content-addressed under `<home>/checkpoints/blobs/<2 hex>/<62 hex>`
//!   (SHA-256 of the bytes): written once, atomically, 0600 in 0700 folders; the same content
//!   is stored once whatever file or session it came from. Pre-images are never redacted
//!   (a restore must be exact) and never leave this store: events and logs carry paths and
//!   hashes only.
//! - **Records** are the lines of `<home>/checkpoints/sessions/<session id>.jsonl`, one per
//!   checkpoint, appended and synced before the call writes: each names the turn, the tool
//!   and, per file, its pre-image (hash and mode, or "did not exist") and the hash it had
//!   after the call.

mod retention;
mod rewind;
mod shadow;
mod store;
mod walk;

#[cfg(test)]
mod tests;

pub use retention::{Pruned, Retention, prune, prune_now_and_then};
pub use rewind::{Conflict, RewindError, RewindOutcome, RewindPlan, plan_rewind};
pub use shadow::{ShellCheckpoint, work_tree_of};
pub use store::{
    BlobStore, CallCheckpoint, Checkpoints, Taken, forget_sessions, hash_bytes, of_session,
};

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Checkpoints are kept this many days (the setting's default).
pub const DEFAULT_KEEP_DAYS: u64 = 30;
/// The pre-images may take this many MiB (the setting's default).
pub const DEFAULT_MAX_MB: u64 = 1024;

/// Files larger than this are not captured unless the setting says otherwise (MiB).
pub const DEFAULT_MAX_FILE_MB: u64 = 10;

/// Above this many files a work tree is not snapshotted (the setting's default).
pub const DEFAULT_MAX_FILES: u64 = 20_000;

/// A file as it was: its content's hash and its permission bits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// SHA-256 of the content, lower-case hex (the blob's name).
    pub hash: String,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The file, absolute.
    pub path: PathBuf,
    /// What it was before the call; `None`: it did not exist.
    pub before: Option<Image>,
    /// The hash of what the call left; `None`: the call left no file there.
    pub after: Option<String>,
}

impl FileChange {
    /// `added`, `deleted` or `changed`.
    pub fn kind(&self) -> &'static str {
        match (&self.before, &self.after) {
            (None, Some(_)) => "added",
            (Some(_), None) => "deleted",
            _ => "changed",
        }
    }
}

/// One checkpoint: the files one tool call (or one rewind) changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its number in the session, from 1: its place among the checkpoints, in the order
    /// their first lines were written (given when the record file is read, so that several
    /// processes — a turn and its sub-agents — can append at once).
    #[serde(skip)]
    pub n: u32,
    /// Its own random id (the lines of one call share it).
    pub id: String,
    /// The session's turn it was taken in, from 1.
    pub turn: u32,
    /// When (RFC 3339 UTC).
    pub at: String,
    /// The tool (`write_file`, `patch`, `batch_patch`), or `rewind`.
    pub tool: String,
    /// The files, in the order first touched.
    pub files: Vec<FileChange>,
    /// Paths the call changed that the checkpoint does not hold, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_covered: Vec<String>,
    /// For a rewind: the checkpoint it went back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound_to: Option<u32>,
}

/// A line of a session's record file: a checkpoint, or the end of a rewind (a rewind whose
/// end is missing was interrupted, and `rewind` finishes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordLine {
    /// A checkpoint.
    Checkpoint(Checkpoint),
    /// The rewind checkpoint `completed` wrote every file.
    Completed {
        /// The rewind's checkpoint id.
        completed: String,
    },
}

/// A session's checkpoints as read from its record file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Every checkpoint, in order.
    pub checkpoints: Vec<Checkpoint>,
    /// Rewind checkpoints that finished (their ids).
    pub completed: Vec<String>,
}

impl History {
    /// The rewind that started last and never finished, if any.
    pub fn interrupted_rewind(&self) -> Option<&Checkpoint> {
        let last = self.checkpoints.last()?;
        (last.rewound_to.is_some() && !self.completed.contains(&last.id)).then_some(last)
    }

    /// The first checkpoint of the last turn that changed files (rewinds aside): what
    /// `/undo` goes back to before.
    pub fn last_turn_start(&self) -> Option<&Checkpoint> {
        let changes = || self.checkpoints.iter().filter(|c| c.rewound_to.is_none());
        let turn = changes().map(|c| c.turn).max()?;
        changes().find(|c| c.turn == turn)
    }

    /// The number of the checkpoint `id`.
    pub fn number_of(&self, id: &str) -> Option<u32> {
        self.checkpoints.iter().find(|c| c.id == id).map(|c| c.n)
    }
}

/// Where checkpoints live under a home.
pub fn root(home: &std::path::Path) -> PathBuf {
    home.join("checkpoints")
}
