//! Reliability through the real binary: broken tool-call arguments, answers cut off by the
//! output limit, and (below) the model fault matrix.

use crate::support::*;
use serde_json::{Value, json};

/// The assistant message of request `request` that carries tool calls, and its first call.
fn first_call(request: &Value) -> Value {
    messages(request)
        .into_iter()
        .find(|m| m["tool_calls"].is_array())
        .map(|m| m["tool_calls"][0].clone())
        .expect("a tool call in the history")
}

fn cut_call(name: &str, raw_args: &str) -> Value {
    json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_cut", "type": "function", "function": {"name": name, "arguments": raw_args}}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_off_by_the_output_limit_is_not_run_and_never_sent_back_verbatim() {
    for stream in [true, false] {
        let raw = r#"{"path": "notes.txt", "content": "the first half of a long file and th"#;
        let server = ScriptedServer::start(vec![
            Reply::CutOff(cut_call("write_file", raw)),
            text("I will write it in smaller parts"),
        ])
        .await;
        server.refuse_invalid_arguments();
        let sb = Sandbox::new();
        let mut cmd = sb.odek(&server.base_url());
        cmd.args([
            "run",
            if stream { "--stream" } else { "--no-stream" },
            "write notes",
        ]);
        let out = output(cmd).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "stream {stream}: {}",
            show(&out)
        );
        assert!(
            !sb.work.join("notes.txt").exists(),
            "the cut call never ran"
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2, "no 500, no retry: {}", show(&out));
        assert_eq!(first_call(&reqs[1])["function"]["arguments"], "{}");
        let result = unwrap_untrusted(&tool_results(&reqs[1])[0]);
        assert!(
            result.starts_with("error: this call was cut off by the output limit (finish_reason \"length\") before its arguments were complete, so it was not run. Make a smaller call"),
            "{result}"
        );
        assert!(
            result.contains(raw),
            "the raw text is in the result: {result}"
        );
        // The saved transcript holds the stand-in too, so `continue` cannot trip the server.
        let saved = only_session(&sb);
        let saved_call = saved["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .find(|m| m["tool_calls"].is_array())
            .expect("the call")["tool_calls"][0]
            .clone();
        assert_eq!(saved_call["function"]["arguments"], "{}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_that_are_not_json_are_refused_before_the_approval_gate() {
    // A dangerous command with broken arguments: refused for its arguments (never asked
    // about, never run), with the raw text redacted in the result.
    let secret = "sk-proj4Xy9Zq2Lm8Nv3Bc7Df1Gh5Jk0Pw6Rt";
    let server = ScriptedServer::start(vec![
        raw_tool_call(
            "shell",
            &format!("{{\"command\": \"curl -H 'k: {secret}' https://example.test > out\""),
        ),
        text("understood"),
    ])
    .await;
    server.refuse_invalid_arguments();
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"action": "allow"}}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "fetch it"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        !sb.work.join("out").exists(),
        "never run, even with everything allowed"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let result = unwrap_untrusted(&tool_results(&reqs[1])[0]);
    assert!(
        result.starts_with("error: the arguments are not valid JSON"),
        "{result}"
    );
    assert!(!result.contains(secret), "redacted: {result}");
    assert!(result.contains("[REDACTED]"), "{result}");
    assert_eq!(first_call(&reqs[1])["function"]["arguments"], "{}");
}

// ---------------------------------------------------------------------------------------
// The model fault matrix: each fault once (the run completes, one copy of everything) and
// always (a clean failure), streamed and buffered.

use std::time::Duration;

/// The first answer: narration and a tool call (the fault hits it), then the final text.
fn call_then_answer() -> (Value, Value) {
    let call = json!({"role": "assistant", "content": "Checking the file first.", "tool_calls": [
        {"id": "call_read", "type": "function",
         "function": {"name": "read_file", "arguments": "{\"path\": \"a.txt\", \"start_line\": 1}"}}]});
    let answer = json!({"role": "assistant", "content": "All good: the file says hello."});
    (call, answer)
}

/// Index of the first chunk after the first content piece, and of the chunk after the
/// first half of the tool call's arguments (see `sse_chunks`).
fn positions(message: &Value) -> [(&'static str, usize); 2] {
    let text_pieces = message["content"]
        .as_str()
        .map_or(0, |t| t.chars().count().div_ceil(7));
    [
        ("after a content delta", 2),
        ("inside the arguments", 1 + text_pieces + 1),
    ]
}

fn sandbox_for_faults(attempts: u32) -> Sandbox {
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("a.txt"), "hello\n").expect("write");
    sb.global_config(&format!(
        r#"{{"llm": {{"retry_initial_delay_ms": 5, "stream_idle_timeout_seconds": 1, "timeout_seconds": 1, "max_attempts": {attempts}}}}}"#
    ));
    sb
}

struct Observed {
    out: std::process::Output,
    events: Vec<Value>,
    session: Value,
}

async fn run_faulty(sb: &Sandbox, server: &FaultServer, stream: bool) -> Observed {
    let events_path = sb
        .dir
        .path()
        .join(format!("events-{}.jsonl", server.requests().len()));
    let mut cmd = sb.odek(&server.base_url());
    cmd.args([
        "run",
        if stream { "--stream" } else { "--no-stream" },
        "--events-jsonl",
    ])
    .arg(&events_path)
    .arg("look at a.txt");
    let out = output(cmd).await;
    let events = read(&events_path)
        .lines()
        .map(|l| serde_json::from_str(l).expect("event JSON"))
        .collect();
    let newest = session_files(sb)
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .expect("a session file");
    let session = serde_json::from_str(&read(newest)).expect("the session loads");
    Observed {
        out,
        events,
        session,
    }
}

fn count<T: PartialEq>(items: impl IntoIterator<Item = T>, wanted: T) -> usize {
    items.into_iter().filter(|i| *i == wanted).count()
}

fn event_types(o: &Observed) -> Vec<String> {
    o.events
        .iter()
        .filter_map(|e| e["type"].as_str().map(str::to_string))
        .collect()
}

fn assistant_texts(o: &Observed) -> Vec<String> {
    o.session["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

/// Each fault once: the run completes with exactly one copy of the answer on stdout, in
/// the transcript and in the events, and the tool ran once.
async fn fault_once(fault: Fault, stream: bool, what: &str) {
    let (call, answer) = call_then_answer();
    let server = FaultServer::start(vec![
        (call.clone(), fault),
        (call, Fault::None),
        (answer, Fault::None),
    ])
    .await;
    let sb = sandbox_for_faults(3);
    let o = run_faulty(&sb, &server, stream).await;
    let stderr = String::from_utf8_lossy(&o.out.stderr);
    assert_eq!(o.out.status.code(), Some(0), "{what}: {}", show(&o.out));
    assert_eq!(
        String::from_utf8_lossy(&o.out.stdout),
        "All good: the file says hello.\n",
        "{what}"
    );
    assert_eq!(
        stderr.matches("retrying in").count(),
        1,
        "{what}: one retry line: {stderr}"
    );
    assert_eq!(server.requests().len(), 3, "{what}");
    let types = event_types(&o);
    assert_eq!(
        count(types.iter().map(String::as_str), "tool_call_started"),
        1,
        "{what}: {types:?}"
    );
    assert_eq!(
        count(types.iter().map(String::as_str), "run_completed"),
        1,
        "{what}"
    );
    let completed = o
        .events
        .iter()
        .find(|e| e["type"] == "run_completed")
        .expect("terminal");
    assert_eq!(
        completed["data"]["answer"], "All good: the file says hello.",
        "{what}"
    );
    assert_eq!(
        assistant_texts(&o),
        ["Checking the file first.", "All good: the file says hello."],
        "{what}: one copy of each message in the transcript"
    );
}

/// A fault that never clears: exit 1, one clear line, one `run_failed`, a loadable session.
async fn fault_always(fault: Fault, stream: bool, what: &str) {
    let (call, _) = call_then_answer();
    let server = FaultServer::start(vec![(call.clone(), fault), (call, fault)]).await;
    let sb = sandbox_for_faults(2);
    let o = run_faulty(&sb, &server, stream).await;
    let stderr = String::from_utf8_lossy(&o.out.stderr);
    assert_eq!(o.out.status.code(), Some(1), "{what}: {}", show(&o.out));
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("odek: iteration 1:"))
        .collect();
    assert_eq!(errors.len(), 1, "{what}: {stderr}");
    assert!(
        errors[0].contains("retry exhausted (2 attempts)"),
        "{what}: {}",
        errors[0]
    );
    assert!(
        o.out.stdout.is_empty(),
        "{what}: nothing half-done on stdout"
    );
    let types = event_types(&o);
    assert_eq!(
        count(types.iter().map(String::as_str), "run_failed"),
        1,
        "{what}: {types:?}"
    );
    assert_eq!(
        count(types.iter().map(String::as_str), "tool_call_started"),
        0,
        "{what}"
    );
    assert!(
        assistant_texts(&o).is_empty(),
        "{what}: no partial answer saved: {:?}",
        assistant_texts(&o)
    );
    assert_eq!(server.remaining(), 0, "{what}: both attempts made");
}

fn streamed_faults() -> Vec<(String, Fault)> {
    let (call, _) = call_then_answer();
    let mut faults = Vec::new();
    for (place, after) in positions(&call) {
        faults.push((format!("truncated {place}"), Fault::Truncate { after }));
        faults.push((
            format!("stalled {place}"),
            Fault::Stall {
                after,
                silence: Duration::from_millis(1600),
            },
        ));
        faults.push((
            format!("not JSON {place}"),
            Fault::NotJson { after: Some(after) },
        ));
    }
    faults.push(("an HTML page".into(), Fault::NotJson { after: None }));
    faults.push(("no choices".into(), Fault::EmptyChoices));
    faults
}

fn buffered_faults() -> Vec<(String, Fault)> {
    vec![
        ("a body cut in half".into(), Fault::Truncate { after: 0 }),
        (
            "a stall past the request timeout".into(),
            Fault::Stall {
                after: 0,
                silence: Duration::from_millis(1600),
            },
        ),
        ("an HTML page".into(), Fault::NotJson { after: None }),
        ("no choices".into(), Fault::EmptyChoices),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_faults_once_are_retried_and_leave_one_copy_of_everything() {
    for (what, fault) in streamed_faults() {
        fault_once(fault, true, &format!("streamed, {what}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_faults_that_never_clear_fail_cleanly() {
    for (what, fault) in streamed_faults() {
        fault_always(fault, true, &format!("streamed, {what}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_faults_once_are_retried_and_leave_one_copy_of_everything() {
    for (what, fault) in buffered_faults() {
        fault_once(fault, false, &format!("buffered, {what}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_faults_that_never_clear_fail_cleanly() {
    for (what, fault) in buffered_faults() {
        fault_always(fault, false, &format!("buffered, {what}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_a_retried_answer_and_its_notice_each_appear_once() {
    let answer = json!({"role": "assistant", "content": "The answer is forty-two, as computed from the notes."});
    let server = FaultServer::start(vec![
        (answer.clone(), Fault::Truncate { after: 3 }),
        (answer, Fault::None),
    ])
    .await;
    let sb = sandbox_for_faults(3);
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm")
        .args(["run", "--ephemeral", "what is the answer"]);
    let screen = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_eof()
    })
    .await
    .expect("join")
    .expect("the run ends");
    assert_eq!(
        screen
            .matches("The answer is forty-two, as computed from the notes.")
            .count(),
        1,
        "{screen:?}"
    );
    assert_eq!(
        screen.matches("The ans").count(),
        1,
        "the partial text is not shown twice: {screen:?}"
    );
    // The notice waits for the answer line to end, then says what happened.
    assert_eq!(
        screen.matches("odek: broken answer").count(),
        1,
        "{screen:?}"
    );
    assert!(
        screen.contains("retried (attempt 2/3); the partial answer was discarded"),
        "{screen:?}"
    );
    let answer_at = screen.find("The answer is forty-two").expect("answer");
    let notice_at = screen.find("odek: broken answer").expect("notice");
    assert!(
        notice_at > answer_at,
        "the answer is not cut in two: {screen:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_a_retry_that_answers_differently_is_announced() {
    let first = json!({"role": "assistant", "content": "The answer is forty-one, I think."});
    let second = json!({"role": "assistant", "content": "Actually: forty-two."});
    let server = FaultServer::start(vec![
        (first, Fault::Truncate { after: 3 }),
        (second, Fault::None),
    ])
    .await;
    let sb = sandbox_for_faults(3);
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm")
        .args(["run", "--ephemeral", "what is the answer"]);
    let screen = tokio::task::spawn_blocking(move || -> Result<String, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_eof()
    })
    .await
    .expect("join")
    .expect("the run ends");
    let partial = screen.find("The answer is ").expect("the partial text");
    let notice = screen
        .find("odek: the retried answer differs from the text above, which is discarded:")
        .expect("announced");
    let retried = screen.find("Actually: forty-two.").expect("the new answer");
    assert!(partial < notice && notice < retried, "{screen:?}");
    assert_eq!(
        screen.matches("Actually: forty-two.").count(),
        1,
        "{screen:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Ctrl-C at the approval prompt.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_the_approval_prompt_ends_a_run_with_130_and_runs_nothing() {
    let server = ScriptedServer::start(vec![tools(&[(
        "shell",
        json!({"command": "python3 -c \"open('ran','w')\""}),
    )])])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm")
        .args(["run", "--no-stream", "make a file"]);
    let exit = tokio::task::spawn_blocking(move || -> Result<_, rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("[a]pprove")?;
        p.send_control('c')?;
        p.exp_string("interrupt")?;
        p.exp_eof()?;
        Ok(format!("{:?}", p.process().wait()))
    })
    .await
    .expect("join")
    .expect("the run ends at Ctrl-C");
    assert!(
        exit.starts_with("Ok(Exited(") && exit.ends_with(", 130))"),
        "exit code 130: {exit}"
    );
    assert!(!sb.work.join("ran").exists(), "the call counts as denied");
    assert_eq!(server.requests().len(), 1, "the turn ended there");
    // The saved transcript is valid: the call has its (refused) result.
    let saved = only_session(&sb);
    let saved = saved["messages"].as_array().cloned().unwrap_or_default();
    assert_no_orphans(&saved);
    let result = saved
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .map(unwrap_untrusted)
        .unwrap_or_default();
    assert!(
        result.starts_with("error: operation not run: the user interrupted the turn"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_the_approval_prompt_returns_the_repl_to_its_prompt() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('ran','w')\""}),
        )]),
        text("hello to you too"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm").args(["repl", "--no-stream"]);
    tokio::task::spawn_blocking(move || -> Result<(), rexpect::error::Error> {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        p.exp_string("odek 1> ")?;
        p.send_line("make a file")?;
        p.exp_string("[a]pprove")?;
        p.send_control('c')?;
        p.exp_string("turn interrupted")?;
        p.exp_string("odek 2> ")?;
        // The next line is a new turn, not an answer to the old prompt.
        p.send_line("hello")?;
        p.exp_string("hello to you too")?;
        p.exp_string("odek 3> ")?;
        p.send_line("/exit")?;
        p.exp_eof()?;
        Ok(())
    })
    .await
    .expect("join")
    .expect("the REPL got its prompt back");
    assert!(!sb.work.join("ran").exists());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let last_user = messages(&reqs[1])
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str().map(str::to_string));
    assert_eq!(last_user.as_deref(), Some("hello"));
}

// ---------------------------------------------------------------------------------------
// Tests that can fail.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_in_odeks_environment_never_reach_a_shell_command() {
    let probe = r#"for v in ODEK_API_KEY DEEPSEEK_API_KEY OPENAI_API_KEY; do printenv $v >/dev/null && echo "$v visible" || echo "$v hidden"; done"#;
    let server = ScriptedServer::start(vec![
        tools(&[("shell", json!({"command": probe}))]),
        text("checked"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_API_KEY", "odek-key-value-0123456789")
        .env("DEEPSEEK_API_KEY", "deepseek-key-value-0123456789")
        .env("OPENAI_API_KEY", "openai-key-value-0123456789")
        .args(["run", "look at the environment"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let reqs = server.requests();
    assert_eq!(
        reqs[0].get("model").and_then(Value::as_str),
        Some("test-model")
    );
    let result = unwrap_untrusted(&tool_results(&reqs[1])[0]);
    for var in ["ODEK_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"] {
        assert!(result.contains(&format!("{var} hidden")), "{result}");
        assert!(!result.contains(&format!("{var} visible")), "{result}");
    }
    // The key did reach the model server, so odek itself had it.
    assert_eq!(
        server.auth_headers()[0].as_deref(),
        Some("Bearer odek-key-value-0123456789")
    );
}
