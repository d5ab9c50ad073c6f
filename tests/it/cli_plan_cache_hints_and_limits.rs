//! The plan through the real binary: the plan sent last (prompt caches), cached
//! tokens made visible, plan-aware hints, the blocked-step streak, the remaining steps when
//! a limit ends the run, and `odek usage`.

use crate::support::*;
use serde_json::{Value, json};

const PLAN_PREFIX: &str = "[Current plan:";

fn is_plan(m: &Value) -> bool {
    m["role"] == "system"
        && m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with(PLAN_PREFIX))
}

fn plan_positions(request: &Value) -> Vec<usize> {
    messages(request)
        .iter()
        .enumerate()
        .filter(|(_, m)| is_plan(m))
        .map(|(i, _)| i)
        .collect()
}

/// The messages of a request without its plan message.
fn without_plan(request: &Value) -> Vec<Value> {
    messages(request)
        .into_iter()
        .filter(|m| !is_plan(m))
        .collect()
}

/// `odek run --events-jsonl <file> ARGS…`: its output and the events it wrote.
async fn run_with_events(
    sb: &Sandbox,
    server: &ScriptedServer,
    args: &[&str],
) -> (std::process::Output, Vec<Value>) {
    let path = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.arg("run").arg("--events-jsonl").arg(&path).args(args);
    let out = output(cmd).await;
    (out, event_lines(&read(&path)))
}

/// The data of the run's terminal event, which must be the last event and of `kind`.
fn terminal<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    let last = events.last().expect("events");
    assert_eq!(last["type"], kind, "{last}");
    &last["data"]
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn create(steps: &[&str]) -> Reply {
    let steps: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"id": format!("s{}", i + 1), "title": t}))
        .collect();
    tools(&[("plan", json!({"verb": "create", "steps": steps}))])
}

fn set_status(id: &str, status: &str) -> Reply {
    tools(&[(
        "plan",
        json!({"verb": "update", "updates": [{"id": id, "status": status}]}),
    )])
}

fn echo(text: &str) -> Reply {
    tools(&[("shell", json!({"command": format!("echo {text}")}))])
}

/// The script of a small planned run: create, start s1, two commands, finish s1, answer.
fn planned_run() -> Vec<Reply> {
    vec![
        create(&["inspect the tree", "write the report", "check it"]),
        set_status("s1", "in_progress"),
        echo("one"),
        echo("two"),
        tools(&[("plan", json!({"verb": "complete", "step_id": "s1"}))]),
        text("done: the tree is inspected"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_the_plan_last_and_extend_each_other() {
    let server = ScriptedServer::start(planned_run()).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "inspect the tree"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    assert!(
        plan_positions(&requests[0]).is_empty(),
        "no plan before create"
    );
    for (i, r) in requests.iter().enumerate().skip(1) {
        let last = messages(r).len() - 1;
        assert_eq!(plan_positions(r), vec![last], "request {i}: one plan, last");
        let plan = messages(r)[last]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(plan.contains("source=\"plan\""), "still wrapped: {plan}");
    }
    // Between two requests only the end changes: everything before the plan message of one
    // request starts the next one, byte for byte.
    for pair in requests[1..].windows(2) {
        let (before, after) = (without_plan(&pair[0]), without_plan(&pair[1]));
        assert_eq!(
            after[..before.len()],
            before[..],
            "a request extends the previous one"
        );
    }
    assert!(
        requests.windows(2).all(|p| p[0]["tools"] == p[1]["tools"]),
        "the tool list never changes"
    );

    // The saved transcript keeps the seed's layout: the plan right after the task.
    let session = only_session(&sb);
    let saved = session["messages"].as_array().expect("messages");
    assert_eq!(saved[1]["role"], "user");
    assert!(is_plan(&saved[2]), "{}", saved[2]);
    assert_eq!(saved.iter().filter(|m| is_plan(m)).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_placement_is_the_seed_request_layout() {
    let server = ScriptedServer::start(planned_run()).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_PLANNING_PLACEMENT", "head")
        .args(["run", "inspect the tree"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for r in &server.requests()[1..] {
        assert_eq!(plan_positions(r), vec![2], "right after the task");
    }

    let mut bad = sb.odek(&server.base_url());
    bad.env("ODEK_PLANNING_PLACEMENT", "middle")
        .args(["run", "x"]);
    let out = output(bad).await;
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ODEK_PLANNING_PLACEMENT") && stderr.contains("tail or head"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continued_session_keeps_its_prompt_and_tools_so_the_prefix_holds() {
    let server = ScriptedServer::start(planned_run()).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "inspect the tree"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let first_turn_last = server.requests().last().cloned().expect("request");

    // Minutes pass between turns in real use, and the date line of the system prompt has
    // them: mark the saved prompt, so a rebuilt one would show.
    let path = only_session_path(&sb);
    let mut session: Value = serde_json::from_str(&read(&path)).expect("session");
    let prompt = session["messages"][0]["content"].as_str().expect("prompt");
    let marked = prompt.replace("- Date: ", "- Date (as saved): ");
    assert_ne!(marked, prompt);
    session["messages"][0]["content"] = Value::from(marked.clone());
    std::fs::write(&path, session.to_string()).expect("write");
    server.push(vec![echo("three"), text("checked")]);
    let mut cont = sb.odek(&server.base_url());
    cont.args(["continue", "now check it"]);
    let out = output(cont).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let second_turn_first = server.requests()[6].clone();
    assert_eq!(
        messages(&second_turn_first)[0]["content"],
        Value::from(marked),
        "the system prompt is the saved one, never rebuilt"
    );
    assert_eq!(second_turn_first["tools"], first_turn_last["tools"]);
    let (mut before, after) = (
        without_plan(&first_turn_last),
        without_plan(&second_turn_first),
    );
    before[0] = after[0].clone();
    assert_eq!(
        after[..before.len()],
        before[..],
        "the next turn extends the last request"
    );
    let last = messages(&second_turn_first).len() - 1;
    assert_eq!(plan_positions(&second_turn_first), vec![last]);
}

fn cached_usage(prompt: u64, cached: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10,
           "prompt_tokens_details": {"cached_tokens": cached}})
}

fn deepseek_usage(prompt: u64, hit: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10,
           "prompt_cache_hit_tokens": hit, "prompt_cache_miss_tokens": prompt - hit})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_tokens_reach_events_the_summary_line_the_session_and_odek_usage() {
    let server = ScriptedServer::start(vec![
        with_usage(echo("a"), cached_usage(1000, 0)),
        with_usage(echo("b"), cached_usage(1200, 900)),
        with_usage(text("first done"), deepseek_usage(1400, 1100)),
    ])
    .await;
    let sb = Sandbox::new();
    let (out, ev) = run_with_events(&sb, &server, &["--no-stream", "first"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("3 iterations · 2 tool calls · 3600 tokens in (2000 cached, 55%) · 30 out"),
        "{stderr}"
    );
    let per_iteration: Vec<u64> = of_type(&ev, "iteration_completed")
        .iter()
        .map(|e| e["data"]["cached_tokens"].as_u64().expect("cached_tokens"))
        .collect();
    assert_eq!(per_iteration, vec![0, 900, 2000], "running totals");
    let done = terminal(&ev, "run_completed");
    assert_eq!(done["cached_tokens"], 2000);
    assert_eq!(done["input_tokens"], 3600);
    assert!(done.get("remaining").is_none(), "no limit ended the run");

    let session = only_session(&sb);
    assert_eq!(session["cached_tokens"], 2000);
    let run = &session["runs"][0];
    assert_eq!(run["input_tokens"], 3600);
    assert_eq!(run["cached_tokens"], 2000);
    assert_eq!(run["iterations"], 3);
    assert_eq!(run["tool_calls"], 2);

    // A second session, and `odek usage` adds both up.
    server.push(vec![with_usage(
        text("second done"),
        cached_usage(500, 400),
    )]);
    let mut second = sb.odek(&server.base_url());
    second.args(["run", "--no-stream", "second"]);
    let out = output(second).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let mut usage = sb.odek(&server.base_url());
    usage.args(["usage", "--json", "--since", "1"]);
    let out = output(usage).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["since_days"], 1);
    assert_eq!(report["sessions"], 2);
    assert_eq!(report["runs"], 2);
    assert_eq!(report["input_tokens"], 4100);
    assert_eq!(report["cached_tokens"], 2400);
    assert_eq!(report["output_tokens"], 40);
    assert_eq!(report["iterations"], 4);
    assert_eq!(report["tool_calls"], 2);

    let mut text_usage = sb.odek(&server.base_url());
    text_usage.args(["usage"]);
    let out = output(text_usage).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Usage over all saved sessions: 2 run(s) in 2 session(s)")
            && stdout.contains("4100 in (2400 cached, 58.5%) · 40 out"),
        "{stdout}"
    );
}

/// The hint messages (system messages starting with ⚠️) of a request, oldest first.
fn hints_of(request: &Value) -> Vec<String> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("⚠️"))
        .map(str::to_string)
        .collect()
}

/// The newest hint message of a request.
fn hint_of(request: &Value) -> Option<String> {
    hints_of(request).pop()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_and_error_hints_end_with_the_plan_position() {
    let read_missing = || tools(&[("read_file", json!({"path": "missing.txt"}))]);
    let server = ScriptedServer::start(vec![
        create(&["find <img src=x> the config", "fix it", "test it"]),
        set_status("s1", "in_progress"),
        echo("same"),
        echo("same"),
        echo("same"),
        read_missing(),
        read_missing(),
        read_missing(),
        text("gave up"),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "fix the config"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let stall = hint_of(&requests[5]).expect("stall hint after the third identical call");
    assert!(stall.starts_with("⚠️ You called \"shell\" with identical arguments 3 times"));
    assert!(
        stall.ends_with("\nplan: in_progress=s1, next_pending=s2"),
        "{stall}"
    );
    assert!(!stall.contains("<img"), "titles never reach the hint");
    assert_eq!(hints_of(&requests[7]).len(), 1);
    let error = hint_of(&requests[8]).expect("error hint after the third failure");
    assert!(error.contains("cannot find the path"), "{error}");
    assert!(
        error.ends_with("\nplan: in_progress=s1, next_pending=s2"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hints_without_a_plan_have_no_plan_line() {
    let server =
        ScriptedServer::start(vec![echo("same"), echo("same"), echo("same"), text("ok")]).await;
    let sb = Sandbox::new();
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "repeat"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let hint = hint_of(&server.requests()[3]).expect("stall hint");
    assert!(!hint.contains("plan:"), "{hint}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_blocked_transitions_fire_one_streak_event_and_hint() {
    let server = ScriptedServer::start(vec![
        create(&["a", "b", "c", "d"]),
        set_status("s1", "blocked"),
        set_status("s2", "blocked"),
        set_status("s3", "blocked"),
        set_status("s4", "blocked"),
        text("all blocked"),
    ])
    .await;
    let sb = Sandbox::new();
    let (out, ev) = run_with_events(&sb, &server, &["do a b c d"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let plan_events: Vec<(String, Value)> = ev
        .iter()
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("plan_")))
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["data"].clone(),
            )
        })
        .collect();
    let kinds: Vec<(&str, u64)> = plan_events
        .iter()
        .map(|(k, d)| (k.as_str(), d["version"].as_u64().unwrap_or(0)))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("plan_created", 1),
            ("plan_updated", 2),
            ("plan_updated", 3),
            ("plan_updated", 4),
            ("plan_blocked", 4),
            ("plan_updated", 5),
        ],
        "one streak, right after the update that completed it; the fourth starts a new one"
    );
    assert_eq!(
        plan_events[4].1,
        json!({"steps": 4, "blocked": 3, "version": 4})
    );

    let requests = server.requests();
    let hint = hint_of(&requests[4]).expect("streak hint");
    assert!(hint.contains("decompose the blocked step"), "{hint}");
    assert!(
        hint.ends_with("\nplan: in_progress=none, next_pending=s4"),
        "{hint}"
    );
    assert_eq!(hints_of(&requests[5]).len(), 1, "one hint per streak");

    let session = only_session(&sb);
    let run = &session["runs"][0];
    assert_eq!(run["plans_created"], 1);
    assert_eq!(run["plans_updated"], 4);
    assert_eq!(run["plans_blocked"], 4);
    assert_eq!(run["steps_total"], 4);
    assert_eq!(run["steps_done"], 0);
}

/// The untrusted block of the remaining steps in `text`, unwrapped.
fn remaining_lines(text: &str) -> String {
    let start = text.find("<untrusted_content_").expect("wrapper");
    let block = &text[start..];
    assert!(block.contains("source=\"plan_remaining\""), "{block}");
    unwrap_untrusted(block.trim_end())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_iteration_cap_summary_lists_the_remaining_steps() {
    let server = ScriptedServer::start(vec![
        create(&["gather", "write", "review"]),
        set_status("s1", "in_progress"),
        echo("working"),
        text("Gathered half of the data."),
    ])
    .await;
    let sb = Sandbox::new();
    let (out, ev) = run_with_events(&sb, &server, &["--max-iter", "3", "write the report"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "[Iteration budget reached — partial summary]\n\nGathered half of the data.\n\nRemaining plan steps (v2: 3 of 3 not done — 1 in progress, 2 pending, 0 blocked):\n<untrusted_content_"
        ),
        "{stdout}"
    );
    assert_eq!(
        remaining_lines(&stdout),
        "s1 [in_progress] gather\ns2 [pending] write\ns3 [pending] review"
    );
    assert_eq!(
        terminal(&ev, "run_completed")["remaining"],
        json!({"steps": 3, "pending": 2, "in_progress": 1, "blocked": 0})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_budget_gets_a_closing_summary_with_the_remaining_steps() {
    let server = ScriptedServer::start(vec![
        create(&["gather", "write"]),
        tools(&[("plan", json!({"verb": "complete", "step_id": "s1"}))]),
        echo("over the budget"),
        text("Gathered everything; the report is not written yet."),
    ])
    .await;
    let sb = Sandbox::new();
    let args = ["--max-tool-calls", "2", "write the report"];
    let (out, ev) = run_with_events(&sb, &server, &args).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "[Execution budget reached — partial summary]\n\nGathered everything; the report is not written yet.\n\nRemaining plan steps (v2: 1 of 2 not done — 0 in progress, 1 pending, 0 blocked):\n"
        ),
        "{stdout}"
    );
    assert_eq!(remaining_lines(&stdout), "s2 [pending] write");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("execution budget exceeded: tool_calls observed 3 (limit 2)"),
        "{stderr}"
    );
    let summary_request = &server.requests()[3];
    assert!(
        summary_request.get("tools").is_none(),
        "a tool-less side call"
    );

    let failed = terminal(&ev, "run_failed");
    assert_eq!(failed["error_class"], "execution_budget");
    assert_eq!(
        failed["remaining"],
        json!({"steps": 2, "pending": 1, "in_progress": 0, "blocked": 0})
    );
    // The summary is saved as the session's last message, so `continue` starts from it.
    let session = only_session(&sb);
    let saved = session["messages"].as_array().expect("messages");
    let last = saved.last().expect("last");
    assert_eq!(last["role"], "assistant");
    assert!(
        last["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("[Execution budget reached — partial summary]")),
        "{last}"
    );
    assert_eq!(session["runs"][0]["steps_done"], 1);
    assert_eq!(session["runs"][0]["steps_total"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_usage_rolls_up_plan_telemetry_of_the_runs_made() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start(planned_run()).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "planned"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // Plan bytes as the server received them: the plan message of every request.
    let plan_bytes: u64 = server
        .requests()
        .iter()
        .flat_map(messages)
        .filter(is_plan)
        .map(|m| m["content"].as_str().map_or(0, str::len) as u64)
        .sum();
    assert!(plan_bytes > 0);

    server.push(vec![echo("x"), text("unplanned")]);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--no-planning", "unplanned"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let mut usage = sb.odek(&server.base_url());
    usage.args(["usage", "--json"]);
    let out = output(usage).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["since_days"], Value::Null);
    assert_eq!(report["runs"], 2);
    assert_eq!(report["sessions"], 2);
    assert_eq!(report["iterations"], 8);
    assert_eq!(report["tool_calls"], 6);
    assert_eq!(report["input_tokens"], 800, "100 per request");
    assert_eq!(report["plans_created"], 1);
    assert_eq!(report["plans_updated"], 2);
    assert_eq!(report["plans_blocked"], 0);
    assert_eq!(report["runs_with_plan"], 1);
    assert_eq!(report["steps_done"], 1);
    assert_eq!(report["steps_total"], 3);
    assert_eq!(report["plan_bytes"], plan_bytes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odek_usage_counts_sessions_saved_before_run_records() {
    let sb = Sandbox::new();
    let dir = sb.home.join("sessions");
    std::fs::create_dir_all(&dir).expect("dir");
    let id = "20261130-00000000000000000000000000000abc";
    let now = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.000Z"])
        .output()
        .expect("date");
    let now = String::from_utf8_lossy(&now.stdout).trim().to_string();
    let old = json!({"id": id, "created_at": now, "updated_at": now, "model": "m", "turns": 1,
        "task": "old", "messages": [{"role": "user", "content": "old"}],
        "input_tokens": 700, "output_tokens": 70});
    std::fs::write(dir.join(format!("{id}.json")), old.to_string()).expect("write");
    let broken = "20261130-00000000000000000000000000000def";
    std::fs::write(dir.join(format!("{broken}.json")), "{not json").expect("write");
    let mut usage = sb.odek("http://127.0.0.1:9/v1");
    usage.args(["usage", "--json"]);
    let out = output(usage).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: warning: skipped") && stderr.contains(broken),
        "the unreadable file is named: {stderr}"
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["unreadable_sessions"], 1);
    assert_eq!(report["sessions"], 1);
    assert_eq!(report["runs"], 0, "its runs are unknown");
    assert_eq!(report["input_tokens"], 700);
    assert_eq!(report["output_tokens"], 70);

    let mut bad = sb.odek("http://127.0.0.1:9/v1");
    bad.args(["usage", "--since", "0"]);
    let out = output(bad).await;
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_report_the_iteration_cap_still_lists_the_remaining_steps() {
    let server = ScriptedServer::start(vec![
        create(&["gather", "write"]),
        echo("working"),
        Reply::Status(
            400,
            vec![],
            r#"{"error":{"message":"no summaries today"}}"#.into(),
        ),
    ])
    .await;
    let sb = Sandbox::new();
    let (out, ev) = run_with_events(&sb, &server, &["--max-iter", "2", "write it"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "[Iteration budget reached — partial summary]\n\n(No report: the model could not be asked for a summary.)\n\nRemaining plan steps (v1: 2 of 2 not done — 0 in progress, 2 pending, 0 blocked):\n"
        ),
        "{stdout}"
    );
    assert_eq!(
        remaining_lines(&stdout),
        "s1 [pending] gather\ns2 [pending] write"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reached max iterations (2) without final answer"),
        "{stderr}"
    );
    assert_eq!(
        terminal(&ev, "run_failed")["remaining"],
        json!({"steps": 2, "pending": 2, "in_progress": 0, "blocked": 0})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_budget_gets_the_time_summary_with_the_remaining_steps() {
    let server = ScriptedServer::start(vec![
        create(&["wait", "report"]),
        tools(&[("shell", json!({"command": "sleep 20"}))]),
        text("Waited; nothing else happened."),
    ])
    .await;
    let sb = Sandbox::new();
    let (out, ev) = run_with_events(&sb, &server, &["--max-runtime", "2", "wait"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "[Time budget reached — partial summary]\n\nWaited; nothing else happened.\n\nRemaining plan steps (v1: 2 of 2 not done"
        ),
        "{stdout}"
    );
    let failed = terminal(&ev, "run_failed");
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("execution budget exceeded: runtime")),
        "{failed}"
    );
    assert_eq!(failed["remaining"]["steps"], 2);
}
