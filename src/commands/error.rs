//! Why a command could not be run, trusted or forgotten.

use std::path::PathBuf;

use crate::error::{Classified, ErrorKind};

/// Why a typed `/NAME …` cannot run, or a command cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// No command has this name.
    #[error("no command /{0}")]
    Unknown(String),
    /// A project command that sets `model` or `allowed-tools` is not trusted (or changed).
    #[error(
        "command /{name} ({}) sets {what} and {state}: review the file, then run `odek commands trust {name}`",
        path.display()
    )]
    NotTrusted {
        /// The command.
        name: String,
        /// Its file.
        path: PathBuf,
        /// What it sets (`model`, `allowed-tools`, or both).
        what: &'static str,
        /// `is not trusted` or `changed since you trusted it`.
        state: &'static str,
    },
    /// A command sets `model` but this process's answers come from a replayed file.
    #[error(
        "command /{name} sets the model \"{model}\", which a replayed or recorded run cannot ask"
    )]
    ModelNeedsEndpoint {
        /// The command.
        name: String,
        /// The model it sets.
        model: String,
    },
    /// `odek commands trust` of a command that is trusted without a record.
    #[error("command /{name} is {source_label}: trusted without a record")]
    AlwaysTrusted {
        /// The command.
        name: String,
        /// Where it comes from.
        source_label: &'static str,
    },
    /// A skill run as a command could not be read.
    #[error(transparent)]
    Skill(#[from] crate::skills::SkillError),
}

impl Classified for CommandError {
    fn kind(&self) -> ErrorKind {
        match self {
            CommandError::Unknown(_) => ErrorKind::NotFound,
            CommandError::NotTrusted { .. } => ErrorKind::Config,
            CommandError::ModelNeedsEndpoint { .. } | CommandError::AlwaysTrusted { .. } => {
                ErrorKind::Usage
            }
            CommandError::Skill(e) => e.kind(),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            CommandError::Unknown(_) => Some(
                "odek commands list shows the commands; a task that only starts like one: put a word before the `/`",
            ),
            CommandError::NotTrusted { .. } => Some("docs/COMMANDS.md says what trust covers"),
            CommandError::ModelNeedsEndpoint { .. } => {
                Some("run it against the model endpoint (without --replay or --record)")
            }
            CommandError::AlwaysTrusted { .. } => None,
            CommandError::Skill(e) => e.hint(),
        }
    }
}
