//! The session modes every surface offers (`odek run --mode`, the REPL's `/mode`, ACP's
//! mode picker): each changes the classes it names of the configured policy, and `plan`
//! also tells the model to plan (docs/MODES.md).
//!
//! - `plan`: nothing but reading — every class but `safe` is denied and the allowlist is set
//!   aside, so the model reads, searches and keeps its plan.
//! - `ask`: file edits ask too (`local_write`: prompt).
//! - `accept_edits` (ACP's default, odek's own default policy): file edits inside the
//!   working directory run without asking (`local_write`: allow).

use std::fmt;
use std::str::FromStr;

use super::{Action, DangerClass, DangerPolicy};

/// A session's mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Reads, searches and plans; changes nothing and runs nothing.
    Plan,
    /// Asks before every file edit.
    Ask,
    /// Edits files in the working directory without asking.
    #[default]
    AcceptEdits,
}

/// What the model is told in plan mode: one short line in the turn's block (the system
/// prompt stays as it is, so a session's cached prefix does not change with its mode).
const PLAN_NOTE: &str = "[Plan mode: the user wants a plan, not changes. Read and search as needed, keep the plan with the plan tool, and answer with the plan. Edits and commands are refused until the user leaves plan mode.]";

impl Mode {
    /// Every mode, in the order surfaces list them.
    pub const ALL: [Mode; 3] = [Mode::Plan, Mode::Ask, Mode::AcceptEdits];

    /// Its name (`plan`, `ask`, `accept_edits`).
    pub fn id(self) -> &'static str {
        match self {
            Mode::Plan => "plan",
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept_edits",
        }
    }

    /// Its name for people.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Plan => "Plan (read-only)",
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
        }
    }

    /// What it does, in one line.
    pub fn description(self) -> &'static str {
        match self {
            Mode::Plan => "Reads, searches and plans; changes nothing and runs nothing",
            Mode::Ask => "Asks before every file edit and every risky command",
            Mode::AcceptEdits => {
                "Edits files in the working directory without asking; asks before risky commands"
            }
        }
    }

    /// The mode named `id`; `read_only` (ACP's name for `plan` before it had this one) is
    /// taken too.
    pub fn of(id: &str) -> Option<Mode> {
        match id {
            "read_only" => Some(Mode::Plan),
            _ => Mode::ALL.into_iter().find(|m| m.id() == id),
        }
    }

    /// What the model is told in this mode, besides what the policy does (only `plan`).
    pub fn note(self) -> Option<&'static str> {
        (self == Mode::Plan).then_some(PLAN_NOTE)
    }

    /// Changes `policy` to this mode's.
    pub fn apply(self, policy: &mut DangerPolicy) {
        match self {
            Mode::Ask => {
                policy
                    .classes
                    .insert(DangerClass::LocalWrite, Action::Prompt);
            }
            Mode::AcceptEdits => {
                if policy.decide_class(DangerClass::LocalWrite) != Action::Allow {
                    policy
                        .classes
                        .insert(DangerClass::LocalWrite, Action::Allow);
                }
            }
            Mode::Plan => {
                for class in DangerClass::ALL {
                    if class != DangerClass::Safe {
                        policy.classes.insert(class, Action::Deny);
                    }
                }
                policy.allowlist.clear();
            }
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// A name that is not a mode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode \"{0}\" (expected one of: plan, ask, accept_edits)")]
pub struct UnknownMode(
    /// The name that was given.
    pub String,
);

impl crate::error::Classified for UnknownMode {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

impl FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        Mode::of(id).ok_or_else(|| UnknownMode(id.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_changes_only_what_it_names() {
        let configured = DangerPolicy::default();
        let mut ask = configured.clone();
        Mode::Ask.apply(&mut ask);
        assert_eq!(ask.decide_class(DangerClass::LocalWrite), Action::Prompt);
        assert_eq!(
            ask.decide_class(DangerClass::CodeExecution),
            configured.decide_class(DangerClass::CodeExecution)
        );
        let mut accept = configured.clone();
        Mode::AcceptEdits.apply(&mut accept);
        assert_eq!(accept.classes, configured.classes);
        let mut plan = configured.clone();
        plan.allowlist.push("make".into());
        Mode::Plan.apply(&mut plan);
        assert_eq!(plan.decide_class(DangerClass::Safe), Action::Allow);
        for class in [
            DangerClass::LocalWrite,
            DangerClass::CodeExecution,
            DangerClass::NetworkEgress,
        ] {
            assert_eq!(plan.decide_class(class), Action::Deny, "{class:?}");
        }
        assert!(plan.allowlist.is_empty());
    }

    #[test]
    fn names_parse_and_read_only_is_plan() {
        for mode in Mode::ALL {
            assert_eq!(mode.id().parse::<Mode>(), Ok(mode));
        }
        assert_eq!(Mode::of("read_only"), Some(Mode::Plan));
        assert_eq!("yolo".parse::<Mode>(), Err(UnknownMode("yolo".into())));
        assert!(Mode::Plan.note().is_some());
        assert_eq!(Mode::Ask.note(), None);
    }
}
