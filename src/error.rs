//! What kind of failure an error is: the part of every module's error type that the
//! command line (exit codes, `cli/error.rs`), `odek serve` (HTTP statuses) and the chats
//! read — never the message text. Each error type says its kind and, where the user can
//! act, a hint (docs/CLI.md, "Exit codes").
//!
//! A typed error keeps its kind on the way to the user: [`Failure`] (what commands return)
//! takes any [`Classified`] error through `?` and holds it in its chain behind one wrapper,
//! so the command line asks the chain for `&dyn Classified` without knowing a single type.

use std::fmt;

/// The kinds of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is wrong: a name, an expression, a value the user typed.
    Usage,
    /// The command line cannot run as given (a flag the command refuses), found before
    /// anything ran: the command line's exit 2.
    CommandLine,
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
    /// An execution budget ran out (tool calls, cost, tokens, time).
    Budget,
    /// The user interrupted it (Ctrl-C, a cancel).
    Interrupted,
    /// odek broke a promise of its own (a child that ended without its answer, a record
    /// that does not read back): a bug to report.
    Internal,
}

/// An error that knows its kind and what the user can do about it.
pub trait Classified: std::error::Error {
    /// Its kind.
    fn kind(&self) -> ErrorKind;

    /// What the user can do about it (a command to run, a setting to change), when
    /// something helps.
    fn hint(&self) -> Option<&'static str> {
        None
    }
}

/// A file that cannot be read or written is an I/O failure; nothing to hint.
impl Classified for std::io::Error {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Io
    }
}

/// JSON that does not parse is the input's fault; one that cannot be read or written, I/O.
impl Classified for serde_json::Error {
    fn kind(&self) -> ErrorKind {
        match self.classify() {
            serde_json::error::Category::Io => ErrorKind::Io,
            serde_json::error::Category::Syntax
            | serde_json::error::Category::Data
            | serde_json::error::Category::Eof => ErrorKind::Usage,
        }
    }
}

/// A failure on its way to the user: any error, carrying the classified errors it was made
/// from. `?` turns a [`Classified`] error into one (the wrapper that keeps its kind) and an
/// `anyhow::Error` too (one made of text has no kind: a failure, no hint); its message and
/// causes print exactly as the error's own.
pub struct Failure(anyhow::Error);

/// What commands return.
pub type Fallible<T> = Result<T, Failure>;

impl Failure {
    /// The classified errors in the chain, outermost first (the chain is walked once).
    pub fn classified(&self) -> impl Iterator<Item = &dyn Classified> {
        classified_in(&self.0)
    }

    /// The kind of the outermost classified error; `None` when nothing in it is classified.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.classified().next().map(|e| e.kind())
    }

    /// The first hint in the chain, however deep.
    pub fn hint(&self) -> Option<&'static str> {
        self.classified().find_map(|e| e.hint())
    }

    /// Adds a line of context above the error (as `anyhow`'s), keeping its classification.
    pub fn context<C>(self, context: C) -> Failure
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        Failure(self.0.context(context))
    }

    /// The error as `anyhow` holds it (its chain, downcasts).
    pub fn as_anyhow(&self) -> &anyhow::Error {
        &self.0
    }
}

/// The classified errors in `error`'s chain, outermost first.
pub fn classified_in(error: &anyhow::Error) -> impl Iterator<Item = &dyn Classified> {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<Classed>())
        .map(|classed| classed.0.as_ref() as &dyn Classified)
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl<E> From<E> for Failure
where
    E: Classified + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        Failure(anyhow::Error::new(Classed(Box::new(error))))
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure(error)
    }
}

impl From<Failure> for anyhow::Error {
    fn from(failure: Failure) -> Self {
        failure.0
    }
}

/// A classified error in an `anyhow` chain: shows as the error it holds (its message, its
/// causes after it) and lends it as `&dyn Classified` — the one type the chain is searched
/// for.
struct Classed(Box<dyn Classified + Send + Sync>);

impl fmt::Display for Classed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for Classed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl std::error::Error for Classed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// `anyhow`'s `context` for results whose error becomes a [`Failure`], keeping its kind.
pub trait Context<T> {
    /// Adds `context` above the error.
    fn context<C>(self, context: C) -> Fallible<T>
    where
        C: fmt::Display + Send + Sync + 'static;

    /// Adds the context `f` makes above the error (made only when there is one).
    fn with_context<C, F>(self, f: F) -> Fallible<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C;
}

impl<T, E: Into<Failure>> Context<T> for Result<T, E> {
    fn context<C>(self, context: C) -> Fallible<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.map_err(|e| e.into().context(context))
    }

    fn with_context<C, F>(self, f: F) -> Fallible<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|e| e.into().context(f()))
    }
}

impl<T> Context<T> for Option<T> {
    fn context<C>(self, context: C) -> Fallible<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.ok_or_else(|| Failure(anyhow::Error::msg(context.to_string())))
    }

    fn with_context<C, F>(self, f: F) -> Fallible<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.ok_or_else(|| Failure(anyhow::Error::msg(f().to_string())))
    }
}

/// `anyhow::bail!` for functions that return a [`Failure`]: returns an unclassified error
/// made of the text.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::Failure::from(::anyhow::anyhow!($($arg)*)))
    };
}
pub(crate) use bail;

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a cause, kind and hint of its own.
    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    impl Classified for Outer {
        fn kind(&self) -> ErrorKind {
            ErrorKind::Conflict
        }
        fn hint(&self) -> Option<&'static str> {
            Some("do this")
        }
    }

    fn outer() -> Outer {
        Outer(std::io::Error::other("inner"))
    }

    #[test]
    fn a_failure_prints_as_the_error_it_was_made_of() {
        let plain = anyhow::Error::new(outer()).context("doing it");
        let failure = Failure::from(outer()).context("doing it");
        assert_eq!(format!("{failure:#}"), format!("{plain:#}"));
        assert_eq!(format!("{failure:#}"), "doing it: outer: inner");
        assert_eq!(format!("{failure}"), "doing it");
        assert_eq!(failure.as_anyhow().chain().count(), plain.chain().count());
    }

    #[test]
    fn context_keeps_the_kind_and_the_hint() {
        let failed: Result<(), Outer> = Err(outer());
        let failure = failed.context("one").context("two").unwrap_err();
        assert_eq!(failure.kind(), Some(ErrorKind::Conflict));
        assert_eq!(failure.hint(), Some("do this"));
        // Through anyhow and back, as code that still speaks anyhow passes it on.
        let through = Failure::from(anyhow::Error::from(failure).context("three"));
        assert_eq!(through.kind(), Some(ErrorKind::Conflict));
        assert_eq!(format!("{through:#}"), "three: two: one: outer: inner");
    }

    #[test]
    fn text_and_nothing_are_unclassified() {
        let text = Failure::from(anyhow::anyhow!("no hint here"));
        assert_eq!((text.kind(), text.hint()), (None, None));
        let none: Option<()> = None;
        let missing = none.context("nothing there").unwrap_err();
        assert_eq!(missing.to_string(), "nothing there");
        assert_eq!(missing.kind(), None);
        fn bails() -> Fallible<()> {
            bail!("no {}", "way")
        }
        assert_eq!(bails().unwrap_err().to_string(), "no way");
    }

    #[test]
    fn the_outer_kind_decides_and_the_first_hint_however_deep_is_shown() {
        // A classified error without a hint above one with a hint, under two contexts.
        let inner = Classed(Box::new(outer()));
        let failure = Failure::from(Wrapping(inner)).context("a").context("b");
        assert_eq!(failure.classified().count(), 2);
        assert_eq!(failure.kind(), Some(ErrorKind::Io));
        assert_eq!(failure.hint(), Some("do this"));
        assert_eq!(format!("{failure:#}"), "b: a: wrapping: outer: inner");
    }

    /// A classified error (kind `io`, no hint) caused by another.
    #[derive(Debug, thiserror::Error)]
    #[error("wrapping")]
    struct Wrapping(#[source] Classed);

    impl Classified for Wrapping {
        fn kind(&self) -> ErrorKind {
            ErrorKind::Io
        }
    }
}
