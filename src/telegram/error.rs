//! The bot's errors: why it cannot run ([`TelegramError`]), why a chat's request is refused
//! ([`ChatError`], whose text is the reply), and why a file the agent names is not sent
//! ([`SendError`]).

use std::path::PathBuf;

use super::api::BotError;
use crate::error::{Classified, ErrorKind};

/// Why the bot cannot run.
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    /// No token configured.
    #[error("no bot token")]
    NoToken,
    /// The client could not be set up.
    #[error(transparent)]
    Api(#[from] BotError),
    /// The state folder could not be opened.
    #[error("{}: {source}", dir.display())]
    State {
        /// `<home>/telegram`.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Telegram refused the token (401 or 404).
    #[error(
        "Telegram refused the bot token ({code}: {description}); check telegram.bot_token or ODEK_TELEGRAM_TOKEN"
    )]
    TokenRefused {
        /// The status.
        code: u16,
        /// Telegram's words.
        description: String,
    },
}

impl Classified for TelegramError {
    fn kind(&self) -> ErrorKind {
        match self {
            TelegramError::NoToken | TelegramError::TokenRefused { .. } => ErrorKind::Config,
            TelegramError::Api(_) => ErrorKind::Remote,
            TelegramError::State { .. } => ErrorKind::Io,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            TelegramError::NoToken | TelegramError::TokenRefused { .. } => {
                Some("ask @BotFather for the token; docs/TELEGRAM.md")
            }
            _ => None,
        }
    }
}

/// Why a chat's request cannot be done; the text is the bot's reply.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// `/plan` without text.
    #[error("Usage: /plan <text> saves a plan note; /plans lists them.")]
    NoteUsage,
    /// A note over one message.
    #[error("That note is over {0} characters; save a shorter one.")]
    NoteTooLong(usize),
    /// The note could not be written.
    #[error("Could not save the note: {0}")]
    NoteNotSaved(std::io::Error),
    /// Every name of this second is taken.
    #[error("Could not save the note: too many notes saved this second.")]
    TooManyNotes,
    /// No notes to pick from.
    #[error("No plan notes yet: /plan <text> saves one.")]
    NoNotes,
    /// Not a note's number.
    #[error("Give a note's number, 1 to {0} (/plans lists them).")]
    NoteNumber(usize),
    /// The note could not be deleted.
    #[error("Could not delete {name}: {source}")]
    NoteNotDeleted {
        /// The note's file name.
        name: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// No sessions to resume.
    #[error("No sessions in this chat yet: your next message starts one.")]
    NoSessions,
    /// Not a session's number.
    #[error("Give a session's number, 1 to {0} (/sessions lists them).")]
    SessionNumber(usize),
}

impl Classified for ChatError {
    fn kind(&self) -> ErrorKind {
        match self {
            ChatError::NoteNotSaved(_) | ChatError::NoteNotDeleted { .. } => ErrorKind::Io,
            ChatError::TooManyNotes => ErrorKind::Conflict,
            ChatError::NoNotes | ChatError::NoSessions => ErrorKind::NotFound,
            ChatError::NoteUsage
            | ChatError::NoteTooLong(_)
            | ChatError::NoteNumber(_)
            | ChatError::SessionNumber(_) => ErrorKind::Usage,
        }
    }
}

/// Why a file an answer names (`MEDIA:` line) is not sent.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// It could not be opened or read.
    #[error("cannot read it: {0}")]
    Unreadable(std::io::Error),
    /// A folder, a FIFO, a device.
    #[error("not a regular file")]
    NotARegularFile,
    /// Over the cap.
    #[error("it is {size} bytes, over the {max}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The cap.
        max: u64,
    },
    /// The working directory itself cannot be read.
    #[error("the working directory cannot be read: {0}")]
    NoWorkingDirectory(std::io::Error),
    /// It lies outside the working directory.
    #[error("only files inside the working directory are sent")]
    Outside,
    /// Telegram did not take the upload.
    #[error(transparent)]
    Upload(#[from] BotError),
    /// The read did not finish (its task ended).
    #[error("the read stopped: {0}")]
    Stopped(String),
}

impl Classified for SendError {
    fn kind(&self) -> ErrorKind {
        match self {
            SendError::Unreadable(_) | SendError::NoWorkingDirectory(_) | SendError::Stopped(_) => {
                ErrorKind::Io
            }
            SendError::NotARegularFile | SendError::TooLarge { .. } | SendError::Outside => {
                ErrorKind::Usage
            }
            SendError::Upload(e) => e.kind(),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            SendError::Outside => Some("copy the file into the working directory to send it"),
            SendError::Upload(e) => e.hint(),
            _ => None,
        }
    }
}
