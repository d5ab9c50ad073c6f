//! The validation matrix: every rejected call returns its exact error text and leaves the
//! state (and the event stream) untouched.

use serde_json::json;

use super::{busy_store, recording_store};
use crate::plan::{PlanLimits, PlanStore, StepStatus};

/// Runs `args` against a busy store and asserts the exact error and an unchanged state.
fn assert_rejected(args: &str, expected: &str) {
    let (store, events) = busy_store();
    assert_rejected_on(&store, args, expected);
    assert!(events.lock().unwrap().is_empty(), "{args}: fired an event");
}

fn assert_rejected_on(store: &PlanStore, args: &str, expected: &str) {
    let before = store.snapshot();
    let err = store.call(args).expect_err(args);
    assert_eq!(err.to_string(), expected, "args: {args}");
    assert_eq!(store.snapshot(), before, "{args}: state changed");
}

fn steps_json(count: usize) -> serde_json::Value {
    let steps: Vec<_> = (0..count)
        .map(|i| json!({ "id": format!("n{i}"), "title": format!("step {i}") }))
        .collect();
    json!({ "verb": "create", "steps": steps })
}

#[test]
fn bad_args_are_parse_errors() {
    assert_rejected(
        "",
        "plan: parse args: EOF while parsing a value at line 1 column 0",
    );
    assert_rejected(
        "not json",
        "plan: parse args: expected ident at line 1 column 2",
    );
    assert_rejected(
        "[\"create\"]",
        "plan: parse args: invalid type: sequence, expected a map at line 1 column 0",
    );
    assert_rejected(
        r#"{"verb":"create","steps":"s1"}"#,
        "plan: parse args: invalid type: string \"s1\", expected a sequence",
    );
    assert_rejected(
        r#"{"verb":"create","steps":[{"id":7,"title":"t"}]}"#,
        "plan: parse args: invalid type: integer `7`, expected a string",
    );
    assert_rejected(
        r#"{"verb":"create","steps":[["s1","t"]]}"#,
        "plan: parse args: invalid type: sequence, expected a map",
    );
    assert_rejected(
        r#"{"verb":"update","updates":[{"id":"s1","status":1}]}"#,
        "plan: parse args: invalid type: integer `1`, expected a string",
    );
    assert_rejected(
        r#"{"verb":42}"#,
        "plan: parse args: invalid type: integer `42`, expected a string",
    );
}

#[test]
fn unknown_verbs_are_rejected() {
    let want = |v: &str| format!("plan: unknown verb {v} (want create/update/complete/get)");
    assert_rejected(r#"{"verb":"destroy"}"#, &want("\"destroy\""));
    assert_rejected(r#"{"verb":"Create"}"#, &want("\"Create\""));
    assert_rejected(r#"{"verb":" get"}"#, &want("\" get\""));
    assert_rejected("{}", &want("\"\""));
    assert_rejected(r#"{"verb":null,"steps":[]}"#, &want("\"\""));
    assert_rejected(r#"{"verb":"a\"b\\c\n"}"#, &want(r#""a\"b\\c\n""#));
}

#[test]
fn create_caps_step_count() {
    assert_rejected(
        r#"{"verb":"create"}"#,
        "plan: create wants 1..12 steps, got 0",
    );
    assert_rejected(
        r#"{"verb":"create","steps":[]}"#,
        "plan: create wants 1..12 steps, got 0",
    );
    assert_rejected(
        &steps_json(13).to_string(),
        "plan: create wants 1..12 steps, got 13",
    );
    let store = PlanStore::new(PlanLimits::clamped(3, 2000));
    assert_rejected_on(
        &store,
        &steps_json(4).to_string(),
        "plan: create wants 1..3 steps, got 4",
    );
    assert!(store.call(&steps_json(3).to_string()).is_ok());
    let (full, _) = recording_store(PlanLimits::default());
    assert!(full.call(&steps_json(12).to_string()).is_ok());
    assert_eq!(full.snapshot().steps.len(), 12);
}

#[test]
fn create_step_ids_are_validated() {
    let cases: &[(serde_json::Value, &str)] = &[
        (json!([{"title": "t"}]), "plan: step[0]: id is required"),
        (
            json!([{"id": "a", "title": "t"}, {"id": null, "title": "t"}]),
            "plan: step[1]: id is required",
        ),
        (
            json!([{"id": "", "title": "t"}]),
            "plan: step[0]: id is required",
        ),
        (json!([null]), "plan: step[0]: id is required"),
        (
            json!([{"id": "x".repeat(33), "title": "t"}]),
            "plan: step[0]: id is too long (33 > 32 chars)",
        ),
        (
            json!([{"id": "é".repeat(17), "title": "t"}]),
            "plan: step[0]: id is too long (34 > 32 chars)",
        ),
        (
            json!([{"id": "s 1", "title": "t"}]),
            "plan: step[0]: id \"s 1\" must be a short token without whitespace or brackets",
        ),
        (
            json!([{"id": "s1\t", "title": "t"}]),
            "plan: step[0]: id \"s1\\t\" must be a short token without whitespace or brackets",
        ),
        (
            json!([{"id": " s1", "title": "t"}]),
            "plan: step[0]: id \" s1\" must be a short token without whitespace or brackets",
        ),
        (
            json!([{"id": "[s1]", "title": "t"}]),
            "plan: step[0]: id \"[s1]\" must be a short token without whitespace or brackets",
        ),
        (
            json!([{"id": "a]", "title": "t"}]),
            "plan: step[0]: id \"a]\" must be a short token without whitespace or brackets",
        ),
        (
            json!([{"id": "a\u{00A0}b", "title": "t"}]),
            "plan: step[0]: id \"a\\u00a0b\" must be a short token without whitespace or brackets",
        ),
        (
            json!([{"id": "s1", "title": "a"}, {"id": "s2", "title": "b"}, {"id": "s1", "title": "c"}]),
            "plan: step[2]: duplicate step id \"s1\"",
        ),
    ];
    for (steps, expected) in cases {
        let args = json!({ "verb": "create", "steps": steps }).to_string();
        assert_rejected(&args, expected);
    }
}

#[test]
fn create_step_titles_are_validated() {
    let long = "t".repeat(201);
    let long_multibyte = "中".repeat(67); // 201 bytes
    let cases: &[(serde_json::Value, &str)] = &[
        (json!([{"id": "s1"}]), "plan: step[0]: title is required"),
        (
            json!([{"id": "s1", "title": ""}]),
            "plan: step[0]: title is required",
        ),
        (
            json!([{"id": "s1", "title": " \r\n\t\n "}]),
            "plan: step[0]: title is required",
        ),
        (
            json!([{"id": "s1", "title": "ok"}, {"id": "s2", "title": null}]),
            "plan: step[1]: title is required",
        ),
        (
            json!([{"id": "s1", "title": long}]),
            "plan: step[0]: title is too long (201 > 200 chars)",
        ),
        (
            json!([{"id": "s1", "title": long_multibyte}]),
            "plan: step[0]: title is too long (201 > 200 chars)",
        ),
    ];
    for (steps, expected) in cases {
        let args = json!({ "verb": "create", "steps": steps }).to_string();
        assert_rejected(&args, expected);
    }
}

#[test]
fn id_checks_come_before_title_checks() {
    assert_rejected(
        r#"{"verb":"create","steps":[{"id":"a b"}]}"#,
        "plan: step[0]: id \"a b\" must be a short token without whitespace or brackets",
    );
}

#[test]
fn title_length_is_measured_after_normalisation() {
    let (store, _) = recording_store(PlanLimits::default());
    let padded = format!("  \n{}\r\n ", "t".repeat(200));
    let args = json!({"verb": "create", "steps": [{"id": "s1", "title": padded}]});
    store.call(&args.to_string()).unwrap();
    assert_eq!(store.snapshot().steps[0].title.len(), 200);
    let id32 = "x".repeat(32);
    let args = json!({"verb": "create", "steps": [{"id": id32, "title": "t"}]});
    store.call(&args.to_string()).unwrap();
}

#[test]
fn update_rejections_are_atomic() {
    assert_rejected(r#"{"verb":"update"}"#, "plan: update: no updates given");
    assert_rejected(
        r#"{"verb":"update","updates":[]}"#,
        "plan: update: no updates given",
    );
    assert_rejected(
        r#"{"verb":"update","updates":[{"id":"s1","status":"done"},{"id":"s9","status":"done"}]}"#,
        "plan: update: unknown step id \"s9\"",
    );
    assert_rejected(
        r#"{"verb":"update","updates":[{"status":"done"}]}"#,
        "plan: update: unknown step id \"\"",
    );
    assert_rejected(
        r#"{"verb":"update","updates":[{"id":"s1","note":"n"},{"id":"s2","status":"finished"}]}"#,
        "plan: update: step[1]: unknown status \"finished\"",
    );
    assert_rejected(
        r#"{"verb":"update","updates":[{"id":"s1","status":"Done"}]}"#,
        "plan: update: step[0]: unknown status \"Done\"",
    );
    assert_rejected(
        r#"{"verb":"update","updates":[{"id":"s1","status":"done"},{"id":"s1","status":" done"}]}"#,
        "plan: update: step[1]: unknown status \" done\"",
    );
}

#[test]
fn complete_rejects_unknown_ids() {
    assert_rejected(
        r#"{"verb":"complete","step_id":"s9"}"#,
        "plan: complete: unknown step id \"s9\"",
    );
    assert_rejected(
        r#"{"verb":"complete"}"#,
        "plan: complete: unknown step id \"\"",
    );
    assert_rejected(
        r#"{"verb":"complete","id":"s1"}"#,
        "plan: complete: unknown step id \"\"",
    );
}

#[test]
fn mutations_without_a_plan_are_rejected() {
    let (store, events) = recording_store(PlanLimits::default());
    assert_rejected_on(
        &store,
        r#"{"verb":"update","updates":[{"id":"s1","status":"done"}]}"#,
        "plan: update: unknown step id \"s1\"",
    );
    assert_rejected_on(
        &store,
        r#"{"verb":"complete","step_id":"s1"}"#,
        "plan: complete: unknown step id \"s1\"",
    );
    assert_eq!(store.call(r#"{"verb":"get"}"#).unwrap(), "No active plan.");
    assert_eq!(store.version(), 0);
    assert!(events.lock().unwrap().is_empty());
}

#[test]
fn create_normalises_titles_and_notes() {
    let (store, _) = recording_store(PlanLimits::default());
    let args = json!({"verb": "create", "steps": [
        {"id": "s1", "title": "  line one\r\nline two\nthree\rfour — five ", "note": "a\n—\nb "},
        {"id": "s2", "title": "plain", "note": "   "},
    ]});
    store.call(&args.to_string()).unwrap();
    let state = store.snapshot();
    assert_eq!(state.version, 1);
    assert_eq!(state.steps[0].title, "line one line two three four - five");
    assert_eq!(state.steps[0].note, "a - b");
    assert_eq!(state.steps[1].note, "");
    assert!(state.steps.iter().all(|s| s.status == StepStatus::Pending));
}

#[test]
fn update_applies_in_order_and_only_non_empty_fields() {
    let (store, _) = busy_store();
    let out = store
        .call(
            r#"{"verb":"update","updates":[
            {"id":"s1","status":"done"},
            {"id":"s1","status":"blocked","note":"line\nbreak — dash"},
            {"id":"s3","status":"","note":"  "},
            {"id":"s2"}
        ]}"#,
        )
        .unwrap();
    let state = store.snapshot();
    assert_eq!(state.version, 3);
    assert_eq!(state.steps[0].status, StepStatus::Blocked);
    assert_eq!(state.steps[0].note, "line break - dash");
    assert_eq!(state.steps[1].status, StepStatus::InProgress);
    assert_eq!(state.steps[2].note, "waiting");
    assert_eq!(state.steps[2].status, StepStatus::Pending);
    assert_eq!(out, crate::plan::render(&state, 2000).unwrap());
}

#[test]
fn any_status_transition_is_allowed() {
    let (store, _) = busy_store();
    for status in ["done", "pending", "blocked", "in_progress", "done"] {
        let args = json!({"verb": "update", "updates": [{"id": "s3", "status": status}]});
        store.call(&args.to_string()).unwrap();
        assert_eq!(store.snapshot().steps[2].status.as_str(), status);
    }
}
