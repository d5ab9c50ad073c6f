//! The command line's edge for errors: what kind a failure is — which decides the exit code,
//! here and nowhere else — and what to tell the user to do next. Both come from the typed
//! error where it was made (a model error knows it was a 401; a connection error knows it was
//! refused), never from searching the formatted message, and never from a list of types:
//! commands return a [`Failure`], which `?` makes from any [`Classified`] error, and the
//! failure's chain answers with each classified cause as `&dyn Classified`.

use super::Exit;
use crate::error::{Classified, ErrorKind, Failure};

/// The one mapping from kinds to exit codes. A request a module refuses (kind `usage`: a
/// cron expression, a skill's name) exits 1 like every failure after parsing; exit 2 is kept
/// for command lines that do not parse (clap) or that a command refuses before anything runs
/// (kind `command_line`, [`UsageError`]).
pub fn exit_of(kind: ErrorKind) -> Exit {
    match kind {
        ErrorKind::CommandLine => Exit::Usage,
        ErrorKind::Budget => Exit::Budget,
        ErrorKind::Interrupted => Exit::Interrupted,
        ErrorKind::Usage
        | ErrorKind::Config
        | ErrorKind::NotFound
        | ErrorKind::Conflict
        | ErrorKind::Io
        | ErrorKind::Remote
        | ErrorKind::Internal => Exit::Failure,
    }
}

/// A usage error found after parsing (a flag a command refuses): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl Classified for UsageError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::CommandLine
    }
}

/// The exit code and the hint of `failure`: the exit from the outermost classified error in
/// its chain (1 when nothing in it is classified: text alone means nothing), the hint the
/// first one that has one (the chain walked once) — each cause answers through
/// [`Classified`], whatever its type.
pub fn diagnose(failure: &Failure) -> (Exit, Option<&'static str>) {
    let mut classified = failure.classified();
    let Some(outermost) = classified.next() else {
        return (Exit::Failure, None);
    };
    let hint = outermost
        .hint()
        .or_else(|| classified.find_map(|e| e.hint()));
    (exit_of(outermost.kind()), hint)
}

/// An error's text as the terminal shows it: redacted by the process's redactor (a server's
/// body may echo the key or a header), its control bytes shown.
pub fn shown(message: &str) -> String {
    let redacted = crate::redact::process_redactor()
        .redact(message)
        .into_owned();
    crate::text::visible(&redacted, true).into_owned()
}

/// Prints `odek: <error>` (with its causes, redacted by the process's redactor, control
/// bytes shown) and the hint, and returns the exit code.
pub fn report(error: &Failure) -> Exit {
    let style = super::style::Style::new(
        std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::env::var_os("NO_COLOR").is_none(),
    );
    let (exit, hint) = diagnose(error);
    eprintln!("{} {}", style.red("odek:"), shown(&format!("{error:#}")));
    if let Some(hint) = hint {
        eprintln!("  {}", style.dim(&format!("hint: {hint}")));
    }
    exit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RunError;
    use crate::llm::{LlmError, NetworkKind};
    use crate::runtime::RuntimeError;

    fn status(code: u16) -> LlmError {
        LlmError::Status {
            status: code,
            reason: "x".into(),
            body: String::new(),
            retry_after: None,
        }
    }

    /// Every kind and the exit code docs/CLI.md ("Kinds of errors") promises for it, written out
    /// rather than derived, so a change to `exit_of` shows here.
    const EVERY_KIND: [(ErrorKind, u8); 10] = [
        (ErrorKind::Usage, 1),
        (ErrorKind::CommandLine, 2),
        (ErrorKind::Config, 1),
        (ErrorKind::NotFound, 1),
        (ErrorKind::Conflict, 1),
        (ErrorKind::Io, 1),
        (ErrorKind::Remote, 1),
        (ErrorKind::Budget, 4),
        (ErrorKind::Interrupted, 130),
        (ErrorKind::Internal, 1),
    ];

    #[test]
    fn each_kind_has_its_exit_code() {
        for (kind, code) in EVERY_KIND {
            assert_eq!(exit_of(kind) as u8, code, "{kind:?}");
            assert_eq!(
                diagnose(&Failure::from(Planted(kind))).0 as u8,
                code,
                "{kind:?}"
            );
        }
    }

    /// An error type no code in cli/ names: only the trait can classify it.
    #[derive(Debug, thiserror::Error)]
    #[error("planted")]
    struct Planted(ErrorKind);

    impl Classified for Planted {
        fn kind(&self) -> ErrorKind {
            self.0
        }
        fn hint(&self) -> Option<&'static str> {
            Some("the planted hint")
        }
    }

    #[test]
    fn a_type_the_command_line_never_names_decides_through_the_trait() {
        let failure = Failure::from(Planted(ErrorKind::Budget))
            .context("inner step")
            .context("outer step");
        assert_eq!(diagnose(&failure), (Exit::Budget, Some("the planted hint")));
        // Through anyhow and back (code that still speaks anyhow passes it on).
        let through = Failure::from(anyhow::Error::from(failure).context("more"));
        assert_eq!(diagnose(&through), (Exit::Budget, Some("the planted hint")));
        assert_eq!(
            format!("{through:#}"),
            "more: outer step: inner step: planted"
        );
    }

    #[test]
    fn kinds_and_hints_come_from_the_typed_error_however_deep() {
        let run = Failure::from(RunError::Model {
            iteration: 1,
            error: status(401),
        })
        .context("running the task");
        let (exit, hint) = diagnose(&run);
        assert_eq!(exit, Exit::Failure);
        assert!(hint.is_some_and(|h| h.contains("API key")));
        let refused = Failure::from(RuntimeError::Model(LlmError::Network {
            kind: NetworkKind::Refused,
            message: "whatever the OS said".into(),
        }));
        assert!(
            diagnose(&refused)
                .1
                .is_some_and(|h| h.contains("nothing is listening"))
        );
        // The words alone mean nothing: a message that reads like a 401 gets no hint.
        let text = Failure::from(anyhow::anyhow!(
            "llm: 401 Unauthorized (status 401) certificate refused"
        ));
        assert_eq!(diagnose(&text), (Exit::Failure, None));
        let budget = Failure::from(RunError::Budget {
            limit: "tool_calls",
            observed: 3,
            max: 2,
        });
        assert_eq!(diagnose(&budget).0, Exit::Budget);
        assert_eq!(
            diagnose(&Failure::from(RunError::Cancelled)).0,
            Exit::Interrupted
        );
        let cron = Failure::from(crate::schedule::ScheduleError::Cron(
            crate::schedule::cron::Schedule::parse("0 25 * * *", None).expect_err("hour 25"),
        ))
        .context("adding the job");
        let (exit, hint) = diagnose(&cron);
        assert_eq!(exit, Exit::Failure);
        assert!(hint.is_some_and(|h| h.contains("odek schedule next --help")));
        let usage = Failure::from(UsageError("no".into()));
        assert_eq!(diagnose(&usage), (Exit::Usage, None));
        // A session's error, under the runtime's, gives the session's hint.
        let missing = Failure::from(RuntimeError::Session(
            crate::session::SessionError::NotFound {
                id: "s".into(),
                dir: "/nowhere".into(),
            },
        ));
        assert!(
            diagnose(&missing)
                .1
                .is_some_and(|h| h.contains("odek session list"))
        );
    }
}
