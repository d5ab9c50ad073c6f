//! Arbitrary text → the shell lexer and danger classifier: no input may panic, the policy's
//! verdict must agree with the classification, and the work must stay bounded (libFuzzer's
//! `-timeout` catches any input that makes the classifier run away: recursion into `sh -c`,
//! `eval` and substitutions is depth-limited, and every pass is linear in the input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use odek::danger_policy::{Action, DangerClass, DangerPolicy};
use odek::tools::danger::{classify_command, command_argv0, decide_command};

fuzz_target!(|data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else {
        return;
    };
    let classification = classify_command(command);
    let decision = decide_command(&DangerPolicy::default(), command);
    assert_eq!(
        decision.class, classification.class,
        "the policy classifies like the classifier"
    );
    if classification.class == DangerClass::Blocked {
        assert_eq!(decision.action, Action::Deny, "blocked is always denied");
    }
    // Even with everything allowed, blocked commands stay denied.
    let yolo = DangerPolicy {
        action: Some(Action::Allow),
        ..DangerPolicy::default()
    };
    if decide_command(&yolo, command).class == DangerClass::Blocked {
        assert_eq!(decide_command(&yolo, command).action, Action::Deny);
    }
    let _ = command_argv0(command);
});
