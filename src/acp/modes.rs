//! odek's policies as ACP session modes: the editor's mode picker switches what a prompt's
//! calls may do without asking. The configured policy is the ground; a mode changes only the
//! classes it names.
//!
//! - `ask`: file edits ask too (`local_write`: prompt).
//! - `accept_edits` (the default, odek's own default policy): file edits inside the working
//!   directory run without asking (`local_write`: allow); the rest as configured.
//! - `read_only`: nothing but reading — every class but `safe` is denied, so the model reads,
//!   searches and keeps its plan.

use serde_json::{Value, json};

use crate::danger_policy::{Action, DangerClass, DangerPolicy};

/// A session's mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    Ask,
    #[default]
    AcceptEdits,
    ReadOnly,
}

const MODES: [Mode; 3] = [Mode::Ask, Mode::AcceptEdits, Mode::ReadOnly];

impl Mode {
    pub(crate) fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::AcceptEdits => "accept_edits",
            Mode::ReadOnly => "read_only",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::AcceptEdits => "Accept edits",
            Mode::ReadOnly => "Read-only (plan)",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Asks before every file edit and every risky command",
            Mode::AcceptEdits => {
                "Edits files in the working directory without asking; asks before risky commands"
            }
            Mode::ReadOnly => "Reads, searches and plans; changes nothing and runs nothing",
        }
    }

    /// The mode of `id`, when there is one.
    pub(crate) fn of(id: &str) -> Option<Mode> {
        MODES.into_iter().find(|m| m.id() == id)
    }

    /// True when `policy` is already this mode's policy.
    pub(crate) fn is(self, policy: &DangerPolicy) -> bool {
        let mut applied = policy.clone();
        self.apply(&mut applied);
        applied.classes == policy.classes
    }

    /// Changes `policy` to this mode's.
    pub(crate) fn apply(self, policy: &mut DangerPolicy) {
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
            Mode::ReadOnly => {
                for class in crate::danger_policy::DangerClass::ALL {
                    if class != DangerClass::Safe {
                        policy.classes.insert(class, Action::Deny);
                    }
                }
                policy.allowlist.clear();
            }
        }
    }
}

/// The `modes` of `session/new` and `session/load`'s answers.
pub(crate) fn state(current: Mode) -> Value {
    let available: Vec<Value> = MODES
        .iter()
        .map(|m| json!({"id": m.id(), "name": m.name(), "description": m.description()}))
        .collect();
    json!({"currentModeId": current.id(), "availableModes": available})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_changes_only_what_it_names() {
        let configured = DangerPolicy::default();
        assert!(Mode::AcceptEdits.is(&configured));
        assert!(!Mode::Ask.is(&configured));
        let mut ask = configured.clone();
        Mode::Ask.apply(&mut ask);
        assert_eq!(ask.decide_class(DangerClass::LocalWrite), Action::Prompt);
        assert_eq!(
            ask.decide_class(DangerClass::CodeExecution),
            configured.decide_class(DangerClass::CodeExecution)
        );
        let mut read_only = configured.clone();
        read_only.allowlist.push("make".into());
        Mode::ReadOnly.apply(&mut read_only);
        assert_eq!(read_only.decide_class(DangerClass::Safe), Action::Allow);
        for class in [
            DangerClass::LocalWrite,
            DangerClass::CodeExecution,
            DangerClass::NetworkEgress,
        ] {
            assert_eq!(read_only.decide_class(class), Action::Deny, "{class:?}");
        }
        assert!(read_only.allowlist.is_empty());
        assert_eq!(Mode::of("read_only"), Some(Mode::ReadOnly));
        assert_eq!(Mode::of("yolo"), None);
    }
}
