//! Errors of the session store. Every message names the session id and/or the file involved,
//! so a user seeing it on the terminal knows which transcript is affected.

use std::path::PathBuf;

/// What went wrong while saving, loading or managing sessions.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The id is not a safe file stem (empty, too long, bad characters, traversal).
    #[error("invalid session id {shown_id:?}: {reason}")]
    InvalidId {
        /// The offending id, shortened for display.
        shown_id: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// No file `<id>.json` in the sessions directory.
    #[error("no session {id} (looked in {})", dir.display())]
    NotFound {
        /// The requested id.
        id: String,
        /// The sessions directory that was searched.
        dir: PathBuf,
    },
    /// The file exists but is not a valid session transcript.
    #[error("session {id}: file {} is corrupt: {reason}", path.display())]
    Corrupt {
        /// The requested id.
        id: String,
        /// The file that failed to parse.
        path: PathBuf,
        /// The parser's explanation (line and column).
        reason: String,
    },
    /// The file is larger than the load cap; it was not read.
    #[error("session {id}: file {} is {size} bytes, over the {limit}-byte limit", path.display())]
    TooLarge {
        /// The requested id.
        id: String,
        /// The oversized file.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// The file parses but holds a different session than its name says.
    #[error("session {id}: file {} holds session {found:?}, not {id:?}", path.display())]
    IdMismatch {
        /// The requested id (the file stem).
        id: String,
        /// The file that was read.
        path: PathBuf,
        /// The id embedded in the file.
        found: String,
    },
    /// Even with every droppable message group removed the transcript exceeds the cap.
    #[error(
        "session {id} is still {size} bytes after dropping every older message group, over the {limit}-byte limit; not saved"
    )]
    TooLargeToSave {
        /// The session id.
        id: String,
        /// Serialized size after trimming.
        size: u64,
        /// The cap in bytes.
        limit: u64,
    },
    /// Another writer holds the session (a run, an open REPL, a serve or Telegram turn).
    #[error("session {id} is in use by {}", holder.as_deref().unwrap_or("another odek process"))]
    Busy {
        /// The session id.
        id: String,
        /// Who holds it (`odek repl (pid 123)`), when its lock file says.
        holder: Option<String>,
    },
    /// `trim` was asked to keep fewer than two messages.
    #[error(
        "cannot trim session {id}: n must be at least 2 (system + at least 1 message), got {keep}"
    )]
    KeepTooSmall {
        /// The session id.
        id: String,
        /// The requested count.
        keep: usize,
    },
    /// A fork at a turn the session does not have.
    #[error("session {id} has {turns} turn(s); it cannot be forked at turn {at}")]
    NoSuchTurn {
        /// The session id.
        id: String,
        /// Its turns.
        turns: u32,
        /// The turn asked for.
        at: u32,
    },
    /// The session could not be turned into JSON.
    #[error("session {id}: cannot serialize: {source}")]
    Serialize {
        /// The session id.
        id: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
    /// A filesystem operation failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        /// What was being done, naming the session when there is one (e.g. `session X: cannot write`).
        context: String,
        /// The file or directory involved.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl crate::error::Classified for SessionError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            SessionError::InvalidId { .. } | SessionError::KeepTooSmall { .. } => ErrorKind::Usage,
            SessionError::NotFound { .. } | SessionError::NoSuchTurn { .. } => ErrorKind::NotFound,
            SessionError::Busy { .. } | SessionError::IdMismatch { .. } => ErrorKind::Conflict,
            SessionError::Corrupt { .. }
            | SessionError::TooLarge { .. }
            | SessionError::TooLargeToSave { .. }
            | SessionError::Io { .. } => ErrorKind::Io,
            SessionError::Serialize { .. } => ErrorKind::Internal,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            SessionError::InvalidId { .. } | SessionError::NotFound { .. } => {
                Some("odek session list shows the saved sessions and their ids")
            }
            SessionError::NoSuchTurn { .. } => {
                Some("odek session show ID prints its turns; fork at one of them (--at TURN)")
            }
            SessionError::KeepTooSmall { .. } => Some(
                "keep at least 2: odek session trim ID 2 keeps the system prompt and one message",
            ),
            SessionError::Corrupt { .. }
            | SessionError::TooLarge { .. }
            | SessionError::IdMismatch { .. } => Some(
                "the session cannot be read back: odek session delete ID removes it, the others are untouched",
            ),
            SessionError::TooLargeToSave { .. } => {
                Some("one message group alone is over the limit: start a new session (odek run)")
            }
            // The message names who holds it (`in use by odek continue (pid 42)`): one line.
            SessionError::Busy { .. }
            | SessionError::Serialize { .. }
            | SessionError::Io { .. } => None,
        }
    }
}

impl SessionError {
    /// The message without the paths of files and folders, for readers who should learn
    /// what went wrong but not how the machine is laid out (clients of `odek serve`).
    pub fn message_without_paths(&self) -> String {
        match self {
            SessionError::NotFound { id, .. } => format!("no session {id}"),
            SessionError::Corrupt { id, .. } => format!("session {id}: its file is corrupt"),
            SessionError::TooLarge {
                id, size, limit, ..
            } => format!("session {id}: its file is {size} bytes, over the {limit}-byte limit"),
            SessionError::IdMismatch { id, found, .. } => {
                format!("session {id}: its file holds session {found:?}")
            }
            SessionError::Io {
                context, source, ..
            } => format!("{}: {source}", context.trim_end_matches(" in")),
            other => other.to_string(),
        }
    }

    /// An I/O error with its context and path.
    pub(crate) fn io(
        context: impl Into<String>,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        SessionError::Io {
            context: context.into(),
            path: path.into(),
            source,
        }
    }
}
