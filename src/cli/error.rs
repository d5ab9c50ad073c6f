//! The command line's edge for errors: what kind a failure is — which decides the exit code,
//! here and nowhere else — and what to tell the user to do next. Both come from the typed
//! error where it was made (a model error knows it was a 401; a connection error knows it was
//! refused), never from searching the formatted message.

use super::Exit;
use crate::engine::RunError;
use crate::error::Classified;
use crate::llm::LlmError;
use crate::runtime::{RuntimeError, SupervisorError};

/// What kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A run or setup error.
    Failure,
    /// The command line was used wrongly.
    Usage,
    /// An execution budget ran out.
    Budget,
    /// Ctrl-C.
    Interrupted,
}

impl Kind {
    /// The one mapping from kinds to exit codes.
    pub fn exit(self) -> Exit {
        match self {
            Kind::Failure => Exit::Failure,
            Kind::Usage => Exit::Usage,
            Kind::Budget => Exit::Budget,
            Kind::Interrupted => Exit::Interrupted,
        }
    }

    /// The exit kind of a module's error. A request the module refuses (its kind `usage`: a
    /// cron expression, a skill's name) exits 1 like every failure after parsing; exit 2 is
    /// kept for command lines that do not parse ([`UsageError`], clap).
    pub fn of_module(_error: &dyn Classified) -> Kind {
        Kind::Failure
    }

    /// The kind of a run's end (`None` = it produced an answer).
    pub fn of_run(error: &RunError) -> Kind {
        match error {
            RunError::Cancelled => Kind::Interrupted,
            RunError::Budget { .. } => Kind::Budget,
            RunError::Model { .. }
            | RunError::ContextOverflow { .. }
            | RunError::MaxIterations(_)
            | RunError::PromptBlocked(_) => Kind::Failure,
        }
    }
}

/// A usage error found after parsing (a flag a command refuses): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The kind and the hint of `error`, from the first error in its chain that knows them.
pub fn diagnose(error: &anyhow::Error) -> (Kind, Option<&'static str>) {
    for cause in error.chain() {
        if let Some(e) = cause.downcast_ref::<RunError>() {
            return (Kind::of_run(e), e.hint());
        }
        if let Some(e) = cause.downcast_ref::<RuntimeError>() {
            return (Kind::Failure, e.hint());
        }
        if let Some(SupervisorError::Runtime(e)) = cause.downcast_ref::<SupervisorError>() {
            return (Kind::Failure, e.hint());
        }
        if let Some(e) = cause.downcast_ref::<LlmError>() {
            return (Kind::Failure, e.hint());
        }
        if cause.downcast_ref::<UsageError>().is_some() {
            return (Kind::Usage, None);
        }
        if let Some(e) = classified(cause) {
            return (Kind::of_module(e), e.hint());
        }
    }
    (Kind::Failure, None)
}

/// The modules' errors that say their kind ([`crate::error::ErrorKind`]) and hint.
fn classified<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn Classified> {
    use crate::telegram::{ChatError, TelegramError};
    use crate::{mcp_server::McpServerError, schedule::ScheduleError, skills::SkillError};
    if let Some(e) = cause.downcast_ref::<ScheduleError>() {
        return Some(e);
    }
    if let Some(e) = cause.downcast_ref::<SkillError>() {
        return Some(e);
    }
    if let Some(e) = cause.downcast_ref::<TelegramError>() {
        return Some(e);
    }
    if let Some(e) = cause.downcast_ref::<ChatError>() {
        return Some(e);
    }
    if let Some(e) = cause.downcast_ref::<crate::release::ReleaseError>() {
        return Some(e);
    }
    cause
        .downcast_ref::<McpServerError>()
        .map(|e| e as &dyn Classified)
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
pub fn report(error: &anyhow::Error) -> Exit {
    let style = super::style::Style::new(
        std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::env::var_os("NO_COLOR").is_none(),
    );
    let (kind, hint) = diagnose(error);
    eprintln!("{} {}", style.red("odek:"), shown(&format!("{error:#}")));
    if let Some(hint) = hint {
        eprintln!("  {}", style.dim(&format!("hint: {hint}")));
    }
    kind.exit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::NetworkKind;

    fn status(code: u16) -> LlmError {
        LlmError::Status {
            status: code,
            reason: "x".into(),
            body: String::new(),
            retry_after: None,
        }
    }

    #[test]
    fn kinds_and_hints_come_from_the_typed_error_however_deep() {
        let run = anyhow::Error::new(RunError::Model {
            iteration: 1,
            error: status(401),
        })
        .context("running the task");
        let (kind, hint) = diagnose(&run);
        assert_eq!(kind, Kind::Failure);
        assert!(hint.is_some_and(|h| h.contains("API key")));
        let refused = anyhow::Error::new(RuntimeError::Model(LlmError::Network {
            kind: NetworkKind::Refused,
            message: "whatever the OS said".into(),
        }));
        assert!(
            diagnose(&refused)
                .1
                .is_some_and(|h| h.contains("nothing is listening"))
        );
        // The words alone mean nothing: a message that reads like a 401 gets no hint.
        let text = anyhow::anyhow!("llm: 401 Unauthorized (status 401) certificate refused");
        assert_eq!(diagnose(&text), (Kind::Failure, None));
        let budget = anyhow::Error::new(RunError::Budget {
            limit: "tool_calls",
            observed: 3,
            max: 2,
        });
        assert_eq!(diagnose(&budget).0.exit(), Exit::Budget);
        assert_eq!(
            diagnose(&anyhow::Error::new(RunError::Cancelled)).0.exit(),
            Exit::Interrupted
        );
        let cron = anyhow::Error::new(crate::schedule::ScheduleError::Cron(
            crate::schedule::cron::Schedule::parse("0 25 * * *", None).expect_err("hour 25"),
        ))
        .context("adding the job");
        let (kind, hint) = diagnose(&cron);
        assert_eq!(kind.exit(), Exit::Failure);
        assert!(hint.is_some_and(|h| h.contains("odek schedule next --help")));
        let usage = anyhow::Error::new(UsageError("no".into()));
        assert_eq!(diagnose(&usage).0.exit(), Exit::Usage);
    }
}
