//! The `dangerous` policy and the vocabulary it speaks: danger classes, actions and the
//! verdict on one call (see docs/TOOLS.md).
//!
//! A neutral module: `config` reads the policy from files and `tools` classifies commands
//! and gates calls with it, so neither has to depend on the other. How a command gets its
//! class (the shell lexer and classifier) lives in `tools::danger`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod mode;
pub use mode::{Mode, UnknownMode};

/// How risky an action is. Declared in rank order, so `Ord` compares risk (the Go original's v2
/// ranks, with `network_upload` above `network_egress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DangerClass {
    /// Only reads or prints.
    Safe,
    /// Changes files inside the working directory.
    LocalWrite,
    /// Installs or updates software packages.
    Install,
    /// Downloads from or connects to other hosts.
    NetworkEgress,
    /// Sends data to other hosts.
    NetworkUpload,
    /// Runs arbitrary code (interpreters, build tools, unknown executables).
    CodeExecution,
    /// Changes the system outside the working directory.
    SystemWrite,
    /// Makes something run automatically later.
    Persistence,
    /// Reads a known credential location (`~/.ssh`, `/etc/shadow`, cloud credential files,
    /// `.env` outside the project): what is read goes to the model provider. Ranked above
    /// every class that can be trusted for a session, so a command that also reads a
    /// secret is never let through by such trust.
    SecretRead,
    /// Not recognised: fails closed.
    Unknown,
    /// Deletes or overwrites data irrecoverably.
    Destructive,
    /// Never allowed, whatever the configuration says.
    Blocked,
}

impl DangerClass {
    /// Every class, in rank order.
    pub const ALL: [DangerClass; 12] = [
        DangerClass::Safe,
        DangerClass::LocalWrite,
        DangerClass::Install,
        DangerClass::NetworkEgress,
        DangerClass::NetworkUpload,
        DangerClass::CodeExecution,
        DangerClass::SystemWrite,
        DangerClass::Persistence,
        DangerClass::SecretRead,
        DangerClass::Unknown,
        DangerClass::Destructive,
        DangerClass::Blocked,
    ];

    /// The snake_case name used in configuration, events and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            DangerClass::Safe => "safe",
            DangerClass::LocalWrite => "local_write",
            DangerClass::Install => "install",
            DangerClass::NetworkEgress => "network_egress",
            DangerClass::NetworkUpload => "network_upload",
            DangerClass::CodeExecution => "code_execution",
            DangerClass::SystemWrite => "system_write",
            DangerClass::Persistence => "persistence",
            DangerClass::SecretRead => "secret_read",
            DangerClass::Unknown => "unknown",
            DangerClass::Destructive => "destructive",
            DangerClass::Blocked => "blocked",
        }
    }
}

impl fmt::Display for DangerClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a name that is not a danger class.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown danger class \"{0}\" (expected one of: safe, local_write, install, network_egress, network_upload, code_execution, system_write, persistence, secret_read, unknown, destructive, blocked)"
)]
pub struct UnknownDangerClass(
    /// The name that was given.
    pub String,
);

impl FromStr for DangerClass {
    type Err = UnknownDangerClass;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        DangerClass::ALL
            .into_iter()
            .find(|class| class.as_str() == name)
            .ok_or_else(|| UnknownDangerClass(name.to_string()))
    }
}

impl crate::error::Classified for UnknownDangerClass {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

/// What to do with an action of some class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the user (or apply `non_interactive` when there is no terminal).
    Prompt,
}

impl Action {
    /// The lowercase name used in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Prompt => "prompt",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The built-in action for a class: safe and local writes run, destructive, unknown and
/// blocked actions are refused, everything else asks.
pub fn default_action(class: DangerClass) -> Action {
    match class {
        DangerClass::Safe | DangerClass::LocalWrite => Action::Allow,
        DangerClass::SystemWrite
        | DangerClass::NetworkEgress
        | DangerClass::NetworkUpload
        | DangerClass::CodeExecution
        | DangerClass::Install
        | DangerClass::Persistence
        | DangerClass::SecretRead => Action::Prompt,
        DangerClass::Destructive | DangerClass::Unknown | DangerClass::Blocked => Action::Deny,
    }
}

/// A class and a short human reason, e.g. "rm -rf outside the working directory".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The class (the worst over every part of a command).
    pub class: DangerClass,
    /// Why, in a few words, for prompts and events.
    pub reason: String,
    /// What "trust for this session" trusts when it is narrower than the class (`web_fetch`
    /// trusts one host, e.g. `host:example.com`); `None` = the class.
    pub scope: Option<String>,
}

impl Classification {
    /// A classification with its reason.
    pub fn new(class: DangerClass, reason: impl Into<String>) -> Self {
        Self {
            class,
            reason: reason.into(),
            scope: None,
        }
    }

    /// The same, trusted for a session by `scope` rather than by its class.
    pub fn scoped(mut self, scope: impl Into<String>) -> Self {
        self.scope = Some(scope.into());
        self
    }

    /// The riskier of the two; on a tie, `self` (the first reason found) is kept.
    pub fn worse(self, other: Classification) -> Classification {
        if other.class > self.class {
            other
        } else {
            self
        }
    }
}

/// Why a `dangerous` section cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// `non_interactive: prompt`.
    #[error(
        "dangerous.non_interactive must be \"allow\" or \"deny\", not \"prompt\" (there is nobody to ask)"
    )]
    PromptWithoutTerminal,
    /// `classes.blocked` other than deny.
    #[error("dangerous.classes.blocked cannot be \"{0}\": blocked commands are always denied")]
    BlockedNotDenied(Action),
    /// An empty denylist prefix.
    #[error("dangerous.denylist contains an empty entry, which would deny every command")]
    EmptyDenylistEntry,
}

impl crate::error::Classified for PolicyError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "the dangerous section's settings: docs/CONFIG.md; odek config shows where each value comes from",
        )
    }
}

/// The `dangerous` configuration section (the original's `dangerous`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DangerPolicy {
    /// Global action for classes without an override (`"allow"` is YOLO mode; blocked
    /// commands are still denied).
    pub action: Option<Action>,
    /// What a prompt becomes when there is no terminal: allow or deny (default deny).
    pub non_interactive: Option<Action>,
    /// Per-class overrides.
    pub classes: BTreeMap<DangerClass, Action>,
    /// Commands allowed when they match exactly (after trimming).
    pub allowlist: Vec<String>,
    /// Command prefixes that are always denied.
    pub denylist: Vec<String>,
}

/// The verdict on one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The command's class (computed even when a list decided).
    pub class: DangerClass,
    /// What to do.
    pub action: Action,
    /// Why: the classification reason, or the allowlist/denylist entry that decided.
    pub reason: String,
}

impl DangerPolicy {
    /// Checks the section: `non_interactive` must be allow or deny (a prompt cannot be
    /// answered without a terminal), `classes.blocked` may only be deny, and denylist entries
    /// must not be empty (an empty prefix would deny everything).
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.non_interactive == Some(Action::Prompt) {
            return Err(PolicyError::PromptWithoutTerminal);
        }
        if let Some(action) = self.classes.get(&DangerClass::Blocked)
            && *action != Action::Deny
        {
            return Err(PolicyError::BlockedNotDenied(*action));
        }
        if self.denylist.iter().any(|entry| entry.trim().is_empty()) {
            return Err(PolicyError::EmptyDenylistEntry);
        }
        Ok(())
    }

    /// Decides a shell command already classified as `classification`, with
    /// `commands_seen` the simple commands found inside it: blocked commands are always
    /// denied; then an exact allowlist match (trimmed) allows; then a denylist prefix match
    /// denies (checked against the whole command and against every simple command inside
    /// it, so `cd x && git push` matches `git push`); otherwise the class decides.
    pub fn decide_classified_command(
        &self,
        command: &str,
        classification: Classification,
        commands_seen: &[String],
    ) -> Decision {
        let trimmed = command.trim();
        let class = classification.class;
        if class == DangerClass::Blocked {
            return Decision {
                class,
                action: Action::Deny,
                reason: classification.reason,
            };
        }
        if self.allowlist.iter().any(|entry| entry.trim() == trimmed) {
            return Decision {
                class,
                action: Action::Allow,
                reason: "the command is on dangerous.allowlist".to_string(),
            };
        }
        let candidates: Vec<String> = std::iter::once(trimmed)
            .chain(commands_seen.iter().map(String::as_str))
            .map(collapse_whitespace)
            .collect();
        let denied = self.denylist.iter().find(|entry| {
            let prefix = collapse_whitespace(entry);
            !prefix.is_empty() && candidates.iter().any(|c| c.starts_with(&prefix))
        });
        if let Some(entry) = denied {
            return Decision {
                class,
                action: Action::Deny,
                reason: format!("the command matches dangerous.denylist entry \"{entry}\""),
            };
        }
        Decision {
            class,
            action: self.decide_class(class),
            reason: classification.reason,
        }
    }

    /// The action for a class: blocked is always deny; then the per-class override, the
    /// global `action`, and the built-in default.
    pub fn decide_class(&self, class: DangerClass) -> Action {
        if class == DangerClass::Blocked {
            return Action::Deny;
        }
        self.classes
            .get(&class)
            .copied()
            .or(self.action)
            .unwrap_or_else(|| default_action(class))
    }

    /// What a prompt resolves to when there is no terminal: `non_interactive` when it is
    /// allow, deny otherwise.
    pub fn non_interactive_action(&self) -> Action {
        match self.non_interactive {
            Some(Action::Allow) => Action::Allow,
            _ => Action::Deny,
        }
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A classification of `class` for `reason` (shorthand for the classifier's tables).
pub fn classified(class: DangerClass, reason: impl Into<String>) -> Classification {
    Classification::new(class, reason)
}
