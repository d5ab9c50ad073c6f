//! Why a schedule operation failed, with its kind and, where the user can act, a hint.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Classified, ErrorKind};

/// A failure of the schedules: a job, its expression, its files, its runner or delivery.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// No job has the name.
    #[error("no job named \"{0}\" (odek schedule list shows them)")]
    NoSuchJob(String),
    /// A chat asked about a job that does not deliver to it.
    #[error("no job \"{0}\" delivers to this chat (see /schedules)")]
    NotThisChats(String),
    /// A job of the name exists.
    #[error("a job named \"{0}\" exists already (odek schedule list); choose another with --name")]
    JobExists(String),
    /// The name is not a job name.
    #[error("job name \"{name}\" must be 1–{max} letters, digits, `-` or `_`")]
    BadName {
        /// The name given.
        name: String,
        /// The longest name.
        max: usize,
    },
    /// The cron expression or the zone cannot be read.
    #[error(transparent)]
    Cron(#[from] CronError),
    /// The delivery target is not one.
    #[error("unknown delivery \"{0}\": use stdout, log, file:PATH, telegram or telegram:CHAT_ID")]
    BadTarget(String),
    /// `telegram:` names no chat id.
    #[error("\"{0}\" is not a Telegram chat id (a number)")]
    BadChat(String),
    /// The job's policy names a class that does not exist.
    #[error("{0} in the job's policy")]
    UnknownClass(#[from] crate::danger_policy::UnknownDangerClass),
    /// A file of the schedules could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file of the schedules is not what odek wrote.
    #[error("{} is damaged ({source}); repair it or move it aside", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Where it stopped making sense.
        source: serde_json::Error,
    },
    /// A file or folder could not be written (a schedule file, its lock, a delivery's file).
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A delivery file that is not where the user said: a link, a hard-linked file, not a
    /// regular file. Nothing was written; delivery is not tried again.
    #[error("refused to deliver to {}: {reason}", path.display())]
    UnsafeTarget {
        /// The file as given.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// `schedules.runner` keeps this runner from starting.
    #[error("schedules.runner is \"{0}\": this runner does not start")]
    RunnerOff(String),
    /// Another process runs this home's jobs.
    #[error(
        "another runner holds {} (odek schedule daemon, serve or telegram on this home); one runner per home",
        .0.display()
    )]
    RunnerBusy(PathBuf),
    /// Jobs run only sandboxed, and there is no sandbox here.
    #[error(
        "the shell sandbox is not available on this machine (Landlock); scheduled jobs run only sandboxed"
    )]
    NoSandbox,
    /// The job's runtime could not be built.
    #[error(transparent)]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// The job's turn could not be submitted.
    #[error(transparent)]
    Turn(#[from] crate::runtime::SupervisorError),
    /// `telegram` delivery without a bot token.
    #[error("telegram delivery needs telegram.bot_token (or ODEK_TELEGRAM_TOKEN)")]
    NoBotToken,
    /// `telegram` delivery without a chat.
    #[error(
        "`telegram` delivery needs telegram.default_chat_id, or name the chat: telegram:CHAT_ID"
    )]
    NoChat,
    /// The chat service did not take the answer.
    #[error(transparent)]
    Chat(#[from] ChatFailure),
    /// A delivery failed every try.
    #[error("{last} (after {tries} tries)")]
    GaveUp {
        /// Tries made.
        tries: u32,
        /// Why the last one failed.
        last: Box<ScheduleError>,
    },
}

impl Classified for ScheduleError {
    fn kind(&self) -> ErrorKind {
        use ScheduleError as E;
        match self {
            E::NoSuchJob(_) | E::NotThisChats(_) => ErrorKind::NotFound,
            E::JobExists(_) | E::RunnerBusy(_) => ErrorKind::Conflict,
            E::BadName { .. } | E::Cron(_) | E::BadTarget(_) | E::BadChat(_) => ErrorKind::Usage,
            E::UnknownClass(_) => ErrorKind::Usage,
            E::Read { .. } | E::Damaged { .. } | E::Write { .. } => ErrorKind::Io,
            E::UnsafeTarget { .. } => ErrorKind::Conflict,
            E::RunnerOff(_) | E::NoSandbox | E::NoBotToken | E::NoChat => ErrorKind::Config,
            E::Runtime(_) | E::Turn(_) => ErrorKind::Config,
            E::Chat(_) => ErrorKind::Remote,
            E::GaveUp { last, .. } => last.kind(),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            ScheduleError::Cron(_) => Some(CRON_HINT),
            ScheduleError::RunnerOff(_) => {
                Some("set schedules.runner to \"any\" (or \"daemon\" for odek schedule daemon)")
            }
            ScheduleError::GaveUp { last, .. } => last.hint(),
            _ => None,
        }
    }
}

/// Why a cron expression or a zone cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    /// An `@…` word that is not one.
    #[error(
        "\"{expr}\" is not a cron expression: use @hourly, @daily, @weekly, @monthly or @yearly ({reason})"
    )]
    NotAnAlias {
        /// The expression.
        expr: String,
        /// What the parser said.
        reason: croner::errors::CronError,
    },
    /// Not five fields.
    #[error(
        "\"{expr}\" has {count} field(s); a cron expression has 5: minute hour day-of-month month day-of-week (or @hourly, @daily, @weekly, @monthly, @yearly)"
    )]
    FieldCount {
        /// The expression.
        expr: String,
        /// Its fields.
        count: usize,
    },
    /// One field is wrong.
    #[error("field {index} ({name}) \"{field}\" is not valid: {reason}")]
    Field {
        /// Its place (1-based).
        index: usize,
        /// What it is (`minute`, …).
        name: &'static str,
        /// The field as given.
        field: String,
        /// What the parser said.
        reason: croner::errors::CronError,
    },
    /// The fields are each fine, the whole is not.
    #[error("\"{expr}\" is not a valid cron expression: {reason}")]
    Invalid {
        /// The expression.
        expr: String,
        /// What the parser said.
        reason: croner::errors::CronError,
    },
    /// The zone is not an IANA zone of this system.
    #[error("unknown time zone \"{name}\" (an IANA name such as Europe/Berlin): {reason}")]
    UnknownZone {
        /// The zone given.
        name: String,
        /// What the zone database said.
        reason: jiff::Error,
    },
}

impl Classified for CronError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Usage
    }

    fn hint(&self) -> Option<&'static str> {
        Some(CRON_HINT)
    }
}

/// How to write a cron expression and a zone.
const CRON_HINT: &str =
    "odek schedule next --help; e.g. --cron '0 8 * * MON-FRI' or @daily, --tz Europe/Berlin";

/// Why a chat service did not take an answer, and how long it asked to wait.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ChatFailure {
    /// What went wrong.
    pub error: Box<dyn std::error::Error + Send + Sync>,
    /// The wait the service asked for before the next try.
    pub retry_after: Option<Duration>,
}

impl Classified for ChatFailure {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Remote
    }
}
