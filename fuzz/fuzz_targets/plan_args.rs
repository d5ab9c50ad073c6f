//! Arbitrary text → a sequence of `plan` tool calls on one store: no call may panic, a
//! rejected call must leave the state untouched, and the state the store holds must always
//! render to a message the strict parser reads back (unless overflowed or truncated).
//!
//! The input is split on NUL bytes, each piece being the arguments of one call.
#![no_main]

use libfuzzer_sys::fuzz_target;
use odek::plan::{
    PlanLimits, PlanState, PlanStore, TRUNCATION_MARKER, parse_plan_message, render,
    wrap_plan_message,
};

const NEUTRALISED: &str = "untrusted\u{02CD}content";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let store = PlanStore::new(PlanLimits::clamped(4, 300));
    for args in text.split('\0').take(16) {
        let before = store.snapshot();
        if store.call(args).is_err() {
            assert_eq!(
                store.snapshot(),
                before,
                "a rejected call changed the state"
            );
        }
        check_render_parse_agree(&store.snapshot(), store.limits().max_render_chars);
    }
});

fn check_render_parse_agree(state: &PlanState, cap: usize) {
    let Some(rendered) = render(state, cap) else {
        assert!(state.steps.is_empty());
        return;
    };
    assert!(rendered.len() <= cap);
    let overflowed = rendered
        .lines()
        .nth(1)
        .is_some_and(|l| l.starts_with("[+") && l.ends_with(" done steps omitted]"));
    if overflowed || rendered.ends_with(TRUNCATION_MARKER) {
        return;
    }
    // The wrapper defuses its own marker inside the body; ids carrying it are the one
    // documented case where resume may legitimately fail (the neutralised id can exceed 32
    // bytes), so only titles and notes are compared after neutralising.
    if state
        .steps
        .iter()
        .any(|s| s.id.contains("untrusted_content"))
    {
        return;
    }
    let parsed = parse_plan_message(&wrap_plan_message(&rendered, "00ff00ff00ff00ff"), 50)
        .unwrap_or_else(|e| panic!("state does not parse back: {e}\n{rendered}"));
    if state.is_complete() {
        assert!(parsed.steps.is_empty() && parsed.version == state.version);
        return;
    }
    let mut expected = state.clone();
    for step in &mut expected.steps {
        step.title = step.title.replace("untrusted_content", NEUTRALISED);
        step.note = step.note.replace("untrusted_content", NEUTRALISED);
    }
    assert_eq!(parsed, expected);
}
