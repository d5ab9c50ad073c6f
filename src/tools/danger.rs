//! TEMPORARY placeholder with the agreed API; replaced by the `pure` branch.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Danger class of a tool call, in rank order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DangerClass {
    /// Read-only.
    Safe,
    /// Writes inside the working tree.
    LocalWrite,
    /// Installs packages.
    Install,
    /// Network reads.
    NetworkEgress,
    /// Network writes.
    NetworkUpload,
    /// Runs code.
    CodeExecution,
    /// Writes outside the tree.
    SystemWrite,
    /// Survives the session.
    Persistence,
    /// Not recognised.
    Unknown,
    /// Destroys data.
    Destructive,
    /// Never allowed.
    Blocked,
}

impl DangerClass {
    /// Config name.
    pub fn as_str(self) -> &'static str {
        "unknown"
    }
}

/// What to do with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the user.
    Prompt,
}

/// Classification result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// Class.
    pub class: DangerClass,
    /// Why.
    pub reason: String,
}

/// Classifies a shell command.
pub fn classify_command(_command: &str) -> Classification {
    Classification {
        class: DangerClass::Unknown,
        reason: String::new(),
    }
}

/// Classifies a write target.
pub fn classify_write_path(_path: &str, _cwd: &std::path::Path) -> Classification {
    Classification {
        class: DangerClass::LocalWrite,
        reason: String::new(),
    }
}

/// First real word of a command.
pub fn command_argv0(command: &str) -> String {
    command.split_whitespace().next().unwrap_or("").to_string()
}

/// The `dangerous` config section.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DangerPolicy {
    /// Global action.
    #[serde(default)]
    pub action: Option<Action>,
    /// Action without a terminal.
    #[serde(default)]
    pub non_interactive: Option<Action>,
    /// Per-class overrides.
    #[serde(default)]
    pub classes: BTreeMap<DangerClass, Action>,
    /// Exact commands always allowed.
    #[serde(default)]
    pub allowlist: Vec<String>,
    /// Command prefixes always denied.
    #[serde(default)]
    pub denylist: Vec<String>,
}

/// A decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Class.
    pub class: DangerClass,
    /// Action.
    pub action: Action,
    /// Why.
    pub reason: String,
}

impl DangerPolicy {
    /// Validates.
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    /// Decides a command.
    pub fn decide_command(&self, command: &str) -> Decision {
        let c = classify_command(command);
        Decision {
            class: c.class,
            action: self.decide_class(c.class),
            reason: c.reason,
        }
    }
    /// Decides a class.
    pub fn decide_class(&self, _class: DangerClass) -> Action {
        Action::Deny
    }
    /// Non-interactive action.
    pub fn non_interactive_action(&self) -> Action {
        self.non_interactive.unwrap_or(Action::Deny)
    }
}
