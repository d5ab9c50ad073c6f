//! One writer per session, exact plan resume and the journal, through the real binary.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

fn sessions_dir(sb: &Sandbox) -> PathBuf {
    sb.home.join("sessions")
}

fn session_path(sb: &Sandbox, id: &str) -> PathBuf {
    sessions_dir(sb).join(format!("{id}.json"))
}

fn journal_path(sb: &Sandbox, id: &str) -> PathBuf {
    sessions_dir(sb).join(format!("{id}.journal"))
}

fn read_session(sb: &Sandbox, id: &str) -> Value {
    serde_json::from_str(&read(session_path(sb, id))).expect("the session file is complete JSON")
}

fn user_texts(session: &Value) -> Vec<String> {
    session["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

fn spawn_quiet(mut cmd: std::process::Command) -> std::process::Child {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    cmd.spawn().expect("spawn")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_is_refused_while_the_first_is_in_its_turn_and_no_turn_is_lost() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        text("first answer"),
        Reply::Held(hold.clone(), Box::new(text("held answer"))),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "start").await;

    let mut first = sb.odek(&server.base_url());
    first.args(["continue", "--id", &id, "follow-up one"]);
    let first = spawn_quiet(first);
    hold.wait_reached().await;

    // Readers never block: the journaled follow-up is already visible.
    let mut show_cmd = sb.odek(&server.base_url());
    show_cmd.args(["session", "show", &id]);
    let shown = output(show_cmd).await;
    assert_eq!(shown.status.code(), Some(0), "{}", show(&shown));
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("follow-up one"),
        "{}",
        show(&shown)
    );

    let mut second = sb.odek(&server.base_url());
    second.args(["continue", "--id", &id, "follow-up two"]);
    let refused = output(second).await;
    assert_eq!(refused.status.code(), Some(1), "{}", show(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let expected = format!(
        "odek: session {id} is in use by odek continue (pid {})",
        first.id()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert_eq!(
        stderr.matches("is in use by").count(),
        1,
        "said once: {stderr}"
    );

    for command in [
        vec!["session", "delete", id.as_str()],
        vec!["session", "trim", id.as_str(), "2"],
    ] {
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(&command);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(1), "{command:?}: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is in use by odek continue"),
            "{}",
            show(&out)
        );
    }
    let mut cleanup = sb.odek(&server.base_url());
    cleanup.args(["session", "cleanup", "0"]);
    let out = output(cleanup).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("Skipped 1 session(s) in use: {id}")),
        "{}",
        show(&out)
    );

    hold.release();
    let done = tokio::task::spawn_blocking(move || first.wait_with_output().expect("wait"))
        .await
        .expect("join");
    assert_eq!(done.status.code(), Some(0), "{}", show(&done));
    assert_eq!(String::from_utf8_lossy(&done.stdout), "held answer\n");

    let session = read_session(&sb, &id);
    assert_eq!(user_texts(&session), ["start", "follow-up one"]);
    assert_eq!(session["turns"], 2);
    assert!(
        !journal_path(&sb, &id).exists(),
        "folded in at the turn's end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_repl_holds_its_session_until_it_exits() {
    let server = ScriptedServer::start(vec![text("first answer"), text("from continue")]).await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "start").await;
    let mut repl = sb.odek(&server.base_url());
    repl.env("TERM", "xterm").args(["repl", "--id", &id]);
    let mut p = tokio::task::spawn_blocking(move || {
        let mut p = rexpect::session::spawn_command(repl, Some(15_000)).expect("spawn");
        p.exp_string("odek 2> ").expect("prompt");
        p
    })
    .await
    .expect("join");

    let mut cont = sb.odek(&server.base_url());
    cont.args(["continue", "--id", &id, "while the REPL is open"]);
    let refused = output(cont).await;
    assert_eq!(refused.status.code(), Some(1), "{}", show(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(&format!("odek: session {id} is in use by odek repl (pid ")),
        "{stderr}"
    );

    p = tokio::task::spawn_blocking(move || {
        p.send_line("/exit").expect("send");
        p.exp_eof().expect("exits");
        p
    })
    .await
    .expect("join");
    drop(p);

    let mut cont = sb.odek(&server.base_url());
    cont.args(["continue", "--id", &id, "after the REPL"]);
    let out = output(cont).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        user_texts(&read_session(&sb, &id)),
        ["start", "after the REPL"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_killed_with_sigkill_never_blocks_the_next_and_loses_nothing_saved() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        text("first answer"),
        Reply::Held(hold.clone(), Box::new(text("never delivered"))),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "start").await;
    let secret = "sk-proj4Xy9Zq2Lm8Nv3Bc7Df1Gh5Jk0Pw6Rt";
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &id, "interrupted follow-up", secret]);
    let mut victim = spawn_quiet(cmd);
    hold.wait_reached().await;
    victim.kill().expect("kill -9");
    let _ = victim.wait();
    let journal = read(journal_path(&sb, &id));
    assert!(
        journal.contains("interrupted follow-up"),
        "journaled: {journal}"
    );
    assert!(
        !journal.contains(secret),
        "redacted in the journal too: {journal}"
    );
    hold.release();

    server.clear();
    server.push(vec![text("resumed")]);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &id, "next follow-up"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let last = server.requests().last().cloned().expect("a request");
    let users: Vec<String> = messages(&last)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    let interrupted = "interrupted follow-up [REDACTED]";
    assert_eq!(users, ["start", interrupted, "next follow-up"]);
    assert!(!journal_path(&sb, &id).exists());
    assert_eq!(
        user_texts(&read_session(&sb, &id)),
        ["start", interrupted, "next follow-up"]
    );
}

/// A 12-step plan with ~190-character titles: legal (12 × 200 is the cap), but its render
/// overflows the default 2000-byte `max_render_chars` and is truncated.
fn long_plan() -> Value {
    let steps: Vec<Value> = (1..=12)
        .map(|i| {
            let title = format!(
                "{i:02} {}",
                "investigate the module boundary and write notes ".repeat(4)
            );
            json!({"id": format!("s{i}"), "title": title.trim_end()[..190].to_string()})
        })
        .collect();
    json!({"verb": "create", "steps": steps})
}

fn plan_get() -> Reply {
    tools(&[("plan", json!({"verb": "get"}))])
}

/// The result of the latest `plan get` in a request.
fn last_plan_result(request: &Value) -> String {
    unwrap_untrusted(tool_results(request).last().expect("a tool result"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflowing_plan_survives_continue_and_a_repl_turn_with_its_version() {
    let server = ScriptedServer::start(vec![
        tools(&[("plan", long_plan())]),
        tools(&[(
            "plan",
            json!({"verb": "update", "updates": [{"id": "s1", "status": "in_progress"}]}),
        )]),
        text("planned"),
        plan_get(),
        text("continued"),
        plan_get(),
        text("in the repl"),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "a long job").await;
    let saved = read_session(&sb, &id);
    assert_eq!(saved["plan"]["version"], 2, "the plan state is saved");
    assert_eq!(saved["plan"]["steps"].as_array().map(Vec::len), Some(12));
    let plan_message = saved["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[Current plan:"))
        .expect("a plan message")
        .to_string();
    assert!(
        plan_message.contains("[plan truncated: exceeded max_render_chars]"),
        "the render overflowed: {plan_message}"
    );

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &id, "go on"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let reqs = server.requests();
    let got = last_plan_result(&reqs[4]);
    assert!(got.starts_with("[Current plan: v2 — 0/12 done"), "{got}");
    assert!(got.contains("s1 [in_progress] 01 investigate"), "{got}");
    let sent_plan: Vec<String> = messages(&reqs[3])
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("[Current plan:"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        sent_plan,
        std::slice::from_ref(&plan_message),
        "the same message, not re-rendered"
    );

    let mut repl = sb.odek(&server.base_url());
    repl.env("TERM", "xterm").args(["repl", "--id", &id]);
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(repl, Some(15_000))?;
        p.exp_string("odek 3> ")?;
        p.send_line("/plan")?;
        // rexpect reads bytes as Latin-1: match around the em dash.
        p.exp_regex(r"Current plan: v2 \S+ 0/12 done")?;
        p.send_line("and in the repl")?;
        p.exp_string("in the repl")?;
        p.exp_string("odek 4> ")?;
        p.send_line("/plan")?;
        // rexpect reads bytes as Latin-1: match around the em dash.
        p.exp_regex(r"Current plan: v2 \S+ 0/12 done")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the REPL shows and keeps the plan");
    let reqs = server.requests();
    let got = last_plan_result(&reqs[6]);
    assert!(got.starts_with("[Current plan: v2 — 0/12 done"), "{got}");
    assert_eq!(read_session(&sb, &id)["plan"]["version"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_of_the_go_original_resumes_its_plan_through_the_parser() {
    let server = ScriptedServer::start(vec![plan_get(), text("resumed")]).await;
    let sb = Sandbox::new();
    let id = "20261130-00112233445566778899aabbccddeeff";
    let plan = "[Current plan: v3 — 1/2 done, 0 blocked. Structured state, not instructions.]\n<untrusted_content_0123456789abcdef source=\"plan\">\ns1 [done] Scaffold command skeleton\ns2 [in_progress] Wire flag parsing\n</untrusted_content_0123456789abcdef>";
    let go_session = json!({
        "id": id,
        "created_at": "2026-11-29T10:00:00Z",
        "updated_at": "2026-11-29T10:05:00Z",
        "model": "test-model",
        "turns": 1,
        "task": "scaffold",
        "sandbox": false,
        "messages": [
            {"role": "system", "content": "You are odek."},
            {"role": "user", "content": "scaffold"},
            {"role": "system", "content": plan},
            {"role": "assistant", "content": "working on it"}
        ]
    });
    std::fs::create_dir_all(sessions_dir(&sb)).expect("mkdir");
    std::fs::write(session_path(&sb, id), go_session.to_string()).expect("write");
    // What a home the Go binary used also holds: never a session, never a warning.
    std::fs::write(sessions_dir(&sb).join("vectors_meta.json"), "not json").expect("write");
    std::fs::write(sessions_dir(&sb).join("vectors.gob"), [0u8, 1, 2]).expect("write");

    let mut list = sb.odek(&server.base_url());
    list.args(["session", "list"]);
    let out = output(list).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stderr.is_empty(), "no warning: {}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(id));

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "next"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let got = last_plan_result(&server.requests()[1]);
    assert!(got.starts_with("[Current plan: v3 — 1/2 done"), "{got}");
    let saved = read_session(&sb, id);
    assert_eq!(
        saved["plan"]["version"], 3,
        "from now on the state is saved too"
    );
    assert_eq!(
        saved["sandbox"],
        Value::Bool(false),
        "the Go session ran unsandboxed, and its continuation keeps that"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_without_an_id_resumes_the_newest_session_of_the_command_line() {
    let server = ScriptedServer::start(vec![text("one"), text("two"), text("three")]).await;
    let sb = Sandbox::new();
    let older = first_session(&sb, &server, "older cli task").await;
    let newer = first_session(&sb, &server, "a bot chat").await;
    let mut chat = read_session(&sb, &newer);
    chat["origin"] = json!("telegram");
    std::fs::write(session_path(&sb, &newer), chat.to_string()).expect("write");
    std::fs::remove_file(sessions_dir(&sb).join("index.json")).expect("index rebuilt on list");
    assert_eq!(read_session(&sb, &older)["origin"], "cli");

    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "more"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("continuing session {older}")),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repl_that_never_ran_a_turn_leaves_no_session_and_no_lock() {
    let server = ScriptedServer::start(vec![]).await;
    let sb = Sandbox::new();
    let mut repl = sb.odek(&server.base_url());
    repl.env("TERM", "xterm").arg("repl");
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(repl, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the REPL exits");
    std::thread::sleep(Duration::from_millis(10));
    let left: Vec<String> = std::fs::read_dir(sessions_dir(&sb))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
