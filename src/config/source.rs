//! Where a resolved value came from: a default, a file, a variable, a named agent, a flag, a
//! sub-agent's task or the chosen provider.

use std::fmt;
use std::path::PathBuf;

/// Where a resolved value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Built-in default.
    Default,
    /// The global file.
    Global(PathBuf),
    /// The project file.
    Project(PathBuf),
    /// An environment variable.
    Env(String),
    /// A command-line flag.
    Flag,
    /// A sub-agent's task: what the parent decided for the child (its limits, its policy,
    /// its tools), over every other layer.
    SubagentTask,
    /// A named agent's file (`odek run --agent NAME`): its prompt, model, provider, tools and
    /// limit, between the environment and the flags.
    Agent(String),
    /// The provider named by `provider` (its endpoint, its model).
    Provider(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Global(p) => write!(f, "global {}", p.display()),
            Source::Project(p) => write!(f, "project {}", p.display()),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Flag => f.write_str("flag"),
            Source::SubagentTask => f.write_str("subagent task"),
            Source::Agent(name) => write!(f, "agent {name}"),
            Source::Provider(id) => write!(f, "provider {id}"),
        }
    }
}
