//! A request over the context window, through the binary, in the words of the servers people
//! run: recognised, trimmed and finished; a first request too big has its attachments
//! shortened (never the task); an overflow no trim can cure ends with one clear error.

use crate::support::*;
use serde_json::{Value, json};
use wiremock::{Mock, ResponseTemplate, matchers};

/// Each server's overflow answer, in its documented shape (fixtures written for these tests).
const WORDINGS: &[(&str, u16, &str)] = &[
    (
        "llama.cpp",
        400,
        r#"{"error":{"code":400,"message":"request (25595 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":25595,"n_ctx":8192}}"#,
    ),
    (
        "LiteLLM",
        400,
        r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - request (25595 tokens) exceeds the available context size (8192 tokens), try increasing it\nmodel=local. context_window_fallbacks=None. fallbacks=None.","type":null,"param":null,"code":"400"}}"#,
    ),
    (
        "OpenAI-style (OpenAI, vLLM, DeepSeek)",
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    ),
    // vLLM
    (
        "OpenAI-style (OpenAI, vLLM, DeepSeek)",
        400,
        r#"{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9120 tokens (8096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
    ),
    // DeepSeek
    (
        "OpenAI-style (OpenAI, vLLM, DeepSeek)",
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9120 tokens (9120 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
    ),
    (
        "Ollama",
        500,
        r#"{"error":"the input length exceeds the context length"}"#,
    ),
    (
        "Mistral",
        400,
        r#"{"object":"error","message":"Prompt contains 9000 tokens and 0 draft tokens, too large for model with 8192 maximum context length","type":"invalid_request_message_error","param":null,"code":null}"#,
    ),
    (
        "OpenRouter",
        400,
        r#"{"error":{"message":"This endpoint's maximum context length is 8192 tokens. However, you requested about 9500 tokens (9000 of text input, 500 in the output). Please reduce the length of either one.","code":400}}"#,
    ),
];

fn overflow(status: u16, body: &str) -> Reply {
    Reply::Status(status, vec![], body.into())
}

fn step(i: u32) -> Reply {
    tools(&[(
        "shell",
        json!({"command": format!("printf 'chunk {i} %.0s' $(seq 1 300)")}),
    )])
}

fn attachment_of(request: &Value) -> String {
    messages(request)
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("[Injected context: files attached"))
        .unwrap_or_default()
        .to_string()
}

/// A log of `lines` numbered lines (22 bytes each).
fn log_file(sb: &Sandbox, name: &str, lines: usize) {
    let text: String = (0..lines)
        .map(|i| format!("{i:06} event happened\n"))
        .collect();
    std::fs::write(sb.work.join(name), text).expect("write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_servers_wording_is_trimmed_and_the_run_finishes() {
    for (server_name, status, body) in WORDINGS {
        let script = vec![step(0), step(1), step(2), step(3), overflow(*status, body)];
        let server = ScriptedServer::start(script).await;
        server.push(vec![text("finished")]);
        let sb = Sandbox::new();
        let events = sb.dir.path().join("events.jsonl");
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(["run", "--events-jsonl"]).arg(&events).arg("grow");
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{server_name}: {}", show(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "finished\n");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said =
            format!("odek: the request was over the model's context window ({server_name} wording");
        assert!(stderr.contains(&said), "{server_name}: {stderr}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 6, "{server_name}: one retry, no server retries");
        assert!(messages(&reqs[5]).len() < messages(&reqs[4]).len());
        let trimmed = events_of(&read(&events), "context_trimmed");
        let reason = trimmed[0]["data"]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(server_name),
            "{server_name}: {trimmed:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_request_too_big_is_sent_again_with_its_attachment_shortened() {
    let task = "Summarise big.log: which events repeat, and when did they start?";
    let server = ScriptedServer::start(vec![
        overflow(
            400,
            r#"{"error":{"code":400,"message":"request (15990 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":15990,"n_ctx":8192}}"#,
        ),
        text("done"),
    ])
    .await;
    let sb = Sandbox::new();
    log_file(&sb, "big.log", 2_500);
    let events = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ctx", "big.log", "--events-jsonl"])
        .arg(&events)
        .arg(task);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let (before, after) = (attachment_of(&reqs[0]), attachment_of(&reqs[1]));
    assert!(before.len() > 55_000, "the whole file first");
    assert!(
        after.len() < before.len() / 2,
        "{} → {}",
        before.len(),
        after.len()
    );
    assert!(
        after.contains("000000 event happened\n")
            && after.contains(
                "[odek shortened the attachment above to fit the model's context window: the first "
            )
            && after.contains(" of its 55000 bytes are kept"),
        "the beginning, and a marker the model reads: {after}"
    );
    let sent = messages(&reqs[1]);
    assert_eq!(sent.last().unwrap()["content"], task, "the task, untouched");
    let trimmed = events_of(&read(&events), "context_trimmed");
    assert_eq!(trimmed[0]["data"]["mode"], "survival");
    assert_eq!(trimmed[0]["data"]["shortened_attachments"], 1);
}

/// The run failed with one stderr line that names the server's words (`wording`) and
/// `context_window`, and one terminal event, which is returned.
fn ended_with_one_overflow_error(
    out: &std::process::Output,
    events: &std::path::Path,
    wording: &str,
) -> Value {
    assert_eq!(out.status.code(), Some(1), "{}", show(out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("odek: iteration"))
        .collect();
    assert_eq!(error.len(), 1, "one line says it: {stderr}");
    let expected = format!(
        "odek: iteration 1: the request does not fit the model's context window and no more can be trimmed {wording}"
    );
    assert!(
        error[0].starts_with(&expected)
            && error[0].contains("set context_window (config.json or ODEK_CONTEXT_WINDOW)"),
        "{stderr}"
    );
    let failed = events_of(&read(events), "run_failed");
    assert_eq!(failed.len(), 1, "a terminal event");
    failed[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_too_long_for_the_context_ends_with_one_clear_error() {
    let server = ScriptedServer::start(vec![overflow(
        400,
        r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - the request exceeds the available context size, try increasing it","type":null,"param":null,"code":"400"}}"#,
    )])
    .await;
    let sb = Sandbox::new();
    let events = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--events-jsonl"])
        .arg(&events)
        .arg("please read this very long task ".repeat(500));
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(
        server.requests().len(),
        1,
        "nothing could be trimmed: no retry"
    );
    let failed = ended_with_one_overflow_error(
        &out,
        &events,
        "(LiteLLM wording \"contextwindowexceedederror\")",
    );
    assert_eq!(failed["data"]["error_class"], "provider_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_that_trimming_cannot_cure_stops_after_three_trims() {
    let ollama = r#"{"error":{"message":"the input length exceeds the context length","type":"invalid_request_error","param":null,"code":null}}"#;
    let server = ScriptedServer::start((0..6).map(|_| overflow(400, ollama)).collect()).await;
    let sb = Sandbox::new();
    log_file(&sb, "big.log", 1_000);
    let events = sb.dir.path().join("events.jsonl");
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "--ctx", "big.log", "--events-jsonl"])
        .arg(&events)
        .arg("summarise big.log");
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        4,
        "the first try and three trims, then the error"
    );
    let sizes: Vec<usize> = reqs.iter().map(|r| attachment_of(r).len()).collect();
    assert!(
        sizes.windows(2).all(|w| w[1] < w[0]),
        "halved each time: {sizes:?}"
    );
    ended_with_one_overflow_error(&out, &events, "(Ollama wording");
    assert_eq!(events_of(&read(&events), "context_trimmed").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llama_server_is_sized_by_the_context_it_serves_and_v_says_where_from() {
    let server = ScriptedServer::start(vec![text("fits")]).await;
    let listing = json!({"object":"list","data":[{"id":"qwen.gguf","object":"model",
        "owned_by":"llamacpp","meta":{"vocab_type":2,"n_ctx_train":32768}}]});
    Mock::given(matchers::method("GET"))
        .and(matchers::path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(listing))
        .mount(server.mock())
        .await;
    Mock::given(matchers::method("GET"))
        .and(matchers::path("/props"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(
                json!({"default_generation_settings":{"n_ctx":4096},"total_slots":1}),
            ),
        )
        .mount(server.mock())
        .await;
    let sb = Sandbox::new();
    log_file(&sb, "big.log", 1_500);
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", "-v", "--ctx", "big.log", "summarise big.log"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("odek: context window 4096 tokens (n_ctx on http://127.0.0.1:")
            && stderr.contains("/props: the context llama-server was started with)"),
        "{stderr}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "sized before sending: no overflow");
    let sent = attachment_of(&reqs[0]);
    assert!(
        sent.contains("[odek shortened the attachment above") && sent.len() < 12_000,
        "{} bytes",
        sent.len()
    );
}
