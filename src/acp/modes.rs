//! odek's session modes ([`Mode`], docs/MODES.md) as ACP session modes: the editor's mode
//! picker switches what a prompt's calls may do without asking. The configured policy is
//! the ground; a mode changes only the classes it names. `read_only`, the name `plan` had
//! before, is still taken from clients.

use serde_json::{Value, json};

pub(crate) use crate::danger_policy::Mode;

/// The `modes` of `session/new` and `session/load`'s answers.
pub(crate) fn state(current: Mode) -> Value {
    let available: Vec<Value> = Mode::ALL
        .iter()
        .map(|m| json!({"id": m.id(), "name": m.label(), "description": m.description()}))
        .collect();
    json!({"currentModeId": current.id(), "availableModes": available})
}
