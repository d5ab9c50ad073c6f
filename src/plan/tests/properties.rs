//! Property tests: every valid state round-trips unless overflowed, and the cap always holds.

use proptest::prelude::*;

use super::NONCE;
use crate::plan::{
    MAX_TITLE_BYTES, PlanState, PlanStep, StepStatus, TRUNCATION_MARKER, normalize_text,
    parse_plan_message, render, wrap_plan_message,
};

/// Characters that stress the format: separators, brackets, markers, multi-byte text.
const HOSTILE: &[&str] = &[
    "a",
    "Z",
    "7",
    " ",
    " ",
    ":",
    "[",
    "]",
    "—",
    " — ",
    "-",
    "\n",
    "\r\n",
    "\t",
    "é",
    "中",
    "😀",
    "\"",
    "\\",
    "<",
    ">",
    "/",
    "[Current plan:",
    "[+1 done steps omitted]",
    "done",
    ",",
    ".",
];

fn hostile_text(max_parts: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(HOSTILE), 0..max_parts).prop_map(|p| p.concat())
}

fn valid_title() -> impl Strategy<Value = String> {
    hostile_text(60).prop_map(|raw| {
        let title = normalize_text(&raw);
        let title = crate::plan::text::cut_at_char_boundary(&title, MAX_TITLE_BYTES).trim();
        if title.is_empty() {
            "untitled".to_owned()
        } else {
            title.to_owned()
        }
    })
}

fn id_token() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_.:/<>+\\-éß中😀]{1,6}"
}

fn status() -> impl Strategy<Value = StepStatus> {
    prop::sample::select(StepStatus::ALL.to_vec())
}

fn valid_step() -> impl Strategy<Value = PlanStep> {
    (id_token(), valid_title(), status(), hostile_text(40)).prop_map(|(id, title, status, note)| {
        PlanStep {
            id,
            title,
            status,
            note: normalize_text(&note),
        }
    })
}

/// A valid plan: 1..=max steps with unique ids, version in the parseable range.
fn valid_state(max_steps: usize) -> impl Strategy<Value = PlanState> {
    (
        0u64..1_000_000_000,
        prop::collection::vec(valid_step(), 1..=max_steps),
    )
        .prop_map(|(version, mut steps)| {
            for (i, step) in steps.iter_mut().enumerate() {
                step.id = format!("{}-{i}", step.id);
            }
            PlanState { version, steps }
        })
}

/// True when the line after the header is the omission marker (ids cannot start with `[`,
/// so no step line can look like it).
pub(super) fn is_overflowed(rendered: &str) -> bool {
    rendered
        .lines()
        .nth(1)
        .is_some_and(|line| line.starts_with("[+") && line.ends_with(" done steps omitted]"))
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn valid_states_round_trip(state in valid_state(50), cap in 200usize..=8000) {
        let rendered = render(&state, cap).unwrap();
        let truncated = rendered.ends_with(TRUNCATION_MARKER);
        let parsed = parse_plan_message(&rendered, 50);
        if state.is_complete() && !truncated {
            prop_assert_eq!(parsed, Ok(PlanState { version: state.version, steps: vec![] }));
        } else if !truncated && !is_overflowed(&rendered) {
            prop_assert_eq!(parsed.as_ref(), Ok(&state));
            let wrapped = wrap_plan_message(&rendered, NONCE);
            let reparsed = parse_plan_message(&wrapped, 50);
            prop_assert_eq!(reparsed.as_ref(), Ok(&state));
        } else {
            prop_assert!(parsed.is_err());
            prop_assert!(parse_plan_message(&wrap_plan_message(&rendered, NONCE), 50).is_err());
        }
    }

    #[test]
    fn render_never_exceeds_the_cap(state in valid_state(50), cap in 200usize..=8000) {
        let rendered = render(&state, cap).unwrap();
        prop_assert!(rendered.len() <= cap, "{} > {}", rendered.len(), cap);
        let full = render(&state, usize::MAX).unwrap();
        if full.len() <= cap {
            prop_assert_eq!(&rendered, &full);
        } else if let Some(cut) = rendered.strip_suffix(&format!("\n{TRUNCATION_MARKER}")) {
            prop_assert!(full.starts_with(cut));
        } else {
            // Overflow: header unchanged, marker next, only done steps missing.
            prop_assert!(is_overflowed(&rendered));
            let full_header = full.lines().next().unwrap();
            prop_assert_eq!(rendered.lines().next().unwrap(), full_header);
            for step in state.steps.iter().filter(|s| s.status != StepStatus::Done) {
                prop_assert!(rendered.contains(&crate::plan::step_line(step)));
            }
        }
    }

    #[test]
    fn default_sized_plans_parse_at_the_default_cap(state in valid_state(12)) {
        let rendered = render(&state, 8000).unwrap();
        prop_assume!(!state.is_complete() && !is_overflowed(&rendered));
        prop_assume!(!rendered.ends_with(TRUNCATION_MARKER));
        prop_assert_eq!(parse_plan_message(&rendered, 12), Ok(state));
    }
}
