//! Sessions through the real binary: saving, `continue`, `session …`, crash safety.

use crate::support::*;
use serde_json::{Value, json};

async fn odek_ok(sb: &Sandbox, server: &ScriptedServer, args: &[&str]) -> std::process::Output {
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(args);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_then_continue_sends_the_whole_transcript() {
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": "echo first"}))]),
        text("first answer"),
        text("second answer"),
        text("third answer"),
    ])
    .await;
    let sb = Sandbox::new();
    let out = odek_ok(&sb, &server, &["run", "first", "task"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let session = only_session(&sb);
    let id = session["id"].as_str().expect("id").to_string();
    assert!(
        stderr.contains(&format!(
            "odek: session {id} saved — continue with: odek continue \"…\""
        )),
        "{stderr}"
    );
    assert_eq!(session["turns"], 1);
    assert_eq!(session["task"], "first task");
    let saved: Vec<Value> = session["messages"].as_array().expect("messages").clone();

    let out = odek_ok(&sb, &server, &["continue", "and", "now", "tests"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("odek: continuing session {id} (turn 1 → 2)")),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "second answer\n");
    let reqs = server.requests();
    let sent = messages(&reqs[2]);
    assert_eq!(sent.len(), saved.len() + 1);
    for (a, b) in sent.iter().zip(&saved) {
        assert_eq!(a["role"], b["role"]);
        assert_eq!(a["content"], b["content"]);
    }
    assert_eq!(sent.last().expect("new")["content"], "and now tests");
    assert_eq!(
        reqs[2]["model"], "test-model",
        "the session keeps its model"
    );

    let out = odek_ok(&sb, &server, &["continue", "--id", &id, "once", "more"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "third answer\n");
    let sent = messages(&server.requests()[3]);
    assert_eq!(sent.iter().filter(|m| m["role"] == "user").count(), 3);
    assert_eq!(only_session(&sb)["turns"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_refuses_to_change_the_endpoint() {
    let sb = Sandbox::new();
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["continue", "--base-url", "http://127.0.0.1:8/v1", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("continue cannot change --base-url: a resumed session keeps its provider, endpoint and system prompt (`--model [PROVIDER:]MODEL` switches its model; `--provider ID` moves it"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_runs_leave_nothing() {
    let server = ScriptedServer::start(vec![text("ok")]).await;
    let sb = Sandbox::new();
    let out = odek_ok(&sb, &server, &["run", "--ephemeral", "hi"]).await;
    assert!(session_files(&sb).is_empty());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("saved"));
}

const OPENAI_KEY: &str = "sk-proj4Xy9Zq2Lm8Nv3Bc7Df1Gh5Jk0Pw6Rt";
const GITHUB_TOKEN: &str = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4fGq2n1sHk8Zc9YwQ3mV5tL0pR7uJ2bN6dF8gH1jK4lM\nzQ9wE3rT5yU7iO1pA2sD4fG6hJ8kL0zX2cV4bN6mQ8wE1rT3yU5iO7pA9sD1f\n-----END RSA PRIVATE KEY-----";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_saved_file() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": format!("echo {OPENAI_KEY}; echo {GITHUB_TOKEN}; printf '%s\\n' \"{PEM}\"")}),
        )]),
        text(&format!("the token was {GITHUB_TOKEN}")),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"action": "allow"}}"#);
    odek_ok(&sb, &server, &["run", "remember", OPENAI_KEY, "please"]).await;
    // The tool really printed them, so the model saw them and they reached the transcript.
    let result = tool_results(&server.requests()[1]).join("\n");
    assert!(
        result.contains("[REDACTED]"),
        "tool output is redacted before the model sees it: {result}"
    );
    let raw = read(&session_files(&sb)[0]);
    for secret in [
        OPENAI_KEY,
        GITHUB_TOKEN,
        "MIIEowIBAAKCAQEAx4fGq2n1sHk8Zc9YwQ3mV5tL0pR7uJ2bN6dF8gH1jK4lM",
    ] {
        assert!(
            !raw.contains(secret),
            "{secret} leaked into the session file:\n{raw}"
        );
    }
    assert!(raw.contains("[REDACTED]"));
    let index = read(sb.home.join("sessions/index.json"));
    assert!(
        !index.contains(OPENAI_KEY),
        "the task title in the index is redacted too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_session_is_reported_by_name_and_list_still_works() {
    let server = ScriptedServer::start(vec![text("a"), text("b")]).await;
    let sb = Sandbox::new();
    odek_ok(&sb, &server, &["run", "first"]).await;
    odek_ok(&sb, &server, &["run", "second"]).await;
    let files = session_files(&sb);
    assert_eq!(files.len(), 2);
    let corrupt_id = files[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .to_string();
    std::fs::write(&files[0], "{\"id\": \"torn").expect("corrupt");
    std::fs::remove_file(sb.home.join("sessions/index.json")).expect("force a rebuild");

    let out = odek_ok(&sb, &server, &["session", "list"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let good_id = files[1]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .to_string();
    assert!(stdout.contains(&good_id), "{stdout}");
    assert!(
        stderr.contains(&corrupt_id) && stderr.contains("corrupt"),
        "{stderr}"
    );

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["session", "show", &corrupt_id]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{corrupt_id}.json is corrupt")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_commands_show_trim_delete_cleanup() {
    let server = ScriptedServer::start(vec![
        tools(&[
            ("shell", json!({"command": "echo a"})),
            ("shell", json!({"command": "echo b"})),
        ]),
        tools(&[("shell", json!({"command": "echo c"}))]),
        text("done"),
    ])
    .await;
    let sb = Sandbox::new();
    odek_ok(&sb, &server, &["run", "three", "groups"]).await;
    let id = only_session(&sb)["id"].as_str().expect("id").to_string();

    let out = odek_ok(&sb, &server, &["session", "show"]).await;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.starts_with(&format!("Session: {id}\nModel:   test-model\nTurns:   1\n")),
        "{shown}"
    );
    assert!(
        shown.contains("── [USER Turn 1] ──\nthree groups"),
        "{shown}"
    );
    assert!(shown.contains("── [TOOL CALL: shell #call_"), "{shown}");
    assert!(shown.contains("── [TOOL RESULT: shell #call_"), "{shown}");

    // Keeping 3 would split the two-call group: trim keeps groups whole instead.
    let out = odek_ok(&sb, &server, &["session", "trim", &id, "4"]).await;
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("Trimmed session {id}: ")));
    let session = only_session(&sb);
    let msgs = session["messages"].as_array().expect("messages");
    assert_no_orphans(msgs);

    let out = odek_ok(&sb, &server, &["session", "cleanup", "30"]).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "No sessions to clean up.\n"
    );
    let out = odek_ok(&sb, &server, &["session", "delete", &id]).await;
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("Deleted session {id}\n")
    );
    let out = odek_ok(&sb, &server, &["session", "list"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "No sessions found.\n");

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["session", "show", "../../etc/passwd"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid session id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_any_moment_leaves_a_session_that_parses_and_continues() {
    let step = |i: u32| {
        tools(&[(
            "write_file",
            json!({"path": format!("f{i}.txt"), "content": "x".repeat(2000)}),
        )])
    };
    let server = ScriptedServer::start(Vec::new()).await;
    let sb = Sandbox::new();
    let mut seed = 0x2545_f491_u64;
    for round in 0..50 {
        server.push((0..40).map(step).collect());
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(["run", "--session", &format!("long task {round}")]);
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().expect("spawn");
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = 20 + seed % 400;
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
        let _ = child.kill();
        let _ = child.wait();
        for f in session_files(&sb) {
            let text = read(&f);
            let v: Result<Value, _> = serde_json::from_str(&text);
            assert!(
                v.is_ok(),
                "round {round}: {} is torn after kill -9 at {delay} ms",
                f.display()
            );
        }
        server.clear();
    }
    assert!(!session_files(&sb).is_empty());
    // The session keeps its endpoint: the same server answers the continuation.
    let before = server.requests().len();
    server.push(vec![text("resumed fine")]);
    let out = odek_ok(&sb, &server, &["continue", "go", "on"]).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "resumed fine\n");
    let sent = messages(&server.requests()[before]);
    assert_no_orphans(&sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_the_newest_first_and_counts_the_rest() {
    let server =
        ScriptedServer::start((0..4).map(|i| text(&format!("answer {i}"))).collect()).await;
    let sb = Sandbox::new();
    for i in 0..4 {
        odek_ok(&sb, &server, &["run", &format!("task number {i}")]).await;
    }
    let out = odek_ok(&sb, &server, &["session", "list", "-n", "2"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = stdout.lines().skip(2).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(
        rows[0].ends_with("task number 3") && rows[1].ends_with("task number 2"),
        "{stdout}"
    );
    assert_eq!(rows[2], "… and 2 more (--all shows every session)");
    let out = odek_ok(&sb, &server, &["session", "list", "--all"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().skip(2).count(), 4, "{stdout}");
    assert!(!stdout.contains("more"));
}
