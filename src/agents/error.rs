//! Why an agent file is skipped ([`AgentRule`], one sentence naming the rule) and why an
//! agent could not be trusted or found ([`AgentError`]).

use crate::error::{Classified, ErrorKind};
use crate::skills::{Rule, SkillError};

/// A rule an agent file breaks: the file is skipped with a warning naming it.
#[derive(Debug, thiserror::Error)]
pub enum AgentRule {
    /// No front matter at the top.
    #[error("an agent file must start with a YAML front matter block between `---` lines")]
    NoFrontMatter,
    /// The front matter breaks a rule every Markdown front matter follows (closed, YAML, a
    /// mapping, its required keys as text).
    #[error(transparent)]
    FrontMatter(Rule),
    /// The name has characters a name may not have, or is too long.
    #[error(
        "`name` (\"{name}\") must be 1–{max} lowercase letters, digits, hyphens and underscores"
    )]
    Name {
        /// The name.
        name: String,
        /// Its longest.
        max: usize,
    },
    /// `tools` is neither a string nor a list of strings.
    #[error("`tools` {0}")]
    Tools(crate::tools::claude_names::NotAToolList),
    /// `max_iter` is not a positive whole number.
    #[error("`max_iter` must be a whole number from 1 to {0}")]
    MaxIter(u32),
    /// `trust_level` is neither `untrusted` nor `trusted`.
    #[error("`trust_level` must be \"untrusted\" or \"trusted\"")]
    TrustLevel,
    /// The body is empty.
    #[error("the body (the agent's system prompt, after the front matter) must not be empty")]
    EmptyPrompt,
    /// The file is a symbolic link in a project's folder.
    #[error("a project's agent file must not be a symbolic link")]
    Symlink,
    /// The file is too large.
    #[error("the file is {size} bytes, over the {max}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The file is not UTF-8.
    #[error("the file is not UTF-8 text")]
    NotUtf8,
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(std::io::Error),
}

impl From<Rule> for AgentRule {
    fn from(rule: Rule) -> AgentRule {
        match rule {
            Rule::NoFrontMatter => AgentRule::NoFrontMatter,
            rule => AgentRule::FrontMatter(rule),
        }
    }
}

impl Classified for AgentRule {
    fn kind(&self) -> ErrorKind {
        match self {
            AgentRule::Unreadable(_) => ErrorKind::Io,
            _ => ErrorKind::Usage,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        Some("the format of an agent file: docs/NAMED_AGENTS.md")
    }
}

/// Why `odek agents show|trust|untrust` could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No agent of that name was found.
    #[error("no agent named \"{0}\" (odek agents list shows them)")]
    NotFound(String),
    /// The agent is the user's own, trusted without a record.
    #[error("agent \"{0}\" is your own (in the odek home): it is trusted without a record")]
    UserAgent(String),
    /// The trust records could not be read or written.
    #[error(transparent)]
    Records(#[from] SkillError),
}

impl Classified for AgentError {
    fn kind(&self) -> ErrorKind {
        match self {
            AgentError::NotFound(_) => ErrorKind::NotFound,
            AgentError::UserAgent(_) => ErrorKind::Usage,
            AgentError::Records(e) => e.kind(),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            AgentError::Records(e) => e.hint(),
            _ => None,
        }
    }
}
