//! Providers through the real binary: Anthropic's Messages wire against a scripted server
//! (a tool round with thinking sent back verbatim, usage, `continue`, the fault matrix),
//! and the `provider` settings (sources, a project that may not set them, unknown ids).

use serde_json::{Value, json};

use crate::support::anthropic::{THINKING_KEY, last_user_text, with_thinking};
use crate::support::*;

const KEY: &str = "sk-ant-api03-test-key-0123456789abcdefABCDEF";
/// A signature that holds something shaped like a key: it must reach the server as it came.
const SIGNATURE: &str = "EqQBCkgIARABGAIiQLsk-ant-api03-AAAAbbbbCCCCddddEEEEffff0123456789/+==";

fn thinking(text: &str) -> Value {
    json!([{"type": "thinking", "thinking": text, "signature": SIGNATURE},
           {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}])
}

fn anthropic_run(sb: &Sandbox, server: &ScriptedServer, args: &[&str]) -> std::process::Command {
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ANTHROPIC_API_KEY", KEY)
        .env("ODEK_MODEL", "claude-test")
        .args(args);
    cmd
}

fn sessions(sb: &Sandbox) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(sb.home.join("sessions")).expect("sessions") {
        let path = entry.expect("entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        if path.extension().is_some_and(|e| e == "json") && stem.len() == 41 {
            out.push(serde_json::from_str(&read(&path)).expect("session json"));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_round_over_anthropic_sends_thinking_back_verbatim_and_continue_keeps_the_wire() {
    for stream in [true, false] {
        let server = ScriptedServer::start_anthropic(vec![
            with_thinking(
                tools_with_text("Listing.", &[("read_file", json!({"path": "notes.txt"}))]),
                thinking("The user wants the notes; I read them."),
            ),
            with_thinking(text("The notes say hello."), thinking("Done.")),
            text("Still here."),
        ])
        .await;
        let sb = Sandbox::new();
        std::fs::write(sb.work.join("notes.txt"), "hello").expect("notes");
        let flag = if stream { "--stream" } else { "--no-stream" };
        let out = output(anthropic_run(
            &sb,
            &server,
            &[
                "run",
                "--provider",
                "anthropic",
                "--thinking",
                "low",
                flag,
                "read my notes",
            ],
        ))
        .await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "stream {stream}: {}",
            show(&out)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("The notes say hello."));
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2, "{}", show(&out));
        assert_eq!(server.auth_headers()[0].as_deref(), Some(KEY));
        let first = &reqs[0];
        assert_eq!(first["model"], "claude-test");
        assert_eq!(
            first["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(first["stream"], stream);
        assert!(
            first["system"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
        assert!(
            first["tools"]
                .as_array()
                .is_some_and(|t| t.iter().all(|t| t["input_schema"].is_object()))
        );
        let breakpoints = first.to_string().matches("cache_control").count();
        assert!((1..=4).contains(&breakpoints), "{breakpoints} breakpoints");
        // The second request: the assistant turn starts with the thinking blocks as they came.
        let turns = reqs[1]["messages"].as_array().expect("turns");
        let assistant = turns
            .iter()
            .find(|t| t["role"] == "assistant")
            .expect("assistant turn");
        assert_eq!(
            assistant["content"][0],
            thinking("The user wants the notes; I read them.")[0]
        );
        assert_eq!(assistant["content"][1], thinking("")[1]);
        assert_eq!(
            assistant["content"][2],
            json!({"type": "text", "text": "Listing."})
        );
        assert_eq!(assistant["content"][3]["type"], "tool_use");
        let call_id = assistant["content"][3]["id"].clone();
        let results = &turns[turns.len() - 1]["content"];
        assert_eq!(results[0]["type"], "tool_result");
        assert_eq!(results[0]["tool_use_id"], call_id);
        assert!(
            results[0]["content"]
                .as_str()
                .is_some_and(|c| c.contains("hello"))
        );
        assert!(reqs[1].to_string().matches("cache_control").count() <= 4);

        // The session: provider kept, the opaque blocks kept verbatim, no key anywhere.
        let saved = sessions(&sb);
        assert_eq!(saved.len(), 1);
        let session = &saved[0];
        assert_eq!(session["provider"], "anthropic");
        let text = session.to_string();
        assert!(text.contains(SIGNATURE), "the signature survives redaction");
        assert!(!text.contains(KEY), "the key is never saved");
        assert_eq!(session["input_tokens"], 200);
        assert!(!text.contains(THINKING_KEY));

        // `continue` speaks the same wire and sends the last thinking back.
        let out = output(anthropic_run(&sb, &server, &["continue", "and now?"])).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let reqs = server.requests();
        assert_eq!(reqs.len(), 3);
        assert!(last_user_text(&reqs[2]).contains("and now?"));
        assert!(reqs[2].to_string().contains(SIGNATURE));
        assert!(reqs[2].to_string().contains("Done."));
        if stream {
            continue_on_another_provider(&sb).await;
        }
    }
}

/// `continue --provider` moves the session, with a note: the thinking the old provider kept
/// for itself stays behind, the conversation goes on, the next `continue` stays on the new one.
async fn continue_on_another_provider(sb: &Sandbox) {
    let chat = ScriptedServer::start(vec![text("On chat now."), text("Still chat.")]).await;
    let base_url = chat.base_url();
    let moving = ["continue", "--provider", "local", "--base-url", &base_url];
    let mut cmd = sb.odek(&base_url);
    cmd.args(moving).args(["--model", "small", "go on"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "odek: note: this session moves from anthropic (claude-test) to local (small); what the previous provider kept for itself in 2 message(s)"
        ),
        "{stderr}"
    );
    let first = chat.requests()[0].to_string();
    assert!(first.contains("The notes say hello.") && first.contains("go on"));
    assert!(!first.contains(SIGNATURE) && !first.contains("redacted_thinking"));
    let saved = sessions(sb);
    assert_eq!(saved[0]["provider"], "local");
    assert_eq!(saved[0]["model"], "small");
    assert!(!saved[0].to_string().contains("provider_state"));
    let mut cmd = sb.odek(&base_url);
    cmd.args(["continue", "and still?"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("note:"));
    assert_eq!(chat.requests()[1]["model"], "small");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fault_matrix_holds_on_the_anthropic_wire() {
    let overloaded = Reply::Status(
        529,
        vec![("retry-after".into(), "0".into())],
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
    );
    let limited = Reply::Status(
        429,
        vec![("retry-after".into(), "1".into())],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#.into(),
    );
    let error_event = Reply::Status(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
    );
    let cut = Reply::Status(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half an ans\"}}\n\n".into(),
    );
    let malformed = Reply::Status(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        "event: message_start\ndata: {not json\n\n".into(),
    );
    let unknown_blocks = Reply::Status(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"mystery_block","x":1}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"mystery_delta","y":2}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"something_new"}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"All good."}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
            r#"{"type":"message_stop"}"#,
        ]
        .iter()
        .map(|e| format!("data: {e}\n\n"))
        .collect(),
    );
    let server = ScriptedServer::start_anthropic(vec![
        overloaded,
        limited,
        error_event,
        cut,
        malformed,
        unknown_blocks,
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = anthropic_run(&sb, &server, &["run", "--provider", "anthropic", "hi"]);
    cmd.env("ODEK_LLM_MAX_ATTEMPTS", "6")
        .env("ODEK_LLM_RETRY_INITIAL_DELAY_MS", "1");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("All good."),
        "{}",
        show(&out)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("half an ans"));
    assert_eq!(server.requests().len(), 6);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("529"), "{stderr}");

    // An invalid request is not retried, and says what the server said.
    let server = ScriptedServer::start_anthropic(vec![Reply::Status(
        400,
        vec![],
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}"#.into(),
    )])
    .await;
    let out = output(anthropic_run(
        &sb,
        &server,
        &["run", "--provider", "anthropic", "hi"],
    ))
    .await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("roles must alternate"),
        "{}",
        show(&out)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_is_too_long_starts_the_survival_trim_on_the_anthropic_wire() {
    let step = |i: u32| {
        tools(&[(
            "shell",
            json!({"command": format!("printf 'chunk {i} %.0s' $(seq 1 300)")}),
        )])
    };
    let server = ScriptedServer::start_anthropic(vec![
        step(0),
        step(1),
        step(2),
        step(3),
        Reply::Status(
            400,
            vec![],
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#.into(),
        ),
        text("Fits now."),
    ])
    .await;
    let sb = Sandbox::new();
    let out = output(anthropic_run(
        &sb,
        &server,
        &["run", "--provider", "anthropic", "grow"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Fits now."));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: the request was over the model's context window (Anthropic wording"),
        "{stderr}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    let size = |r: &Value| r["messages"].to_string().len();
    assert!(size(&reqs[5]) < size(&reqs[4]), "the retry is smaller");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_settings_have_sources_and_a_project_cannot_set_them() {
    let sb = Sandbox::new();
    sb.global_config(
        r#"{"providers": {"mine": {"format": "anthropic", "base_url": "https://gw.example/v1",
            "api_key": "${MY_GATEWAY_KEY}", "model": "claude-gw", "headers": {"x-team": "blue"}}}}"#,
    );
    sb.project_config(
        r#"{"provider": "mine", "providers": {"evil": {"base_url": "https://evil.example/v1"}}}"#,
    );
    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.env_remove("ODEK_BASE_URL")
        .env_remove("ODEK_MODEL")
        .env("MY_GATEWAY_KEY", "gw-secret-0123456789")
        .env("ODEK_PROVIDER", "mine")
        .args(["config"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let all = show(&out);
    assert!(
        all.contains("a project may not redirect inference"),
        "{all}"
    );
    assert!(all.contains("https://gw.example/v1"), "{all}");
    assert!(
        all.contains("provider mine"),
        "the endpoint's source: {all}"
    );
    assert!(all.contains("claude-gw"), "{all}");
    assert!(
        !all.contains("gw-secret-0123456789"),
        "the key is masked: {all}"
    );
    assert!(!all.contains("evil.example"), "{all}");

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.args(["run", "--provider", "nope", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        show(&out).contains("unknown provider \"nope\""),
        "{}",
        show(&out)
    );

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.env_remove("ODEK_BASE_URL")
        .args(["run", "--provider", "local", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(show(&out).contains("--base-url"), "{}", show(&out));

    let mut cmd = sb.odek("http://127.0.0.1:9/v1");
    cmd.env_remove("ODEK_BASE_URL")
        .args(["run", "--provider", "anthropic", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        show(&out).contains("no API key provided for https://api.anthropic.com/v1 (set ANTHROPIC_API_KEY or ODEK_API_KEY, or providers.anthropic.api_key in"),
        "{}",
        show(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_anthropic_sdk_reads_every_answer_the_scripted_server_sends() {
    let call = tools_with_text(
        "Looking.",
        &[("read_file", json!({"path": "naïve.txt", "n": [1, 2]}))],
    );
    let server = ScriptedServer::start_anthropic(vec![
        with_thinking(call.clone(), thinking("Read the file.")),
        with_thinking(call, thinking("Read the file.")),
        pieces(&["Hel", "lo ", "wörld"]),
        Reply::CutOff(json!({"role": "assistant", "content": "cut here"})),
        Reply::Status(
            200,
            vec![("content-type".into(), "text/event-stream".into())],
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
        ),
        Reply::Status(
            529,
            vec![],
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.into(),
        ),
    ])
    .await;
    let root = server.base_url().trim_end_matches("/v1").to_string();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/anthropic_reader.py");
    let mut cmd = std::process::Command::new(venv_python("the official SDKs are"));
    cmd.arg(script).arg(&root).arg("6");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 6, "{}", show(&out));
    // The tool round, streamed (0) and whole (1), parses the same.
    for line in &lines[..2] {
        let blocks = &line["blocks"];
        assert_eq!(blocks[0], thinking("Read the file.")[0], "{line}");
        assert_eq!(blocks[1], thinking("")[1], "{line}");
        assert_eq!(
            blocks[2],
            json!({"type": "text", "text": "Looking."}),
            "{line}"
        );
        assert_eq!(blocks[3]["type"], "tool_use");
        assert_eq!(
            blocks[3]["input"],
            json!({"path": "naïve.txt", "n": [1, 2]})
        );
        assert_eq!(line["stop_reason"], "tool_use");
        assert_eq!(line["usage"]["input_tokens"], 100);
        assert_eq!(line["usage"]["output_tokens"], 20);
    }
    assert_eq!(
        lines[2]["blocks"],
        json!([{"type": "text", "text": "Hello wörld"}])
    );
    assert_eq!(lines[2]["stop_reason"], "end_turn");
    assert_eq!(lines[3]["stop_reason"], "max_tokens");
    assert!(
        lines[4]["error"].is_string(),
        "an error event fails the stream: {}",
        lines[4]
    );
    assert!(
        lines[4]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Overloaded"))
    );
    assert_eq!(lines[5]["error"], "OverloadedError", "{}", lines[5]);
    assert_eq!(server.auth_headers()[0].as_deref(), Some("sk-ant-sdk-test"));
}

/// A child inherits the provider; what it spent — its cached tokens priced as cached — counts
/// against the parent's cost budget, which stops the parent before its next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_spending_counts_against_the_parents_cost_budget() {
    let child_usage = json!({"input_tokens": 100, "cache_read_input_tokens": 1000,
                             "cache_creation_input_tokens": 0, "output_tokens": 20});
    let server = ScriptedServer::start_anthropic(vec![
        tools(&[(
            "delegate_tasks",
            json!({"tasks": [{"goal": "count the notes"}]}),
        )]),
        with_usage(text("There is one note."), child_usage),
        text("Summary: one note counted."),
    ])
    .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"dangerous": {"classes": {"system_write": "allow"}}}"#);
    let events = sb.dir.path().join("events.jsonl");
    let mut cmd = anthropic_run(
        &sb,
        &server,
        &[
            "run",
            "--provider",
            "anthropic",
            "--max-cost-usd",
            "0.0014",
            "delegate it",
        ],
    );
    cmd.env("ODEK_MODEL", "claude-sonnet-4-5")
        .arg("--events-jsonl")
        .arg(&events);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        3,
        "parent, child, closing summary: {}",
        show(&out)
    );
    assert!(
        last_user_text(&reqs[1]).contains("count the notes"),
        "{}",
        reqs[1]
    );
    let exceeded = read(&events)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "budget_exceeded")
        .expect("budget_exceeded");
    // Parent $0.0006; child 100 fresh at $3, 1,000 cached at $0.30 and 20 out at $15 per
    // million: $0.0009.
    assert_eq!(exceeded["data"]["limit_name"], "cost_microusd");
    assert_eq!(exceeded["data"]["observed"], 1500, "{exceeded}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_budget_stops_the_run_at_the_call_that_passed_it() {
    let read = || tools(&[("read_file", json!({"path": "notes.txt"}))]);
    let server = ScriptedServer::start_anthropic(vec![read(), read(), read(), text("done")]).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.txt"), "hello").expect("notes");
    // 100 tokens in at $3 and 20 out at $15 per million: $0.0006 a call.
    let mut cmd = anthropic_run(
        &sb,
        &server,
        &[
            "run",
            "--provider",
            "anthropic",
            "--max-cost-usd",
            "0.001",
            "read it",
        ],
    );
    let events = sb.dir.path().join("events.jsonl");
    cmd.env("ODEK_MODEL", "claude-sonnet-4-5")
        .arg("--events-jsonl")
        .arg(&events);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(4), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("execution budget exceeded: cost $0.0012 (limit $0.0010)"),
        "{stderr}"
    );
    let loop_requests = server
        .requests()
        .iter()
        .filter(|r| r.get("tools").is_some())
        .count();
    assert_eq!(
        loop_requests, 2,
        "the second call passed the budget: {stderr}"
    );
    // The summary line counts the closing report's call too (a third $0.0006).
    assert!(
        stderr.contains("300 tokens in · 60 out · $0.0018"),
        "{stderr}"
    );
    let lines: Vec<Value> = crate::support::read(&events)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let exceeded = lines
        .iter()
        .find(|e| e["type"] == "budget_exceeded")
        .expect("budget_exceeded");
    assert_eq!(exceeded["data"]["limit_name"], "cost_microusd");
    assert_eq!(exceeded["data"]["observed"], 1200);
    assert_eq!(exceeded["data"]["limit"], 1000);
    let failed = lines
        .iter()
        .find(|e| e["type"] == "run_failed")
        .expect("run_failed");
    let cost = failed["data"]["cost_usd"].as_f64().unwrap_or(0.0);
    assert!((cost - 0.0018).abs() < 1e-9, "{failed}");
    let mut usage = sb.odek(&server.base_url());
    usage.args(["usage"]);
    let out = output(usage).await;
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("cost    $0.0018 over 1 run(s) with a known price"),
        "{}",
        show(&out)
    );

    // Without a price there is no budget to hold: said before anything runs.
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--max-cost-usd", "1", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        show(&out).contains("no price is known for the model \"test-model\""),
        "{}",
        show(&out)
    );

    // A price from the global file, on the Chat Completions wire.
    let server = ScriptedServer::start(vec![text("hi")]).await;
    sb.global_config(r#"{"pricing": {"test-": {"input": 10, "cached_input": 1, "output": 100}}}"#);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "hi"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    // 100 × $10 + 20 × $100 per million.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(" · $0.0030"),
        "{}",
        show(&out)
    );
}

fn reasoning(summary: &str) -> Value {
    json!([{"type": "reasoning", "id": "rs_scripted", "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": "gAAAAABpRkEy-encrypted+/reasoning=="}])
}

fn responses_run(sb: &Sandbox, server: &ScriptedServer, args: &[&str]) -> std::process::Command {
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-openai-0123456789abcdef")
        .env("ODEK_MODEL", "gpt-5-mini")
        .args(args);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_round_over_responses_sends_reasoning_items_back_as_received() {
    use crate::support::responses::with_reasoning;
    for stream in [true, false] {
        let server = ScriptedServer::start_responses(vec![
            with_reasoning(
                tools(&[("read_file", json!({"path": "notes.txt"}))]),
                reasoning("Read the notes first."),
            ),
            text("The notes say hello."),
            Reply::Status(
                429,
                vec![("retry-after".into(), "0".into())],
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
            ),
            text("Again."),
        ])
        .await;
        let sb = Sandbox::new();
        std::fs::write(sb.work.join("notes.txt"), "hello").expect("notes");
        let flag = if stream { "--stream" } else { "--no-stream" };
        let out = output(responses_run(
            &sb,
            &server,
            &[
                "run",
                "--provider",
                "openai",
                "--thinking",
                "high",
                flag,
                "read my notes",
            ],
        ))
        .await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "stream {stream}: {}",
            show(&out)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("The notes say hello."));
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(
            server.auth_headers()[0].as_deref(),
            Some("Bearer sk-openai-0123456789abcdef")
        );
        assert_eq!(reqs[0]["store"], false);
        assert_eq!(reqs[0]["reasoning"]["effort"], "high");
        assert_eq!(reqs[0]["include"], json!(["reasoning.encrypted_content"]));
        let input = reqs[1]["input"].as_array().expect("items");
        let at = input
            .iter()
            .position(|i| i["type"] == "reasoning")
            .expect("the reasoning item goes back");
        assert_eq!(input[at], reasoning("Read the notes first.")[0]);
        assert_eq!(input[at + 1]["type"], "function_call");
        assert_eq!(input[at + 2]["type"], "function_call_output");
        assert_eq!(input[at + 1]["call_id"], input[at + 2]["call_id"]);
        let saved = sessions(&sb);
        assert_eq!(saved[0]["provider"], "openai");
        assert!(
            saved[0]
                .to_string()
                .contains("gAAAAABpRkEy-encrypted+/reasoning==")
        );
        // `continue` speaks Responses again, and a 429 is retried there too.
        let mut cmd = responses_run(&sb, &server, &["continue", "again"]);
        cmd.env("ODEK_LLM_RETRY_INITIAL_DELAY_MS", "1");
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("Again."));
        assert_eq!(server.requests().len(), 4);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_openai_sdk_reads_every_answer_the_scripted_server_sends() {
    use crate::support::responses::with_reasoning;
    let call = with_reasoning(
        tools_with_text("Looking.", &[("read_file", json!({"path": "naïve.txt"}))]),
        reasoning("Check it."),
    );
    let server = ScriptedServer::start_responses(vec![
        call.clone(),
        call,
        pieces(&["Hel", "lo ", "wörld"]),
        Reply::CutOff(json!({"role": "assistant", "content": "cut here"})),
        Reply::Status(
            500,
            vec![],
            r#"{"error":{"message":"boom","type":"server_error","code":"server_error"}}"#.into(),
        ),
    ])
    .await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/openai_reader.py");
    let mut cmd = std::process::Command::new(venv_python("the official SDKs are"));
    cmd.arg(script).arg(server.base_url()).arg("5");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 5, "{}", show(&out));
    for line in &lines[..2] {
        let output = &line["output"];
        assert_eq!(output[0]["type"], "reasoning", "{line}");
        assert_eq!(
            output[0]["encrypted_content"],
            "gAAAAABpRkEy-encrypted+/reasoning=="
        );
        assert_eq!(output[0]["summary"][0]["text"], "Check it.");
        assert_eq!(output[1]["content"][0]["text"], "Looking.");
        assert_eq!(output[2]["type"], "function_call");
        assert_eq!(output[2]["arguments"], r#"{"path":"naïve.txt"}"#);
        assert_eq!(line["status"], "completed");
        assert_eq!(line["usage"]["input_tokens"], 100);
    }
    assert!(
        lines[0]["events"].as_array().is_some_and(|e| e
            .iter()
            .any(|k| k == "response.reasoning_summary_text.delta")),
        "{}",
        lines[0]
    );
    assert_eq!(lines[2]["output_text"], "Hello wörld");
    assert_eq!(lines[3]["status"], "incomplete");
    assert_eq!(lines[4]["error"], "InternalServerError", "{}", lines[4]);
}

/// With `web_search` and the browser on (the most a plain run offers), the first request
/// stays within its budget on each of the three wires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_runs_first_request_stays_under_15_kb_on_every_wire() {
    let mut sizes = Vec::new();
    for wire in ["anthropic", "openai", "chat"] {
        let sb = Sandbox::new();
        sb.global_config(r#"{"web_search": {"base_url": "http://127.0.0.1:9"}}"#);
        let server = match wire {
            "anthropic" => ScriptedServer::start_anthropic(vec![text("done")]).await,
            "openai" => ScriptedServer::start_responses(vec![text("done")]).await,
            _ => ScriptedServer::start(vec![text("done")]).await,
        };
        let mut cmd = if wire == "chat" {
            let mut cmd = sb.odek(&server.base_url());
            cmd.args(["run", "--ephemeral", "x"]);
            cmd
        } else {
            anthropic_run(
                &sb,
                &server,
                &["run", "--ephemeral", "--provider", wire, "x"],
            )
        };
        cmd.env("OPENAI_API_KEY", "sk-openai-0123456789abcdef")
            .env("ODEK_BROWSER", "true");
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{wire}: {}", show(&out));
        let first = &server.requests()[0];
        let tools = first["tools"].as_array().cloned().unwrap_or_default();
        assert_eq!(tools.len(), 17, "{wire}");
        let browser = tools
            .iter()
            .find(|t| t.to_string().contains("\"browser\""))
            .map(Value::to_string)
            .unwrap_or_default();
        assert!(
            !browser.is_empty() && browser.len() < 850,
            "{wire}: the browser's entry is {} bytes",
            browser.len()
        );
        let tools_bytes = first["tools"].to_string().len();
        assert!(
            tools_bytes <= 12_000,
            "{wire}: the tools take {tools_bytes} bytes"
        );
        let bytes = first.to_string().len();
        sizes.push((wire, bytes, tools_bytes, browser.len()));
        assert!(
            bytes <= 15_000,
            "{wire}: the first request is {bytes} bytes"
        );
    }
    eprintln!("first request sizes (wire, bytes, tools, the browser's entry): {sizes:?}");
}

/// A request as Anthropic caches it: tools, then system, then the turns, without the
/// breakpoint markers (they mark places; they are not part of the prompt).
fn cached_order(request: &Value) -> String {
    let strip = |v: &Value| {
        let mut v = v.clone();
        strip_cache_control(&mut v);
        v.to_string()
    };
    let mut out = strip(&request["tools"]);
    out.push_str(&strip(&request["system"]));
    for turn in request["messages"].as_array().into_iter().flatten() {
        // A turn's closing bracket is not part of what the next request repeats.
        let text = strip(turn);
        out.push_str(&text[..text.len() - 2]);
    }
    out
}

fn strip_cache_control(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("cache_control");
            map.values_mut().for_each(strip_cache_control);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_30_call_run_with_plan_changes_reuses_its_cached_prefix_on_anthropic() {
    let steps = [
        ("s1", "look"),
        ("s2", "read"),
        ("s3", "check"),
        ("s4", "fix"),
        ("s5", "report"),
    ];
    let mut script = vec![plan_create(&steps)];
    let mut done = 0;
    for i in 1..30 {
        if i % 3 == 0 && done < steps.len() {
            script.push(plan_complete(steps[done].0));
            done += 1;
        } else {
            script.push(tools(&[("read_file", json!({"path": "notes.txt"}))]));
        }
    }
    script.push(text("done"));
    let server = ScriptedServer::start_anthropic(script).await;
    let sb = Sandbox::new();
    std::fs::write(sb.work.join("notes.txt"), "a short note\n".repeat(20)).expect("notes");
    let mut cmd = anthropic_run(
        &sb,
        &server,
        &["run", "--provider", "anthropic", "--max-iter", "40", "work"],
    );
    cmd.env("ODEK_MEMORY", "false");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 31, "{}", show(&out));
    let (mut reused, mut total) = (0usize, 0usize);
    for pair in reqs.windows(2) {
        let points = pair[1].to_string().matches("cache_control").count();
        assert!(points <= 4, "{points} breakpoints");
        let (before, now) = (cached_order(&pair[0]), cached_order(&pair[1]));
        let common = before
            .bytes()
            .zip(now.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        reused += common;
        total += now.len();
    }
    let share = 100.0 * reused as f64 / total as f64;
    eprintln!("anthropic prefix reuse over 30 calls: {share:.1} %");
    assert!(share >= 93.0, "prefix reuse {share:.1} %");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_after_message_start_and_retried_is_counted_in_the_usage() {
    // The first attempt is billed its input (1000 tokens) and cut before its answer.
    let cut = Reply::Status(
        200,
        vec![("content-type".into(), "text/event-stream".into())],
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".into(),
    );
    let server = ScriptedServer::start_anthropic(vec![
        cut,
        with_usage(
            text("All good."),
            json!({"prompt_tokens": 1000, "completion_tokens": 5}),
        ),
    ])
    .await;
    let sb = Sandbox::new();
    let mut cmd = anthropic_run(&sb, &server, &["run", "--provider", "anthropic", "hi"]);
    cmd.env("ODEK_LLM_RETRY_INITIAL_DELAY_MS", "1");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(server.requests().len(), 2);
    let mut usage = sb.odek(&server.base_url());
    usage.args(["usage", "--json"]);
    let out = output(usage).await;
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["input_tokens"], 2000, "both attempts: {report}");
    assert_eq!(report["output_tokens"], 6, "{report}");
}
