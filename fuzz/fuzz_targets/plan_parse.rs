//! Arbitrary text → the strict plan parser: it must never panic, never exceed its cap, and
//! whatever it accepts must be internally consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use odek::plan::{StepStatus, parse_plan_message};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for cap in [0, 1, 12, 50] {
        if let Ok(state) = parse_plan_message(text, cap) {
            assert!(state.steps.len() <= cap);
            for step in &state.steps {
                assert!(!step.id.is_empty() && !step.title.is_empty());
                assert!(StepStatus::parse(step.status.as_str()).is_some());
            }
        }
    }
});
