//! Corrective hints: after repeated failures of one tool, or repeated identical calls, the
//! loop adds one system message telling the model to change approach.

use std::collections::HashMap;

use crate::plan::PlanState;

/// The hint of the blocked-step streak (see [`crate::plan::BLOCKED_STREAK`]).
pub const BLOCKED_STREAK_HINT: &str = "⚠️ Plan steps were marked blocked 3 times in a row without progress. Stop retrying the blocked work: decompose the blocked step into smaller steps you can do, or reorder the plan to continue with a step that is not blocked (replan with plan create if the approach has changed).";

/// The plan-aware line that ends the hint message when there is a plan:
/// `plan: in_progress=<id>, next_pending=<id>` (`none` where there is no such step). Ids
/// only: titles are model-written and the hint is an unwrapped system message.
pub fn plan_suffix(plan: &PlanState) -> Option<String> {
    if plan.version == 0 || plan.steps.is_empty() {
        return None;
    }
    let (current, next) = plan.position();
    let id = |s: Option<&crate::plan::PlanStep>| s.map_or("none", |s| s.id.as_str()).to_string();
    Some(format!(
        "plan: in_progress={}, next_pending={}",
        id(current),
        id(next)
    ))
}

/// Consecutive failures of one tool before a hint.
pub const ERROR_HINT_THRESHOLD: u32 = 3;
/// Identical consecutive calls before a stall hint.
pub const STALL_HINT_THRESHOLD: u32 = 3;

/// Tracks failures and repeats across a run.
#[derive(Debug, Default)]
pub struct HintTracker {
    consecutive_errors: HashMap<String, u32>,
    last_call: Option<String>,
    repeat_streak: u32,
}

impl HintTracker {
    /// Records one call's outcome (in call order); returns a hint when one is due.
    pub fn observe(
        &mut self,
        tool: &str,
        raw_args: &str,
        ok: bool,
        output: &str,
    ) -> Option<String> {
        if ok {
            self.consecutive_errors.remove(tool);
            self.observe_repeat(tool, raw_args)
        } else {
            self.last_call = None;
            self.repeat_streak = 0;
            let count = self.consecutive_errors.entry(tool.to_string()).or_insert(0);
            *count += 1;
            if *count >= ERROR_HINT_THRESHOLD {
                *count = 0;
                Some(error_hint(tool, output))
            } else {
                None
            }
        }
    }

    fn observe_repeat(&mut self, tool: &str, raw_args: &str) -> Option<String> {
        let fingerprint = format!("{tool}\0{raw_args}");
        if self.last_call.as_deref() == Some(fingerprint.as_str()) {
            self.repeat_streak += 1;
        } else {
            self.last_call = Some(fingerprint);
            self.repeat_streak = 1;
        }
        if self.repeat_streak >= STALL_HINT_THRESHOLD {
            let n = self.repeat_streak;
            self.repeat_streak = 0;
            self.last_call = None;
            Some(format!(
                "⚠️ You called \"{tool}\" with identical arguments {n} times in a row with no new information. Change approach: vary the arguments, switch to a different tool, or move on to the next step — repeating the same call will not produce a different result."
            ))
        } else {
            None
        }
    }
}

fn error_hint(tool: &str, output: &str) -> String {
    let lower = output.to_ascii_lowercase();
    if lower.contains("is a directory") {
        format!(
            "⚠️ Tool \"{tool}\" keeps failing on a directory. Use search_files with target \"files\" to explore directories instead."
        )
    } else if tool == "shell" && (lower.contains("exit code") || lower.contains("exit status")) {
        "⚠️ Shell command failed repeatedly. Try a different approach: use read_file to inspect files, or break the command into simpler steps.".to_string()
    } else if lower.contains("not found") || lower.contains("no such file") {
        format!(
            "⚠️ Tool \"{tool}\" cannot find the path. Use search_files (target \"files\") to locate the correct path first."
        )
    } else if lower.contains("binary") {
        format!(
            "⚠️ Tool \"{tool}\" cannot read binary files. Use shell tools such as file, xxd or sha256sum to inspect them."
        )
    } else {
        format!(
            "⚠️ Tool \"{tool}\" keeps failing. Try a different tool: use shell for shell commands, search_files for finding files, or read_file for reading files."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn third_consecutive_failure_hints_once() {
        let mut t = HintTracker::default();
        assert!(
            t.observe("read_file", "{}", false, "error: x: No such file")
                .is_none()
        );
        assert!(
            t.observe("read_file", "{}", false, "error: x: No such file")
                .is_none()
        );
        let h = t
            .observe("read_file", "{}", false, "error: x: No such file")
            .expect("hint");
        assert!(h.contains("cannot find the path"));
        assert!(
            t.observe("read_file", "{}", false, "e").is_none(),
            "counter reset"
        );
    }

    #[test]
    fn success_resets_the_error_counter() {
        let mut t = HintTracker::default();
        t.observe("shell", "a", false, "[exit code: 1]");
        t.observe("shell", "a", false, "[exit code: 1]");
        t.observe("shell", "b", true, "ok");
        assert!(t.observe("shell", "a", false, "[exit code: 1]").is_none());
    }

    #[test]
    fn shell_failures_get_the_shell_hint() {
        let mut t = HintTracker::default();
        for _ in 0..2 {
            t.observe("shell", "a", false, "[exit code: 2]");
        }
        let h = t
            .observe("shell", "a", false, "[exit code: 2]")
            .expect("hint");
        assert!(h.starts_with("⚠️ Shell command failed repeatedly."));
    }

    #[test]
    fn three_identical_successful_calls_are_a_stall() {
        let mut t = HintTracker::default();
        assert!(
            t.observe("shell", r#"{"command":"ls"}"#, true, "")
                .is_none()
        );
        assert!(
            t.observe("shell", r#"{"command":"ls"}"#, true, "")
                .is_none()
        );
        let h = t
            .observe("shell", r#"{"command":"ls"}"#, true, "")
            .expect("stall");
        assert!(h.contains("identical arguments 3 times in a row"));
        assert!(
            t.observe("shell", r#"{"command":"ls"}"#, true, "")
                .is_none()
        );
    }

    fn plan(statuses: &[(&str, crate::plan::StepStatus)]) -> PlanState {
        PlanState {
            version: 3,
            steps: statuses
                .iter()
                .map(|(id, status)| crate::plan::PlanStep {
                    id: id.to_string(),
                    title: format!("<b>{id}</b> title"),
                    status: *status,
                    note: String::new(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_plan_line_names_the_current_and_next_pending_step_by_id() {
        use crate::plan::StepStatus::*;
        let p = plan(&[
            ("s1", Pending),
            ("s2", InProgress),
            ("s3", Done),
            ("s4", Pending),
        ]);
        assert_eq!(
            plan_suffix(&p).as_deref(),
            Some("plan: in_progress=s2, next_pending=s4"),
            "the next pending step after the current one"
        );
        let p = plan(&[("s1", Pending), ("s2", InProgress), ("s3", Done)]);
        assert_eq!(
            plan_suffix(&p).as_deref(),
            Some("plan: in_progress=s2, next_pending=s1"),
            "else the first pending one"
        );
        let p = plan(&[("a", Done), ("b", Pending)]);
        assert_eq!(
            plan_suffix(&p).as_deref(),
            Some("plan: in_progress=none, next_pending=b")
        );
        let p = plan(&[("a", Done), ("b", Blocked)]);
        assert_eq!(
            plan_suffix(&p).as_deref(),
            Some("plan: in_progress=none, next_pending=none"),
            "a plan with nothing to name still says so"
        );
        assert_eq!(plan_suffix(&PlanState::default()), None, "no plan, no line");
    }

    #[test]
    fn different_arguments_are_not_a_stall() {
        let mut t = HintTracker::default();
        for i in 0..5 {
            assert!(t.observe("shell", &i.to_string(), true, "").is_none());
        }
    }
}
