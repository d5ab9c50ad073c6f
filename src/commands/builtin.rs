//! The names of the slash commands odek answers itself on some surface: the REPL's, ACP's,
//! Telegram's and the web UI's. One list for all of them: a custom command or a skill of one
//! of these names is shadowed everywhere (named in `odek commands list` and in a warning), so
//! `/undo` means the same on every surface.

/// Every built-in command name, without its slash, sorted.
pub const BUILT_IN: &[&str] = &[
    "cancel",
    "compact",
    "exit",
    "help",
    "info",
    "jobs",
    "kill",
    "memory",
    "mode",
    "model",
    "new",
    "plan",
    "plan_delete",
    "plan_resume",
    "plan_status",
    "plan_view",
    "plans",
    "queue",
    "quit",
    "resume",
    "rewind",
    "schedule",
    "schedules",
    "sessions",
    "skills",
    "start",
    "status",
    "stop",
    "undo",
];

/// True when `name` (without its slash) is a built-in command's on some surface. Telegram
/// writes `plan_status` where a file could say `plan-status`: both are the built-in's.
pub fn is_built_in(name: &str) -> bool {
    let lower = name.to_ascii_lowercase().replace('-', "_");
    BUILT_IN.contains(&lower.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_and_every_surface_s_names_are_in_it() {
        let mut sorted = BUILT_IN.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, BUILT_IN);
        for name in [
            "undo",
            "rewind",
            "info",
            "jobs",
            "kill",
            "exit",
            "plan_status",
            "new",
        ] {
            assert!(is_built_in(name), "{name}");
        }
        assert!(is_built_in("Plan-Status"));
        assert!(!is_built_in("review"));
        assert!(!is_built_in("frontend:build"));
    }
}
