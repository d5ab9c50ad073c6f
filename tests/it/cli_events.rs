//! The `odek.event/v1` stream through the real binary.

use crate::support::*;
use serde_json::{Value, json};

fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect()
}

fn assert_envelope(events: &[Value]) {
    let run_id = events[0]["run_id"].as_str().expect("run_id").to_string();
    assert_eq!(run_id.len(), 32);
    for e in events {
        assert_eq!(e["schema"], "odek.event/v1", "{e}");
        assert_eq!(e["run_id"], run_id.as_str());
        assert!(
            e["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{e}"
        );
        assert!(e["data"].is_object(), "{e}");
    }
    let terminal: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "run_completed" || e["type"] == "run_failed")
        .collect();
    assert_eq!(terminal.len(), 1, "exactly one terminal event");
    assert_eq!(events[0]["type"], "run_started");
    assert!(
        std::ptr::eq(terminal[0], events.last().expect("last")),
        "the terminal event is last"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_carries_only_events_and_the_answer_moves_to_stderr() {
    let server = ScriptedServer::start(vec![
        tools(&[
            ("shell", json!({"command": "echo hi"})),
            ("read_file", json!({"path": "missing.txt"})),
        ]),
        text("final answer"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-jsonl", "-", "say hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let events = event_lines(&String::from_utf8_lossy(&out.stdout));
    assert_envelope(&events);
    assert!(String::from_utf8_lossy(&out.stderr).contains("final answer"));
    let t = types(&events);
    assert_eq!(t.first().map(String::as_str), Some("run_started"));
    assert!(t.contains(&"tool_call_started".to_string()));
    assert!(t.contains(&"tool_call_completed".to_string()));
    assert!(
        t.contains(&"tool_call_failed".to_string()),
        "the missing file fails"
    );
    assert_eq!(t.iter().filter(|x| *x == "iteration_completed").count(), 2);
    let session_id = events
        .iter()
        .find_map(|e| e["session_id"].as_str())
        .expect("session id stamped");
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "session_saved" && e["session_id"] == session_id)
    );
    let started = events
        .iter()
        .find(|e| e["type"] == "tool_call_started" && e["tool"] == "shell")
        .expect("shell");
    assert_eq!(started["iteration"], 1);
    assert_eq!(
        started["data"]["args_summary"],
        json!({"argv0": "echo", "class": "safe"})
    );
    assert_eq!(
        started["data"]["args_sha256"].as_str().map(str::len),
        Some(64)
    );
    assert!(
        started["data"].get("args").is_none(),
        "raw args only with --events-include-args"
    );
    let done = events.last().expect("last");
    assert_eq!(done["type"], "run_completed");
    assert_eq!(done["data"]["answer"], "final answer");
    assert!(done["data"]["input_tokens"].as_u64().is_some_and(|n| n > 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_plan_calls_give_gapless_versions_and_no_titles() {
    let title = "Secret-ish Title Nobody Should See";
    let note = "private note text";
    let server = ScriptedServer::start(vec![
        tools(&[("plan", json!({"verb": "create", "steps": [
            {"id": "s1", "title": title}, {"id": "s2", "title": "b"}, {"id": "s3", "title": "c"}, {"id": "s4", "title": "d"}]}))]),
        tools(&[
            ("plan", json!({"verb": "update", "updates": [{"id": "s1", "status": "in_progress", "note": note}]})),
            ("plan", json!({"verb": "complete", "step_id": "s2"})),
            ("plan", json!({"verb": "update", "updates": [{"id": "s3", "status": "blocked", "note": "waiting"}]})),
            ("plan", json!({"verb": "complete", "step_id": "s4"})),
        ]),
        text("planned"),
    ])
    .await;
    let sb = Sandbox::new();
    let events_path = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-jsonl"])
        .arg(&events_path)
        .arg("plan it");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = read(&events_path);
    assert!(
        !text.contains(title) && !text.contains(note) && !text.contains("waiting"),
        "titles/notes leaked:\n{text}"
    );
    let events = event_lines(&text);
    assert_envelope(&events);
    let plan: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("plan_")))
        .collect();
    let versions: Vec<u64> = plan
        .iter()
        .map(|e| e["data"]["version"].as_u64().expect("version"))
        .collect();
    assert_eq!(versions, vec![1, 2, 3, 4, 5], "gapless, in version order");
    assert_eq!(plan[0]["type"], "plan_created");
    assert_eq!(plan[0]["data"], json!({"steps": 4, "version": 1}));
    for e in &plan {
        assert!(
            e.get("iteration").is_none(),
            "plan events carry no iteration"
        );
    }
    let last = plan.last().expect("last")["data"].clone();
    assert_eq!(
        last,
        json!({"steps": 4, "done": 2, "in_progress": 1, "blocked": 1, "pending": 0, "version": 5})
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&events_path)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_in_arguments_and_results_never_reach_the_stream() {
    let key = "sk-live9XyZ2q8Lm3Nv7Bc1Df5Gh0Jk4Pw6RtQ";
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": format!("echo {key}")}))]),
        text(&format!("the key is {key}")),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"action": "allow"}}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        "--events-jsonl",
        "-",
        "--events-include-args",
        "leak it",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains(key),
        "secret in the event stream:\n{stdout}"
    );
    let events = event_lines(&stdout);
    let started = events
        .iter()
        .find(|e| e["type"] == "tool_call_started")
        .expect("started");
    assert!(
        started["data"]["args"]
            .as_str()
            .is_some_and(|a| a.contains("[REDACTED]")),
        "{started}"
    );
    assert!(
        events.last().expect("last")["data"]["answer"]
            .as_str()
            .is_some_and(|a| a.contains("[REDACTED]"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_exhaustion_emits_budget_exceeded_then_run_failed_and_exits_4() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo 1"}))]),
        tools(&[
            ("shell", json!({"command": "echo 2"})),
            ("shell", json!({"command": "echo 3"})),
        ]),
        text("never"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        "--max-tool-calls",
        "2",
        "--events-jsonl",
        "-",
        "count",
    ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let events = event_lines(&String::from_utf8_lossy(&out.stdout));
    assert_envelope(&events);
    let t = types(&events);
    let budget = t
        .iter()
        .position(|x| x == "budget_exceeded")
        .expect("budget_exceeded");
    let failed = t
        .iter()
        .position(|x| x == "run_failed")
        .expect("run_failed");
    assert!(budget < failed);
    assert_eq!(
        events[budget]["data"],
        json!({"limit_name": "tool_calls", "observed": 3, "limit": 2})
    );
    assert_eq!(events[failed]["data"]["error_class"], "execution_budget");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("execution budget exceeded: tool_calls observed 3 (limit 2)")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_error_ends_with_run_failed() {
    let server =
        ScriptedServer::start(vec![Reply::Status(400, vec![], "bad request".into())]).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-jsonl", "-", "x"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let events = event_lines(&String::from_utf8_lossy(&out.stdout));
    assert_envelope(&events);
    let last = events.last().expect("last");
    assert_eq!(last["type"], "run_failed");
    assert_eq!(last["data"]["error_class"], "provider_request");
    assert_eq!(last["data"]["http_status"], 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_still_ends_the_file_with_run_failed() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "sleep 30"}))]),
        text("never"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"action": "allow"}}"#);
    let events_path = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-jsonl"])
        .arg(&events_path)
        .arg("wait");
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    for _ in 0..200 {
        if std::fs::read_to_string(&events_path).is_ok_and(|t| t.contains("tool_call_started")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // SAFETY: signalling our own child.
    // SAFETY: sends SIGINT to the child this test started.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT)
    };
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("wait"))
        .await
        .expect("join");
    assert_eq!(out.status.code(), Some(130), "{}", show(&out));
    let events = event_lines(&read(&events_path));
    assert_envelope(&events);
    let last = events.last().expect("last");
    assert_eq!(last["type"], "run_failed");
    assert_eq!(last["data"]["error_class"], "context_canceled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_events_file_is_refused() {
    let sb = Sandbox::new();
    let target = sb.dir.path().join("real.jsonl");
    std::fs::write(&target, "").expect("write");
    let link = sb.dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "--events-jsonl"]).arg(&link).arg("x");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{}",
        show(&out)
    );
}
