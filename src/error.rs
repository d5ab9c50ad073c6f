//! What kind of failure an error is: the part of every module's error type that the
//! command line (exit codes, `cli/error.rs`), `odek serve` (HTTP statuses) and the chats
//! read — never the message text. Each error type says its kind and, where the user can
//! act, a hint.

/// The kinds of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is wrong: a name, an expression, a value the user typed.
    Usage,
    /// The configuration is missing something or says something that cannot work.
    Config,
    /// What was named does not exist.
    NotFound,
    /// It clashes with what is there: a name taken, a lock held, a file changed meanwhile.
    Conflict,
    /// Reading or writing a local file failed.
    Io,
    /// Something outside the machine failed or refused (an endpoint, a chat service).
    Remote,
}

/// An error that knows its kind and what the user can do about it.
pub trait Classified: std::error::Error {
    /// Its kind.
    fn kind(&self) -> ErrorKind;

    /// What the user can do about it, when something helps.
    fn hint(&self) -> Option<&'static str> {
        None
    }
}
