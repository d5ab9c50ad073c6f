//! Compaction on demand and in `compaction.mode = summary` (docs/COMPACTION.md), through the
//! real binary: the REPL's `/compact` in a pseudo-terminal, `odek session compact`, the
//! automatic summary past `at_percent`, a failed summary falling back to the digest.

use serde_json::{Value, json};

use crate::support::serve::Served;
use crate::support::*;

const SUMMARY_PROMPT_START: &str = "You are compacting the conversation";
const SUMMARY_HEADER_START: &str =
    "[Compacted earlier context: the conversation before the latest turns was summarized";

/// The text of a message (a string, or the text parts of a list).
fn content(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The system messages of `request` whose text starts with `prefix`.
fn starting_with(request: &Value, prefix: &str) -> Vec<String> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "system")
        .map(content)
        .filter(|c| c.starts_with(prefix))
        .collect()
}

fn is_summary_request(request: &Value) -> bool {
    messages(request)
        .first()
        .is_some_and(|m| content(m).starts_with(SUMMARY_PROMPT_START))
}

/// `/compact the file names` in the REPL after three turns (the first made a plan): one
/// summary request with the user's focus, then the next turn's request holds the summary in
/// place of the first turn's answer and tool calls, every user message word for word, the
/// last two turns whole and the plan message byte for byte as before; the events say so,
/// the session is saved at once, and a fork keeps the conversation before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repl_compact_replaces_the_old_turns_by_the_models_summary_and_keeps_the_plan() {
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Read the notes"), ("s2", "Report")]),
        text("answer one"),
        text("answer two"),
        text("answer three"),
        with_usage(
            text("Summary: the user asked about the notes; a plan of two steps exists."),
            json!({"prompt_tokens": 900, "completion_tokens": 40}),
        ),
        text("answer four"),
    ])
    .await;
    let sb = Sandbox::new();
    let events = sb.tmp().join("events.jsonl");
    let cmd = {
        let mut c = sb.odek(&server.base_url());
        c.env("TERM", "xterm")
            .args(["repl", "--events-jsonl"])
            .arg(&events);
        c
    };
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(20_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("first question")?;
        p.exp_string("answer one")?;
        p.exp_string("odek 2> ")?;
        p.send_line("second question")?;
        p.exp_string("answer two")?;
        p.exp_string("odek 3> ")?;
        p.send_line("third question")?;
        p.exp_string("answer three")?;
        p.exp_string("odek 4> ")?;
        p.send_line("/compact the file names")?;
        p.exp_string("conversation summarised")?;
        p.exp_string("(`odek continue ")?;
        p.send_line("fourth question")?;
        p.exp_string("answer four")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the REPL conversation went as expected");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 6, "{reqs:#?}");
    let summary = &reqs[4];
    assert!(is_summary_request(summary), "{summary}");
    assert!(summary["tools"].as_array().is_none_or(Vec::is_empty));
    let asked = content(&messages(summary)[1]);
    assert!(
        asked.contains("The user asks the summary to keep: the file names"),
        "{asked}"
    );
    assert!(
        asked.contains("answer one"),
        "the old turn is summarised: {asked}"
    );

    let before = &reqs[3];
    let after = &reqs[5];
    let plan_before = starting_with(before, "[Current plan:");
    assert_eq!(plan_before.len(), 1, "{before}");
    assert_eq!(
        starting_with(after, "[Current plan:"),
        plan_before,
        "the plan message is byte for byte the same"
    );
    let summaries = starting_with(after, SUMMARY_HEADER_START);
    assert_eq!(summaries.len(), 1, "{after}");
    assert!(summaries[0].contains("Summary: the user asked about the notes"));
    let text = after.to_string();
    for kept in [
        "first question",
        "second question",
        "answer two",
        "third question",
        "answer three",
        "fourth question",
    ] {
        assert!(text.contains(kept), "{kept} kept: {after}");
    }
    assert!(
        !text.contains("answer one"),
        "the first turn's answer is gone"
    );
    assert!(!text.contains("\"tool_calls\""), "its plan call is gone");

    let lines = read(&events);
    let started = events_of(&lines, "compaction_started");
    assert_eq!(started.len(), 1, "{lines}");
    assert_eq!(started[0]["data"]["trigger"], "manual");
    let done = events_of(&lines, "compacted");
    assert_eq!(done.len(), 1, "{lines}");
    assert_eq!(done[0]["data"]["mode"], "summary");
    assert!(done[0]["data"]["after_tokens"].as_u64() < done[0]["data"]["before_tokens"].as_u64());

    // Two files: the session, and the fork that keeps the conversation before.
    let files = session_files(&sb);
    assert_eq!(files.len(), 2, "{files:?}");
    let sessions: Vec<Value> = files
        .iter()
        .map(|f| serde_json::from_str(&read(f)).expect("json"))
        .collect();
    let (backup, session): (Vec<&Value>, Vec<&Value>) = sessions
        .iter()
        .partition(|s| s.get("forked_from").is_some());
    assert!(backup[0].to_string().contains("answer one"));
    let session = session[0];
    assert!(!session["messages"].to_string().contains("answer one"));
    let runs = session["runs"].as_array().expect("runs");
    let compaction = runs
        .iter()
        .find(|r| r["iterations"].as_u64().unwrap_or(0) == 0)
        .expect("the summary's record");
    assert_eq!(compaction["input_tokens"], 900);
    assert_eq!(compaction["output_tokens"], 40);
}

/// Three turns of `odek run` and `odek continue`.
async fn three_turns(sb: &Sandbox, url: &str) -> String {
    for (i, task) in ["one", "two", "three"].iter().enumerate() {
        let mut cmd = sb.odek(url);
        if i == 0 {
            cmd.args(["run", task]);
        } else {
            cmd.args(["continue", task]);
        }
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    only_session(sb)["id"].as_str().expect("id").to_string()
}

/// `odek session compact ID --keep TEXT`: the summary request carries the focus, the
/// session holds the summary and no longer the first answer, `odek usage` counts its
/// tokens; a second compaction with nothing before the kept turns is refused (exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_compact_summarises_a_saved_session() {
    let server = ScriptedServer::start(vec![
        text("reply one"),
        text("reply two"),
        text("reply three"),
        with_usage(
            text("Summary: three short questions."),
            json!({"prompt_tokens": 700, "completion_tokens": 30}),
        ),
    ])
    .await;
    let sb = Sandbox::new();
    let url = server.base_url();
    let id = three_turns(&sb, &url).await;
    let mut cmd = sb.odek(&url);
    cmd.args(["session", "compact", &id, "--keep", "the numbers"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).contains("conversation summarised"),
        "{}",
        show(&out)
    );
    let reqs = server.requests();
    assert!(is_summary_request(&reqs[3]));
    assert!(content(&messages(&reqs[3])[1]).contains("keep: the numbers"));

    let session: Value =
        serde_json::from_str(&read(sb.home.join("sessions").join(format!("{id}.json"))))
            .expect("json");
    let saved = session["messages"].to_string();
    assert!(saved.contains("Summary: three short questions."));
    assert!(!saved.contains("reply one"));
    assert!(saved.contains("reply two") && saved.contains("\"one\""));

    let mut cmd = sb.odek(&url);
    cmd.args(["usage", "--json"]);
    let out = output(cmd).await;
    let usage: Value = serde_json::from_slice(&out.stdout).expect("usage json");
    assert!(usage["input_tokens"].as_u64() >= Some(700), "{usage}");

    let mut cmd = sb.odek(&url);
    cmd.args(["session", "compact", &id]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stderr(&out).contains("nothing to compact"),
        "{}",
        show(&out)
    );
}

/// A config with `compaction.mode = summary`, a small window and one kept turn; the first
/// answer is large, so the second turn's request passes `at_percent`.
fn summary_mode(sb: &Sandbox) {
    sb.global_config(
        &json!({
            "context_window": 10000,
            "compaction": {"mode": "summary", "keep_turns": 1},
        })
        .to_string(),
    );
}

async fn two_turns(sb: &Sandbox, url: &str) -> String {
    let mut cmd = sb.odek(url);
    cmd.args(["run", "first question"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let mut cmd = sb.odek(url);
    cmd.args(["continue", "--events-jsonl", "-", "second question"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    stdout(&out)
}

/// In `summary` mode the request that passes `at_percent` of the budget is preceded by the
/// summary request, and goes with the summary in place of the large first answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_mode_summarises_when_the_context_passes_at_percent() {
    let big = "x".repeat(24_000);
    let server = ScriptedServer::start(vec![
        text(&big),
        text("Summary: the first answer was a long row of x."),
        text("answer two"),
    ])
    .await;
    let sb = Sandbox::new();
    summary_mode(&sb);
    let events = two_turns(&sb, &server.base_url()).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    assert!(is_summary_request(&reqs[1]));
    let sent = reqs[2].to_string();
    assert!(!sent.contains(&big[..100]), "the large answer is gone");
    assert!(sent.contains("Summary: the first answer was a long row of x."));
    assert!(sent.contains("first question") && sent.contains("second question"));
    let done = events_of(&events, "compacted");
    assert_eq!(done.len(), 1, "{events}");
    assert_eq!(done[0]["data"]["trigger"], "auto");
    assert_eq!(done[0]["data"]["mode"], "summary");
    assert!(server.side_requests().is_empty());
}

/// An empty summary falls back to the digest of the same turns (the digest's side call),
/// and the event says `digest`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_summary_falls_back_to_the_digest() {
    let big = "y".repeat(24_000);
    let server = ScriptedServer::start(vec![text(&big), text(""), text("answer two")]).await;
    let sb = Sandbox::new();
    summary_mode(&sb);
    let events = two_turns(&sb, &server.base_url()).await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    assert!(is_summary_request(&reqs[1]));
    assert_eq!(server.side_requests().len(), 1, "one digest side call");
    let sent = &reqs[2];
    let digests = starting_with(
        sent,
        "[Compacted earlier context: earlier turns were summarized",
    );
    assert_eq!(digests.len(), 1, "{sent}");
    assert!(digests[0].contains("Digest: the agent listed files"));
    assert!(!sent.to_string().contains(&big[..100]));
    let done = events_of(&events, "compacted");
    assert_eq!(done[0]["data"]["mode"], "digest", "{events}");
}

/// `POST /api/sessions/{id}/compact`: the web UI's `/compact` — the summary request with
/// the focus, the answer's line and fork, the session's next prompt with the summary; a
/// second call at once, with nothing before the kept turns, is a 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_compacts_a_session_on_request() {
    let server = ScriptedServer::start(vec![
        text("reply one"),
        text("reply two"),
        text("reply three"),
        text("Summary: asked three times."),
        text("reply four"),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let first = served.prompt_completed(json!({"content": "one"})).await;
    let id = first["session_id"].as_str().expect("id").to_string();
    for ask in ["two", "three"] {
        served
            .prompt_completed(json!({"content": ask, "session_id": id}))
            .await;
    }
    let path = format!("/api/sessions/{id}/compact");
    let done = served.post(&path, json!({"keep": "the count"})).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.json["mode"], "summary");
    assert!(done.json["backup"].as_str().is_some(), "{}", done.text);
    assert!(
        done.json["line"]
            .as_str()
            .is_some_and(|l| l.contains("summarised"))
    );
    assert!(content(&messages(&server.requests()[3])[1]).contains("keep: the count"));
    let again = served.post(&path, json!({})).await;
    assert_eq!(again.status, 400, "{}", again.text);
    served
        .prompt_completed(json!({"content": "four", "session_id": id}))
        .await;
    let next = server.requests()[4].to_string();
    assert!(next.contains("Summary: asked three times.") && !next.contains("reply one"));
}

/// ACP's `/compact`: announced, answered by odek (the summary request, no turn of the
/// model), the next prompt's request holding the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_compact_is_odeks_command() {
    let server = ScriptedServer::start(vec![
        text("reply one"),
        text("reply two"),
        text("reply three"),
        text("Summary: an editor's three prompts."),
        text("reply four"),
    ])
    .await;
    let sb = Sandbox::new();
    let work = sb.work.to_string_lossy().to_string();
    let report = crate::acp::client(
        &sb,
        &server.base_url(),
        json!({"steps": [
            {"new": work},
            {"prompt": "one"},
            {"prompt": "two"},
            {"prompt": "three"},
            {"prompt": "/compact the prompts"},
            {"prompt": "four"},
        ]}),
    )
    .await;
    let log = report.to_string();
    assert!(log.contains("conversation summarised"), "{log}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{log}");
    assert!(is_summary_request(&reqs[3]));
    assert!(content(&messages(&reqs[3])[1]).contains("keep: the prompts"));
    let next = reqs[4].to_string();
    assert!(next.contains("Summary: an editor's three prompts.") && !next.contains("reply one"));
}

/// The web UI in Chromium: three prompts, then `/compact the names` typed in the prompt box
/// goes to `POST /api/sessions/{id}/compact` (the summary request, not a prompt), and the
/// status line says what was replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_compacts_the_open_session_when_compact_is_typed() {
    use crate::support::browser::Browser;
    use fantoccini::key::Key;
    let server = ScriptedServer::start(vec![
        text("reply one"),
        text("reply two"),
        text("reply three"),
        text("Summary: three prompts in the browser."),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;
    for ask in ["one", "two", "three"] {
        browser.type_text(ask).await;
        browser.press(Key::Enter).await;
        let answered = format!(
            "return Array.from(document.querySelectorAll('.turn .msg-assistant.markdown')).some(a => a.textContent === 'reply {ask}');"
        );
        browser.wait_until("the answer", &answered).await;
    }
    browser.type_text("/compact the names").await;
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the compaction's line",
            "return document.getElementById('status').textContent.includes('conversation summarised');",
        )
        .await;
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert!(is_summary_request(&reqs[3]));
    assert!(content(&messages(&reqs[3])[1]).contains("keep: the names"));
    let typed = browser
        .js("return document.getElementById('prompt').value;", vec![])
        .await;
    assert_eq!(typed, "");
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

/// Ctrl-C while `/compact` waits for the model: the summary is given up, the REPL's prompt
/// comes back and the conversation is as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_a_compact_in_the_repl() {
    let slow = Hold::new();
    let server = ScriptedServer::start(vec![
        text("answer one"),
        Reply::Held(slow.clone(), Box::new(text("a summary too late"))),
        text("answer two"),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"compaction": {"keep_turns": 0}}"#);
    let cmd = repl_command(&sb, &server);
    let watch = std::sync::Arc::new(server);
    let requests = watch.clone();
    let gate = slow.clone();
    in_pty(cmd, move |p| {
        p.exp_string("odek 1> ")?;
        p.send_line("first question")?;
        p.exp_string("answer one")?;
        p.exp_string("odek 2> ")?;
        p.send_line("/compact")?;
        p.exp_string("summarising the conversation")?;
        while requests.requests().len() < 2 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        p.send_control('c')?;
        p.exp_string("compaction cancelled")?;
        gate.release();
        p.exp_string("odek 2> ")?;
        p.send_line("second question")?;
        p.exp_string("answer two")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await;
    let reqs = watch.requests();
    assert_eq!(reqs.len(), 3);
    let text = reqs[2].to_string();
    assert!(
        text.contains("answer one") && !text.contains("Compacted earlier context"),
        "the conversation is as it was: {text}"
    );
}
