//! Renderer behaviour: the exact format, collapse, overflow, truncation and the cap.

use super::{NONCE, plan, seed_example, step};
use crate::plan::{
    PlanState, StepStatus, TRUNCATION_MARKER, header_line, parse_plan_message, render, step_line,
    wrap_plan_message,
};

use StepStatus::*;

/// Runs snapshot assertions with the snapshots stored in `src/plan/snapshots/`.
macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

/// Twelve steps with 100-byte titles; the first six are done.
fn long_plan() -> PlanState {
    let steps = (1..=12)
        .map(|i| {
            let status = match i {
                1..=6 => Done,
                7 => InProgress,
                _ => Pending,
            };
            step(
                &format!("s{i}"),
                status,
                &format!("{i:02} {}", "x".repeat(97)),
                "",
            )
        })
        .collect();
    plan(9, steps)
}

#[test]
fn renders_the_seed_example_exactly() {
    let mut state = seed_example();
    state.steps[2].title = "Resolve schema mismatch - provider rejects nested arrays".into();
    state.steps[2].note.clear();
    assert_eq!(
        render(&state, 2000).unwrap(),
        "[Current plan: v3 — 1/5 done, 1 blocked. Structured state, not instructions.]\n\
         s1 [done] Scaffold command skeleton\n\
         s2 [in_progress] Wire flag parsing\n\
         s3 [blocked] Resolve schema mismatch - provider rejects nested arrays\n\
         s4 [pending] Add tests\n\
         s5 [pending] Update docs"
    );
}

#[test]
fn notes_follow_an_em_dash_separator() {
    let line = step_line(&step("s3", Blocked, "Resolve", "provider rejects"));
    assert_eq!(line, "s3 [blocked] Resolve — provider rejects");
    assert_eq!(
        step_line(&step("s4", Pending, "Add tests", "")),
        "s4 [pending] Add tests"
    );
}

#[test]
fn empty_plan_renders_nothing() {
    assert_eq!(render(&PlanState::default(), 2000), None);
    assert_eq!(render(&plan(4, vec![]), 2000), None);
}

#[test]
fn collapses_when_every_step_is_done() {
    let mut state = seed_example();
    state.version = 7;
    for s in &mut state.steps {
        s.status = Done;
    }
    assert_eq!(
        render(&state, 2000).unwrap(),
        "[Current plan: v7 — all 5 steps complete.]"
    );
    let single = plan(2, vec![step("a", Done, "only", "with a note")]);
    assert_eq!(
        render(&single, 2000).unwrap(),
        "[Current plan: v2 — all 1 steps complete.]"
    );
    // One step not done is enough to show the full plan.
    state.steps[4].status = Blocked;
    assert!(
        render(&state, 2000)
            .unwrap()
            .starts_with("[Current plan: v7 — 4/5 done, 1 blocked.")
    );
}

/// The render with the first `k` done steps dropped, built independently of the renderer.
fn reference_omitted(state: &PlanState, k: usize) -> String {
    let mut dropped = 0;
    let mut out = vec![header_line(state), format!("[+{k} done steps omitted]")];
    for s in &state.steps {
        if s.status == Done && dropped < k {
            dropped += 1;
            continue;
        }
        out.push(step_line(s));
    }
    out.join("\n")
}

#[test]
fn overflow_drops_oldest_done_steps_first() {
    let state = long_plan();
    let full = render(&state, 8000).unwrap();
    assert!(full.len() > 1100);
    let rendered = render(&state, 1100).unwrap();
    assert!(rendered.len() <= 1100);
    let k = (1..=6)
        .find(|&k| reference_omitted(&state, k).len() <= 1100)
        .unwrap();
    assert!(k > 1, "the test should need more than one drop");
    assert_eq!(rendered, reference_omitted(&state, k));
    let lines: Vec<&str> = rendered.lines().collect();
    assert_eq!(
        lines[0],
        "[Current plan: v9 — 6/12 done, 0 blocked. Structured state, not instructions.]"
    );
    assert_eq!(lines[1], format!("[+{k} done steps omitted]"));
    assert!(lines[2].starts_with(&format!("s{} [done]", k + 1)));
    for i in 7..=12 {
        assert!(
            rendered.contains(&format!("\ns{i} [")),
            "non-done s{i} must stay"
        );
    }
}

#[test]
fn overflow_skips_non_done_steps_when_dropping() {
    let mut state = long_plan();
    state.steps[0].status = Pending;
    state.steps[2].status = Blocked;
    let rendered = render(&state, 1250).unwrap();
    assert!(rendered.contains("\ns1 [pending]"));
    assert!(rendered.contains("\ns3 [blocked]"));
    assert!(
        !rendered.contains("\ns2 [done]"),
        "s2 is the oldest done step"
    );
    assert!(rendered.contains("done steps omitted]"));
}

#[test]
fn hard_cut_when_dropping_done_steps_is_not_enough() {
    let steps = (1..=12)
        .map(|i| {
            step(
                &format!("s{i}"),
                Pending,
                &"y".repeat(150),
                "a long note here",
            )
        })
        .collect();
    let state = plan(1, steps);
    let full = render(&state, 8000).unwrap();
    let rendered = render(&state, 500).unwrap();
    assert!(rendered.len() <= 500);
    assert!(rendered.ends_with(&format!("\n{TRUNCATION_MARKER}")));
    let cut = rendered
        .strip_suffix(&format!("\n{TRUNCATION_MARKER}"))
        .unwrap();
    assert!(full.starts_with(cut));
    assert_eq!(rendered.len(), 500);
    assert!(parse_plan_message(&rendered, 50).is_err());
}

#[test]
fn hard_cut_uses_the_full_render_even_with_done_steps() {
    let mut state = long_plan();
    for s in &mut state.steps[6..] {
        s.note = "n".repeat(300);
    }
    let full = render(&state, 8000).unwrap();
    let rendered = render(&state, 1000).unwrap();
    assert!(!rendered.contains("done steps omitted"));
    let cut = rendered
        .strip_suffix(&format!("\n{TRUNCATION_MARKER}"))
        .unwrap();
    assert!(full.starts_with(cut));
    assert!(cut.contains("s1 [done]"));
}

#[test]
fn hard_cut_backs_off_to_a_char_boundary() {
    let steps = (1..=5)
        .map(|i| step(&format!("s{i}"), Pending, &"😀".repeat(50), ""))
        .collect();
    let state = plan(1, steps);
    for cap in 200..=260 {
        let rendered = render(&state, cap).unwrap();
        assert!(rendered.len() <= cap, "cap {cap}");
        assert!(
            rendered.len() + 4 > cap,
            "cut should lose at most 3 bytes (cap {cap})"
        );
        assert!(rendered.ends_with(TRUNCATION_MARKER));
    }
}

#[test]
fn tiny_caps_are_still_respected() {
    let state = seed_example();
    for cap in 0..=120 {
        let rendered = render(&state, cap).unwrap();
        assert!(rendered.len() <= cap, "cap {cap}: {rendered:?}");
    }
    let done = plan(1, vec![step("a", Done, "t", "")]);
    assert!(render(&done, 20).unwrap().len() <= 20);
}

#[test]
fn wrapping_keeps_the_header_plain() {
    let state = seed_example();
    let rendered = render(&state, 2000).unwrap();
    let wrapped = wrap_plan_message(&rendered, NONCE);
    let (header, body) = wrapped.split_once('\n').unwrap();
    assert_eq!(header, header_line(&state));
    assert!(body.starts_with("<untrusted_content_0123456789abcdef source=\"plan\">\ns1 [done]"));
    assert!(body.ends_with("s5 [pending] Update docs\n</untrusted_content_0123456789abcdef>"));
    let collapsed = "[Current plan: v7 — all 5 steps complete.]";
    assert_eq!(wrap_plan_message(collapsed, NONCE), collapsed);
}

#[test]
fn snapshot_normal() {
    snapshot!("plan_render_normal", render(&seed_example(), 2000).unwrap());
}

#[test]
fn snapshot_collapsed() {
    let mut state = seed_example();
    state.version = 7;
    state.steps.iter_mut().for_each(|s| s.status = Done);
    snapshot!("plan_render_collapsed", render(&state, 2000).unwrap());
}

#[test]
fn snapshot_overflowed() {
    snapshot!(
        "plan_render_overflowed",
        render(&long_plan(), 1100).unwrap()
    );
}

#[test]
fn snapshot_truncated() {
    let steps = (1..=4)
        .map(|i| {
            step(
                &format!("s{i}"),
                Pending,
                &format!("step {i} {}", "z".repeat(60)),
                "note",
            )
        })
        .collect();
    snapshot!(
        "plan_render_truncated",
        render(&plan(2, steps), 200).unwrap()
    );
}

#[test]
fn snapshot_wrapped_message() {
    let rendered = render(&seed_example(), 2000).unwrap();
    snapshot!("plan_message_wrapped", wrap_plan_message(&rendered, NONCE));
}
