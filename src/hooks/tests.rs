use std::time::Duration;

use serde_json::{Map, Value, json};

use super::protocol::{Ended, read_result};
use super::*;

fn config(json: Value) -> HooksConfig {
    serde_json::from_value(json).expect("config")
}

fn run_with(json: Value, fail_open: bool) -> HookRun {
    let hooks = compile(&config(json), None).expect("compile");
    HookRun::new(hooks, fail_open, std::env::temp_dir())
}

fn tool_fields(input: Value) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("tool_input".into(), input);
    fields
}

#[test]
fn matchers_take_odeks_names_and_claude_codes_and_bad_ones_are_refused() {
    let hooks = compile(
        &config(json!({"PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "true"}]}]})),
        None,
    )
    .unwrap();
    assert!(hooks[0].matches(Some("shell")) && hooks[0].matches(Some("write_file")));
    assert!(hooks[0].matches(Some("Bash")));
    assert!(!hooks[0].matches(Some("read_file")) && !hooks[0].matches(Some("shellx")));
    let err = compile(&config(json!({"PreTool": []})), None).unwrap_err();
    assert!(
        err.to_string().contains("unknown event \"PreTool\""),
        "{err}"
    );
    let err = compile(
        &config(json!({"Stop": [{"matcher": "(", "hooks": []}]})),
        None,
    )
    .unwrap_err();
    assert!(matches!(err, HooksError::BadMatcher { .. }), "{err}");
    let err = compile(
        &config(json!({"Stop": [{"hooks": [{"type": "prompt", "command": "x"}]}]})),
        None,
    )
    .unwrap_err();
    assert!(err.to_string().contains("only \"command\" hooks"), "{err}");
}

#[test]
fn exits_and_outputs_read_as_claude_code_reads_them_with_odeks_fail_closed_guard() {
    let pre = HookEvent::PreToolUse;
    let ok = |out: &str| read_result(pre, &Ended::Exited(0), out, "", false).unwrap();
    assert_eq!(ok("").decision, Decision::None);
    assert_eq!(
        ok(r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no rm"}}"#).decision,
        Decision::Block("no rm".into())
    );
    assert_eq!(ok(r#"{"decision": "approve"}"#).decision, Decision::Allow);
    assert_eq!(
        ok(r#"{"hookSpecificOutput": {"permissionDecision": "ask"}}"#).decision,
        Decision::Ask("blocked by a hook".into())
    );
    let rewritten = ok(r#"{"hookSpecificOutput": {"updatedInput": {"file_path": "/w/b.txt"}}}"#);
    assert_eq!(
        rewritten.updated_input,
        Some(json!({"file_path": "/w/b.txt"}))
    );
    let two = read_result(pre, &Ended::Exited(2), "", "rm -rf is not allowed\n", false).unwrap();
    assert_eq!(
        two.decision,
        Decision::Block("rm -rf is not allowed".into())
    );
    // A crashing guard blocks, unless fail_open.
    for ended in [Ended::Exited(1), Ended::Signalled, Ended::TimedOut] {
        let blocked = read_result(pre, &ended, "", "jq: not found", false).unwrap();
        assert!(
            matches!(blocked.decision, Decision::Block(ref r) if r.starts_with("a PreToolUse hook failed")),
            "{ended:?}"
        );
        assert!(read_result(pre, &ended, "", "", true).is_err());
    }
    let broken = read_result(pre, &Ended::Exited(0), "{not json", "", false).unwrap();
    assert!(matches!(broken.decision, Decision::Block(_)));
    // Other events never block on a failure, and plain output is context where Claude Code
    // takes it as such.
    assert!(read_result(HookEvent::PostToolUse, &Ended::Exited(1), "", "", false).is_err());
    let context = read_result(
        HookEvent::UserPromptSubmit,
        &Ended::Exited(0),
        "today is Friday\n",
        "",
        false,
    )
    .unwrap();
    assert_eq!(context.context, ["today is Friday"]);
    let stop = read_result(
        HookEvent::Stop,
        &Ended::Exited(0),
        r#"{"decision": "block", "reason": "tests fail"}"#,
        "",
        false,
    )
    .unwrap();
    assert_eq!(stop.decision, Decision::Block("tests fail".into()));
    let allow_on_stop = read_result(
        HookEvent::Stop,
        &Ended::Exited(0),
        r#"{"decision": "approve"}"#,
        "",
        false,
    )
    .unwrap();
    assert_eq!(allow_on_stop.decision, Decision::None);
}

#[test]
fn tool_input_carries_file_path_and_an_updated_one_comes_back_as_path() {
    let cwd = std::path::Path::new("/w");
    let input = tool_input_for_hook(&json!({"path": "a.txt", "content": "x"}), cwd);
    assert_eq!(
        input,
        json!({"path": "a.txt", "file_path": "/w/a.txt", "content": "x"})
    );
    let original = json!({"path": "a.txt", "content": "x"});
    let back = tool_input_from_hook(
        &json!({"path": "a.txt", "file_path": "/w/b.txt", "content": "x"}),
        &original,
    );
    assert_eq!(back, json!({"path": "/w/b.txt", "content": "x"}));
    let back = tool_input_from_hook(
        &json!({"path": "c.txt", "file_path": "/w/a.txt"}),
        &original,
    );
    assert_eq!(back, json!({"path": "c.txt"}));
    assert_eq!(hook_tool_name("shell"), "Bash");
    assert_eq!(hook_tool_name("fs__read"), "mcp__fs__read");
}

#[test]
fn file_path_is_the_file_the_tool_acts_on_and_batch_patch_gives_one_input_per_file() {
    let cwd = std::path::Path::new("/w");
    let lying = json!({"path": "./.github/../.github/ci.yml", "file_path": "/w/README.md"});
    assert_eq!(
        tool_input_for_hook(&lying, cwd)["file_path"],
        "/w/.github/ci.yml"
    );
    let call = json!({"patches": [
        {"path": "a.txt", "old_string": "1", "new_string": "2"},
        {"path": ".github/x", "old_string": "3"},
        {"path": "a.txt", "old_string": "4", "new_string": "5", "replace_all": true}
    ]});
    let inputs = tool_inputs_for_hook("batch_patch", &call, cwd);
    assert_eq!(
        inputs,
        [
            json!({"path": "a.txt", "file_path": "/w/a.txt", "edits": [
                {"old_string": "1", "new_string": "2"},
                {"old_string": "4", "new_string": "5", "replace_all": true}
            ]}),
            json!({"path": ".github/x", "file_path": "/w/.github/x", "edits": [{"old_string": "3"}]}),
        ]
    );
    let one = tool_inputs_for_hook("write_file", &json!({"path": "b"}), cwd);
    assert_eq!(one, [json!({"path": "b", "file_path": "/w/b"})]);
}

#[tokio::test]
async fn a_hook_reads_its_input_and_one_past_its_timeout_is_killed_with_its_group() {
    let run = run_with(
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(2) if \"rm -rf\" in d[\"tool_input\"][\"command\"] and d[\"tool_name\"] == \"Bash\" else sys.exit(0)' || { echo \"$?\" >&2; exit 3; }"}]}]}),
        false,
    );
    let (allowed, reports) = run
        .fire(
            HookEvent::PreToolUse,
            Some("shell"),
            tool_fields(json!({"command": "ls"})),
        )
        .await;
    assert_eq!(allowed.decision, Decision::None);
    assert_eq!(reports.len(), 1);
    let (blocked, _) = run
        .fire(
            HookEvent::PreToolUse,
            Some("shell"),
            tool_fields(json!({"command": "rm -rf /"})),
        )
        .await;
    assert!(
        matches!(blocked.decision, Decision::Block(_)),
        "{blocked:?}"
    );
    let (untouched, reports) = run
        .fire(
            HookEvent::PreToolUse,
            Some("read_file"),
            tool_fields(json!({})),
        )
        .await;
    assert_eq!((untouched.decision, reports.len()), (Decision::None, 0));

    let marker = tempfile::tempdir().unwrap();
    let survivor = marker.path().join("survived");
    let slow = run_with(
        json!({"PreToolUse": [{"hooks": [{"type": "command", "timeout": 1, "command": format!("(sleep 2; touch {}) & sleep 30", survivor.display())}]}]}),
        false,
    );
    let (outcome, reports) = slow
        .fire(
            HookEvent::PreToolUse,
            Some("shell"),
            tool_fields(json!({"command": "ls"})),
        )
        .await;
    assert!(
        matches!(outcome.decision, Decision::Block(ref r) if r.contains("past its timeout")),
        "{outcome:?}"
    );
    assert_eq!(reports[0].decision, "deny");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!survivor.exists(), "the hook's group was killed with it");
}
