//! Steering and typing ahead (docs/STEERING.md): a message sent while a turn runs reaches
//! that turn's next model request as a user message marked as sent during the turn; a
//! queued one (and a steer that came after the last request) becomes the next turn. Through
//! `odek serve`'s API, the Telegram bot and the REPL in a pty.

use std::time::Duration;

use crate::support::serve::Served;
use crate::support::*;
use serde_json::{Value, json};

/// What opens a steer message in the transcript (`engine::STEER_NOTE`).
const NOTE: &str = "[Sent by the user while you were working on this turn]\n";

/// The text of each user message of a request.
fn user_texts(request: &Value) -> Vec<String> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

/// Waits until the server has answered `n` requests (30 s at most).
async fn requests_reach(server: &ScriptedServer, n: usize) -> Vec<Value> {
    for _ in 0..3000 {
        let requests = server.requests();
        if requests.len() >= n {
            return requests;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the model got {} requests, not {n}",
        server.requests().len()
    );
}

/// Waits until `GET /api/runs` lists `n` runs and none runs.
async fn runs_end(served: &Served, n: usize) -> Vec<Value> {
    for _ in 0..3000 {
        let runs = served.get("/api/runs").await.json["runs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if runs.len() >= n && runs.iter().all(|r| r["status"] != "running") {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{n} runs did not end:\n{}", served.stderr());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_steers_a_running_turn_and_queues_the_next_one() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::Held(
            hold.clone(),
            Box::new(tools(&[("glob", json!({"pattern": "*.md"}))])),
        ),
        text("done, on staging"),
        text("and the next one"),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let started = served
        .post("/api/prompt", json!({"content": "migrate the db"}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let run_id = started.json["run_id"].as_str().expect("run id").to_string();
    let session = started.json["session_id"].as_str().expect("id").to_string();
    hold.wait_reached().await;

    let path = format!("/api/sessions/{session}/messages");
    let steered = served
        .post(&path, json!({"content": "use the staging database"}))
        .await;
    assert_eq!(steered.status, 202, "{}", steered.text);
    assert_eq!(steered.json["delivered"], "steered");
    assert_eq!(steered.json["run_id"], run_id.as_str());
    let queued = served
        .post(
            "/api/prompt",
            json!({"content": "then write the notes", "session_id": session, "queue": true}),
        )
        .await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    assert_eq!(queued.json["delivered"], "queued");
    assert_eq!(queued.json["position"], 1);
    // Attachments wait for the turn's end: a second writer of another kind.
    let attached = served
        .post(
            &path,
            json!({"content": "see", "attachments": [{"name": "a.txt", "text": "x"}]}),
        )
        .await;
    assert_eq!(attached.status, 409, "{}", attached.text);
    hold.release();

    let runs = runs_end(&served, 2).await;
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
    let requests = requests_reach(&server, 3).await;
    assert_eq!(user_texts(&requests[0]), ["migrate the db"]);
    assert_eq!(
        user_texts(&requests[1]),
        [
            "migrate the db".to_string(),
            format!("{NOTE}use the staging database")
        ]
    );
    let last = user_texts(&requests[2]);
    assert_eq!(
        last.last().map(String::as_str),
        Some("then write the notes")
    );
    // The steer is saved with the session, and its event says so.
    let saved = served.get(&format!("/api/sessions/{session}")).await;
    assert!(
        saved.text.contains("use the staging database"),
        "{}",
        saved.text
    );
    let events = served
        .get(&format!("/api/events?session_id={session}"))
        .await;
    let steer = events.json["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["type"] == "user_steer")
        .cloned()
        .unwrap_or_else(|| panic!("no user_steer event: {}", events.text));
    assert_eq!(steer["data"]["text"], "use the staging database");
    assert_eq!(steer["iteration"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_a_steer_after_the_last_request_becomes_the_next_turn() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::Held(hold.clone(), Box::new(text("first answer"))),
        text("second answer"),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let started = served.post("/api/prompt", json!({"content": "one"})).await;
    let session = started.json["session_id"].as_str().expect("id").to_string();
    hold.wait_reached().await;
    let late = served
        .post(
            &format!("/api/sessions/{session}/messages"),
            json!({"content": "one more thing"}),
        )
        .await;
    assert_eq!(late.json["delivered"], "steered", "{}", late.text);
    hold.release();
    runs_end(&served, 2).await;
    let requests = requests_reach(&server, 2).await;
    assert_eq!(user_texts(&requests[0]), ["one"]);
    // Never lost: the next turn, as a plain message.
    assert_eq!(user_texts(&requests[1]), ["one", "one more thing"]);
}

/// Waits (in a blocking test thread, 15 s at most) until `hold`'s request reached the server.
fn reached(hold: &Hold) {
    for _ in 0..1500 {
        if hold.reached() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the held request never arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repl_enter_steers_alt_enter_queues_and_a_late_steer_is_the_next_turn() {
    let (first, late) = (Hold::new(), Hold::new());
    let server = ScriptedServer::start(vec![
        Reply::Held(
            first.clone(),
            Box::new(tools(&[("glob", json!({"pattern": "*.md"}))])),
        ),
        text("done on staging"),
        text("notes written"),
        Reply::Held(late.clone(), Box::new(text("short answer"))),
        text("late line answered"),
    ])
    .await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    let holds = (first.clone(), late.clone());
    in_pty(cmd, move |p| {
        let (first, late) = holds;
        p.exp_string("odek 1> ")?;
        p.send_line("migrate the db")?;
        reached(&first);
        // The prompt stays open during the turn: Enter steers it.
        p.send_line("use staging")?;
        p.exp_string("steered: use staging")?;
        // (the prompt drawn again: the line editor reads keys, Alt+Enter among them)
        p.exp_string("odek 2> ")?;
        // Alt+Enter (ESC, then Enter) queues the line as the next turn.
        p.send("write the notes\x1b\r")?;
        p.flush()?;
        p.exp_string("queued (1): write the notes")?;
        p.send_line("/queue")?;
        p.exp_string("1. write the notes")?;
        first.release();
        p.exp_string("done on staging")?;
        p.exp_string("notes written")?;
        p.exp_string("odek 3> ")?;
        // A steer that comes after the turn's last request becomes the next turn.
        p.send_line("one more")?;
        reached(&late);
        // Ctrl-C on an empty line clears the queue (and leaves the turn running).
        p.send("drop me\x1b\r")?;
        p.flush()?;
        p.exp_string("queued (1): drop me")?;
        p.exp_string("odek 4> ")?;
        p.send_control('c')?;
        p.exp_string("queue cleared (1)")?;
        p.send_line("/queue")?;
        p.exp_string("Nothing queued")?;
        p.send_line("and this too")?;
        p.exp_string("steered: and this too")?;
        late.release();
        p.exp_string("short answer")?;
        p.exp_string("late line answered")?;
        p.exp_string("odek 5> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        user_texts(&requests[1]),
        ["migrate the db".to_string(), format!("{NOTE}use staging")]
    );
    let queued = user_texts(&requests[2]);
    assert_eq!(queued.last().map(String::as_str), Some("write the notes"));
    let late_turn = user_texts(&requests[4]);
    assert_eq!(late_turn.last().map(String::as_str), Some("and this too"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_ui_keeps_the_input_open_send_steers_and_alt_enter_queues() {
    use crate::support::browser::Browser;
    use fantoccini::key::Key;
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        Reply::Held(
            hold.clone(),
            Box::new(tools(&[("glob", json!({"pattern": "*.md"}))])),
        ),
        text("done on staging"),
        text("notes written"),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;
    browser.type_text("migrate the db").await;
    browser.press(Key::Enter).await;
    hold.wait_reached().await;
    browser
        .wait_until(
            "Send enabled and Queue shown during the run",
            "return !document.getElementById('send').disabled && !document.getElementById('queue').hidden;",
        )
        .await;
    browser.type_text("use staging").await;
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the steer accepted",
            "return document.getElementById('status').textContent.startsWith('Sent to the running turn');",
        )
        .await;
    browser.type_text("write the notes").await;
    browser.alt(Key::Enter.into()).await;
    browser
        .wait_until(
            "the line queued",
            "return document.getElementById('status').textContent.startsWith('Queued (1)');",
        )
        .await;
    hold.release();
    browser
        .wait_until(
            "the steer shown in the turn",
            "const s = document.querySelector('.turn .steer'); return !!s && s.textContent === '↳ use staging';",
        )
        .await;
    browser
        .wait_until(
            "the queued turn's answer",
            "return [...document.querySelectorAll('.turn .msg-assistant')].some((a) => a.textContent === 'notes written');",
        )
        .await;
    let requests = requests_reach(&server, 3).await;
    assert_eq!(
        user_texts(&requests[1]),
        ["migrate the db".to_string(), format!("{NOTE}use staging")]
    );
    let queued = user_texts(&requests[2]);
    assert_eq!(queued.last().map(String::as_str), Some("write the notes"));
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

/// `/exit` during a turn with a line queued: the turn stops, and the queued line is shown as
/// not sent — what the user typed is never dropped in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repl_exit_during_a_turn_shows_the_lines_it_did_not_send() {
    let slow = Hold::new();
    let server =
        ScriptedServer::start(vec![Reply::Held(slow.clone(), Box::new(text("too late")))]).await;
    let sb = Sandbox::new();
    let cmd = repl_command(&sb, &server);
    let gate = slow.clone();
    in_pty(cmd, move |p| {
        p.exp_string("odek 1> ")?;
        p.send_line("a long job")?;
        reached(&gate);
        p.send("then the tests\x1b\r")?;
        p.flush()?;
        p.exp_string("queued (1): then the tests")?;
        p.send_line("/exit")?;
        p.exp_string("Not sent (the REPL ended before their turn):")?;
        p.exp_string("  then the tests")?;
        p.exp_eof()?;
        Ok(())
    })
    .await;
    slow.release();
    assert_eq!(
        server.requests().len(),
        1,
        "the queued line never became a turn"
    );
}
