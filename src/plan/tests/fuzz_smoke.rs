//! Fuzz smoke tests (the CI stand-in for `fuzz/`): arbitrary input never panics the parser
//! or the tool, and the tool never leaves a state that the renderer and parser disagree on.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::NONCE;
use crate::plan::{
    PlanLimits, PlanState, PlanStore, TRUNCATION_MARKER, parse_plan_message, render,
    wrap_plan_message,
};

/// Fragments of the plan format, so random input reaches the parser's deeper branches.
const PLAN_FRAGMENTS: &[&str] = &[
    "[Current plan:",
    " v3",
    " v",
    " — ",
    "1/3 done",
    ", ",
    "1 blocked",
    ". Structured state, not instructions.]",
    "all 3 steps complete.]",
    "\n",
    "s1",
    " [",
    "done",
    "blocked",
    "pending",
    "in_progress",
    "] ",
    "title",
    "[+2 done steps omitted]",
    "<untrusted_content_ab source=\"plan\">",
    "</untrusted_content_ab>",
    "</untrusted_content_",
    TRUNCATION_MARKER,
    " ",
    "]",
    "é",
    "😀",
    "\r",
];

fn plan_like_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PLAN_FRAGMENTS), 0..40).prop_map(|p| p.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "s1",
            "s2",
            "",
            " ",
            "done",
            "x y",
            "[",
            "—",
            "\n",
            "untrusted_content"
        ])
        .prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["id", "title", "note", "status", "x"])
                    .prop_map(String::from),
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Tool arguments: mostly well-shaped calls with random contents, sometimes pure noise.
fn tool_args() -> impl Strategy<Value = String> {
    let verb = prop::sample::select(vec!["create", "update", "complete", "get", "bogus"]);
    let shaped =
        (verb, json_value(), json_value(), json_value()).prop_map(|(verb, steps, updates, id)| {
            json!({"verb": verb, "steps": steps, "updates": updates, "step_id": id}).to_string()
        });
    let status = prop::sample::select(vec![
        "pending",
        "in_progress",
        "done",
        "blocked",
        "nope",
        "",
    ]);
    let ids = prop::sample::select(vec!["s1", "s2", "s3", "<untrusted_content_4"]);
    let text = prop_oneof![".{0,8}", Just("a untrusted_content b".to_owned())];
    let valid_ish = prop::collection::vec((ids, status, text), 1..4).prop_map(|entries| {
        let steps: Vec<_> = entries
            .iter()
            .map(|(id, _, t)| json!({"id": id, "title": t}))
            .collect();
        let updates: Vec<_> = entries
            .iter()
            .map(|(id, s, n)| json!({"id": id, "status": s, "note": n}))
            .collect();
        if entries.len() % 2 == 0 {
            json!({"verb": "create", "steps": steps}).to_string()
        } else {
            json!({"verb": "update", "updates": updates}).to_string()
        }
    });
    prop_oneof![3 => shaped, 3 => valid_ish, 1 => ".{0,64}", 1 => plan_like_text()]
}

/// The invariant the `plan_args` fuzz target checks after every call: the state renders
/// within the cap and, unless overflowed or truncated, the wrapped message parses back to
/// it (titles and notes carrying the wrapper's marker come back defused; ids carrying it
/// are the documented exception, see `round_trip::ids_carrying_the_wrapper_marker_*`).
pub(crate) fn assert_render_and_parse_agree(state: &PlanState, max_render_chars: usize) {
    let Some(rendered) = render(state, max_render_chars) else {
        assert!(state.steps.is_empty());
        return;
    };
    assert!(rendered.len() <= max_render_chars);
    let overflowed =
        super::properties::is_overflowed(&rendered) || rendered.ends_with(TRUNCATION_MARKER);
    if overflowed || state.steps.iter().any(|s| s.id.contains(MARKER)) {
        return;
    }
    let parsed = parse_plan_message(&wrap_plan_message(&rendered, NONCE), 50)
        .unwrap_or_else(|e| panic!("store state does not parse back: {e}\n{rendered}"));
    if state.is_complete() {
        assert_eq!(
            parsed,
            PlanState {
                version: state.version,
                steps: vec![]
            }
        );
        return;
    }
    let mut expected = state.clone();
    for step in &mut expected.steps {
        step.title = step.title.replace(MARKER, NEUTRALISED);
        step.note = step.note.replace(MARKER, NEUTRALISED);
    }
    assert_eq!(parsed, expected);
}

const MARKER: &str = "untrusted_content";
const NEUTRALISED: &str = "untrusted\u{02CD}content";

proptest! {
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(512), ..ProptestConfig::default() })]

    #[test]
    fn parser_never_panics_on_any_string(input in ".{0,300}", cap in 0usize..60) {
        let _ = parse_plan_message(&input, cap);
    }

    #[test]
    fn parser_never_panics_on_plan_like_text(input in plan_like_text(), cap in 0usize..60) {
        if let Ok(state) = parse_plan_message(&input, cap) {
            prop_assert!(state.steps.len() <= cap);
        }
    }

    #[test]
    fn tool_never_panics_and_stays_consistent(calls in prop::collection::vec(tool_args(), 1..12)) {
        let store = PlanStore::new(PlanLimits::clamped(3, 200));
        for args in &calls {
            let before = store.snapshot();
            match store.call(args) {
                Ok(_) => prop_assert!(store.version() >= before.version),
                Err(_) => prop_assert_eq!(store.snapshot(), before),
            }
            assert_render_and_parse_agree(&store.snapshot(), store.limits().max_render_chars);
        }
    }
}
