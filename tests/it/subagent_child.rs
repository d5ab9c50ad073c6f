//! `odek subagent --task FILE` through the real binary: the child's side of delegation —
//! the envelope and its exit codes, the key on an inherited descriptor, an untrusted
//! child's policy, its session, its time limit.

use std::io::Write;
use std::os::unix::process::CommandExt;

use serde_json::{Value, json};

use crate::support::*;

const KEY: &str = "sk-child-AbCdEfGhIjKlMnOpQrStUv0123456789";

fn write_task(sb: &Sandbox, task: Value) -> std::path::PathBuf {
    let path = sb.tmp().join("task.json");
    std::fs::write(&path, task.to_string()).expect("task");
    path
}

fn task(goal: &str) -> Value {
    json!({"goal": goal, "context": "Step s2 of the parent's plan", "index": 1, "total": 1,
           "parent_session": "20261201-parent", "max_iter": 5, "timeout_seconds": 60})
}

/// The child's stdout: event lines, then the envelope.
fn envelope(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("a line");
    serde_json::from_str(last).expect("the envelope is JSON")
}

/// `odek subagent` with the key readable on descriptor 3 (a pipe, as the parent passes it).
#[allow(unsafe_code)]
fn child_with_key(sb: &Sandbox, base_url: &str, task: &std::path::Path) -> std::process::Command {
    let mut cmd = sb.odek(base_url);
    cmd.args(["subagent", "--task"])
        .arg(task)
        .env("ODEK_API_KEY_FD", "3");
    let (reader, mut writer) = std::io::pipe().expect("pipe");
    writer.write_all(KEY.as_bytes()).expect("key");
    drop(writer);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&reader);
    // SAFETY: dup2 and close are async-signal-safe; the pipe's read end becomes fd 3.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    std::mem::forget(reader);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_task_file_exits_3_with_an_error_envelope() {
    let sb = Sandbox::new();
    let path = sb.tmp().join("task.json");
    std::fs::write(&path, "{not json").expect("w");
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["subagent", "--task"]).arg(&path);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let env = envelope(&out);
    assert_eq!(env["status"], "error");
    assert!(
        env["error"].as_str().expect("error").contains("task file"),
        "{env}"
    );
    let mut missing = sb.odek("http://127.0.0.1:9/v1");
    missing.args(["subagent", "--task", "/nonexistent/task.json"]);
    let out = output(missing).await;
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(envelope(&out)["status"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_child_is_denied_without_a_prompt_and_reports_in_its_envelope() {
    let server = ScriptedServer::start(vec![
        tools(&[
            ("shell", json!({"command": "rm -rf build"})),
            ("shell", json!({"command": "curl https://example.com/x"})),
            (
                "write_file",
                json!({"path": "notes.txt", "content": "found 3"}),
            ),
        ]),
        text("Found 3 TODOs; notes.txt lists them."),
    ])
    .await;
    let sb = Sandbox::new();
    // Even a parent in YOLO mode does not lift an untrusted child's denials.
    sb.global_config(r#"{"dangerous": {"action": "allow"}}"#);
    std::fs::create_dir(sb.work.join("build")).expect("mkdir");
    let path = write_task(&sb, task("Count the TODOs"));
    let out = output(child_with_key(&sb, &server.base_url(), &path)).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let env = envelope(&out);
    assert_eq!(env["status"], "ok", "{env}");
    assert_eq!(env["answer"], "Found 3 TODOs; notes.txt lists them.");
    assert_eq!(env["files_changed"], json!(["notes.txt"]));
    assert_eq!(env["iterations"], 2);
    assert!(sb.work.join("build").exists(), "rm -rf was not run");
    let results: Vec<String> = tool_results(&server.requests()[1])
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect();
    assert!(
        results[0].starts_with("error: operation denied by configuration"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("error: operation denied by configuration"),
        "{results:?}"
    );
    // The key came through the descriptor, not the environment.
    assert_eq!(
        server.auth_headers()[0].as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
    // The context is wrapped as untrusted; the child has no parent history.
    let first = messages(&server.requests()[0]);
    let user = first.iter().find(|m| m["role"] == "user").expect("user");
    assert!(
        user["content"]
            .as_str()
            .expect("text")
            .contains("source=\"delegate\""),
        "{user}"
    );
    // Event lines came before the envelope.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .next()
            .is_some_and(|l| l.contains("\"schema\":\"odek.event/v1\""))
    );
    // Its session says where it came from.
    let id = env["session_id"].as_str().expect("session");
    let saved: Value =
        serde_json::from_str(&read(sb.home.join("sessions").join(format!("{id}.json"))))
            .expect("session");
    assert_eq!(saved["origin"], "subagent");
    assert_eq!(saved["parent_session"], "20261201-parent");
    assert!(!read(sb.home.join("sessions").join(format!("{id}.json"))).contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_over_its_time_limit_reports_timeout_and_exits_2() {
    let server = ScriptedServer::start(vec![Reply::Delayed(
        std::time::Duration::from_secs(30),
        Box::new(text("too late")),
    )])
    .await;
    let sb = Sandbox::new();
    let mut t = task("Wait");
    t["timeout_seconds"] = json!(1);
    let path = write_task(&sb, t);
    let out = output(child_with_key(&sb, &server.base_url(), &path)).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert_eq!(envelope(&out)["status"], "timeout");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_session_is_left_out_of_the_serve_list_unless_all() {
    let server = ScriptedServer::start(vec![text("child done"), text("a parent answer")]).await;
    let sb = Sandbox::new();
    let path = write_task(&sb, task("The child's own goal"));
    let out = output(child_with_key(&sb, &server.base_url(), &path)).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    first_session(&sb, &server, "the parent's task").await;
    let served = crate::support::serve::Served::start(&sb, &server.base_url(), &[]);
    let listed = served.get("/api/sessions").await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert!(listed.text.contains("the parent's task"), "{}", listed.text);
    assert!(
        !listed.text.contains("The child's own goal"),
        "{}",
        listed.text
    );
    let all = served.get("/api/sessions?all=1").await;
    assert!(all.text.contains("The child's own goal"), "{}", all.text);
    assert!(all.text.contains("\"origin\":\"subagent\""), "{}", all.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_config_shows_a_childs_settings_as_the_subagent_task_layer() {
    let sb = Sandbox::new();
    sb.global_config(
        r#"{"max_iterations": 40, "tools": {"disabled": ["web_fetch"]},
            "dangerous": {"classes": {"code_execution": "allow"}},
            "mcp_servers": {"files": {"command": "true"}},
            "web": {"allow_hosts": ["docs.rs"]}}"#,
    );
    let mut untrusted = task("Summarise the logs");
    untrusted["trust_level"] = json!("untrusted");
    untrusted["tools"] = json!({"enabled": [], "disabled": ["shell"]});
    let path = write_task(&sb, untrusted);
    let shown = |cmd: std::process::Command| async {
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let mut by_flag = sb.odek("http://127.0.0.1:9/v1");
    by_flag
        .args(["config", "--json", "--subagent-task"])
        .arg(&path);
    let v = shown(by_flag).await;
    let task_value = |value: Value| json!({"value": value, "source": "subagent task"});
    assert_eq!(v["max_iterations"], task_value(json!(5)));
    assert_eq!(v["limits.max_runtime_seconds"], task_value(json!(60)));
    assert_eq!(v["subagents.enabled"], task_value(json!(false)));
    assert_eq!(v["memory.enabled"], task_value(json!(false)));
    // The child reads the instruction files unless the parent read none.
    assert_eq!(v["no_agents"], task_value(json!(false)));
    // The task's list replaces the parent's: it is not added to it.
    assert_eq!(v["tools.disabled"], task_value(json!(["shell"])));
    // Untrusted: the parent's allow is capped, nothing reaches the network without asking.
    assert_eq!(
        v["dangerous.classes.code_execution"],
        task_value(json!("deny"))
    );
    assert_eq!(
        v["dangerous.classes.local_write"],
        task_value(json!("allow"))
    );
    assert_eq!(v["web.allow_hosts"], task_value(json!([])));
    assert_eq!(v["browser.allow_local"], task_value(json!("none")));
    assert!(
        !v.as_object()
            .expect("object")
            .keys()
            .any(|k| k.starts_with("mcp_servers.files")),
        "{v}"
    );
    // What the task leaves alone keeps its own layer.
    assert_eq!(v["model"]["source"], "env ODEK_MODEL");
    // Inside a child, its commands find the task by $ODEK_SUBAGENT_TASK.
    let mut inside = sb.odek("http://127.0.0.1:9/v1");
    inside
        .args(["config", "--json"])
        .env("ODEK_SUBAGENT_TASK", &path);
    assert_eq!(shown(inside).await["max_iterations"], task_value(json!(5)));
    let mut outside = sb.odek("http://127.0.0.1:9/v1");
    outside.args(["config", "--json"]);
    assert_eq!(shown(outside).await["max_iterations"]["value"], 40);
}
