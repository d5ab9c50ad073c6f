//! HTTP tests of the client against a real local server (wiremock, or a raw socket where a
//! stream must stall mid-body).

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use super::*;
use crate::llm::{ToolCall, ToolDef};

const COMPLETIONS: &str = "/v1/chat/completions";

fn config(base_url: &str) -> HttpModelConfig {
    HttpModelConfig {
        backoff_base: Duration::from_millis(1),
        ..HttpModelConfig::new(base_url, "test-model")
    }
}

fn model(config: HttpModelConfig) -> HttpModel {
    HttpModel::new(config).expect("valid config")
}

fn tools() -> Vec<ToolDef> {
    ["zeta", "alpha"]
        .iter()
        .map(|name| ToolDef {
            name: name.to_string(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object"}),
        })
        .collect()
}

fn request<'a>(messages: &'a [Message], tools: &'a [ToolDef], stream: bool) -> ChatRequest<'a> {
    ChatRequest {
        messages: messages.into(),
        tools,
        stream,
        max_tokens: None,
        on_retry: None,
    }
}

/// Records what reached a delta sink.
#[derive(Default)]
struct Collected(Mutex<Vec<String>>);

impl Collected {
    fn sink(&self) -> impl Fn(Delta<'_>) + Send + Sync + '_ {
        move |d| {
            if let Ok(mut seen) = self.0.lock() {
                seen.push(format!("{d:?}"));
            }
        }
    }

    fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

/// Collects retry notices.
#[derive(Default)]
struct Notices(Mutex<Vec<RetryNotice>>);

impl Notices {
    fn record(&self, n: &RetryNotice) {
        if let Ok(mut v) = self.0.lock() {
            v.push(n.clone());
        }
    }

    fn seen(&self) -> Vec<RetryNotice> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

async fn received(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap_or_default()
}

async fn mount(server: &MockServer, template: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(template);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

fn sse(chunks: &[Value], done: bool) -> String {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

fn delta_chunk(delta: Value) -> Value {
    json!({"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":delta,"finish_reason":null}]})
}

#[tokio::test]
async fn buffered_answer_and_request_shape() {
    let server = MockServer::start().await;
    let answer = json!({
        "choices":[{"index":0,"finish_reason":"tool_calls","message":{
            "role":"assistant","content":"Looking.","reasoning_content":"plan first",
            "tool_calls":[
                {"id":"call_1","type":"function","function":{"name":"zeta","arguments":"{\"a\":1}"}},
                {"type":"function","function":{"name":"alpha","arguments":{"b":2}}}
            ]}}],
        "usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":60}}
    });
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer),
        None,
    )
    .await;
    let mut cfg = config(&format!("{}/v1/", server.uri()));
    cfg.api_key = Some("sk-test".into());
    cfg.temperature = Some(0.2);
    let client = model(cfg);
    let messages = [Message::system("be brief"), Message::user("hi")];
    let tools = tools();
    let mut req = request(&messages, &tools, false);
    req.max_tokens = Some(256);
    let response = client.complete(&req, None).await.expect("answer");

    assert_eq!(response.message.content, "Looking.");
    assert_eq!(
        response.message.reasoning_content.as_deref(),
        Some("plan first")
    );
    assert_eq!(
        response.message.tool_calls,
        [
            ToolCall::new("call_1", "zeta", r#"{"a":1}"#),
            ToolCall::new("", "alpha", r#"{"b":2}"#)
        ]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.usage.input_tokens, 100);
    assert_eq!(response.usage.cache_read_tokens, 60);

    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        sent.headers.get("authorization").map(|v| v.as_bytes()),
        Some(&b"Bearer sk-test"[..])
    );
    assert_eq!(
        sent.headers.get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    let agent = sent
        .headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert_eq!(agent, concat!("odek/", env!("CARGO_PKG_VERSION")));
    let body: Value = sent.body_json().expect("JSON body");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], false);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["messages"][1], json!({"role":"user","content":"hi"}));
    let names: Vec<_> = body["tools"]
        .as_array()
        .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(names, [json!("zeta"), json!("alpha")]);
    assert_eq!(body["tools"][0]["type"], "function");
    for absent in [
        "tool_choice",
        "stream_options",
        "thinking",
        "reasoning_effort",
    ] {
        assert!(body.get(absent).is_none(), "{absent} must not be sent");
    }
}

#[tokio::test]
async fn no_key_no_tools_and_thinking_fields() {
    let server = MockServer::start().await;
    let answer = json!({"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]});
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer),
        None,
    )
    .await;
    let mut cfg = config(&format!("{}/v1", server.uri()));
    cfg.thinking = Some("enabled".into());
    cfg.temperature = Some(0.0);
    let messages = [Message::user("hi")];
    model(cfg.clone())
        .complete(&request(&messages, &[], false), None)
        .await
        .expect("ok");
    cfg.thinking = Some("High".into());
    model(cfg.clone())
        .complete(&request(&messages, &[], false), None)
        .await
        .expect("ok");
    cfg.thinking = Some("disabled".into());
    cfg.temperature = None;
    model(cfg)
        .complete(&request(&messages, &[], false), None)
        .await
        .expect("ok");

    let requests = received(&server).await;
    assert!(
        requests
            .iter()
            .all(|r| r.headers.get("authorization").is_none())
    );
    let bodies: Vec<Value> = requests.iter().filter_map(|r| r.body_json().ok()).collect();
    assert_eq!(bodies.len(), 3);
    assert!(bodies.iter().all(|b| b.get("tools").is_none()));
    assert_eq!(
        bodies[0]["thinking"],
        json!({"type":"enabled","budget_tokens":5000})
    );
    assert_eq!(bodies[0]["temperature"], 1.0);
    assert_eq!(bodies[1]["reasoning_effort"], "high");
    assert!(bodies[1].get("thinking").is_none());
    assert_eq!(bodies[1]["temperature"], 0.0);
    assert_eq!(bodies[2]["thinking"], json!({"type":"disabled"}));
    assert!(bodies[2].get("temperature").is_none());
}

#[test]
fn unknown_thinking_mode_is_a_config_error() {
    let mut cfg = config("http://127.0.0.1:1/v1");
    cfg.thinking = Some("maximum".into());
    let e = HttpModel::new(cfg).expect_err("rejected");
    assert!(matches!(e, LlmError::Config(_)), "{e}");
    assert!(e.to_string().contains("maximum"));
}

#[test]
fn unusable_endpoints_are_config_errors() {
    for base in ["", "localhost:8080/v1", "ftp://example.com/v1"] {
        let e = HttpModel::new(config(base)).expect_err("rejected");
        assert!(matches!(e, LlmError::Config(_)), "{base}: {e}");
    }
    let mut cfg = config("http://127.0.0.1:1/v1");
    cfg.api_key = Some("sk-with\nnewline".into());
    assert!(matches!(HttpModel::new(cfg), Err(LlmError::Config(_))));
}

#[tokio::test]
async fn streamed_answer_with_interleaved_tool_calls() {
    let server = MockServer::start().await;
    let chunks = [
        delta_chunk(json!({"role":"assistant","reasoning_content":"Think"})),
        delta_chunk(json!({"reasoning_content":"ing."})),
        delta_chunk(json!({"content":"Two "})),
        delta_chunk(json!({"content":"calls."})),
        delta_chunk(
            json!({"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"zeta","arguments":""}}]}),
        ),
        delta_chunk(
            json!({"tool_calls":[{"index":1,"type":"function","function":{"name":"alpha","arguments":"{\"x\""}}]}),
        ),
        delta_chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"y\":"}}]})),
        delta_chunk(json!({"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]})),
        delta_chunk(json!({"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]})),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"prompt_cache_hit_tokens":30,"prompt_cache_miss_tokens":20}}),
    ];
    let body = format!(": keep-alive\n\n{}", sse(&chunks, true));
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"),
        None,
    )
    .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let messages = [Message::user("go")];
    let tools = tools();
    let collected = Collected::default();
    let sink = collected.sink();
    let response = client
        .complete(&request(&messages, &tools, true), Some(&sink))
        .await
        .expect("streamed answer");

    assert_eq!(
        collected.take(),
        [
            "Reasoning(\"Think\")",
            "Reasoning(\"ing.\")",
            "Content(\"Two \")",
            "Content(\"calls.\")"
        ]
    );
    assert_eq!(response.message.content, "Two calls.");
    assert_eq!(
        response.message.reasoning_content.as_deref(),
        Some("Thinking.")
    );
    assert_eq!(
        response.message.tool_calls,
        [
            ToolCall::new("c0", "zeta", r#"{"y":2}"#),
            ToolCall::new("", "alpha", r#"{"x":1}"#)
        ]
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(response.usage.input_tokens, 50);
    assert_eq!(response.usage.cache_read_tokens, 30);
    assert_eq!(response.usage.cache_write_tokens, 20);

    let requests = received(&server).await;
    let sent = &requests[0];
    assert_eq!(
        sent.headers.get("accept").map(|v| v.as_bytes()),
        Some(&b"text/event-stream"[..])
    );
    let body: Value = sent.body_json().expect("JSON body");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert!(body.get("tool_choice").is_none());
}

#[tokio::test]
async fn stream_without_done_or_finish_reason_is_retried_as_a_broken_answer() {
    let server = MockServer::start().await;
    let body = sse(&[delta_chunk(json!({"content":"partial"}))], false);
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"),
        None,
    )
    .await;
    let mut cfg = config(&format!("{}/v1", server.uri()));
    cfg.max_attempts = 2;
    let client = model(cfg);
    let messages = [Message::user("go")];
    let collected = Collected::default();
    let sink = collected.sink();
    let e = client
        .complete(&request(&messages, &[], true), Some(&sink))
        .await
        .expect_err("truncated every time");
    assert_eq!(
        e.to_string(),
        "llm: retry exhausted (2 attempts): llm: broken answer: the stream ended before the answer did (no finish_reason or [DONE])"
    );
    assert_eq!(
        received(&server).await.len(),
        2,
        "broken answers are retried"
    );
    assert_eq!(
        collected.take(),
        ["Content(\"partial\")", "Restart", "Content(\"partial\")"],
        "the partial text is discarded before the retry"
    );
}

#[tokio::test]
async fn non_sse_answer_to_a_stream_request_is_read_as_buffered() {
    let server = MockServer::start().await;
    let answer = json!({"choices":[{"message":{"content":"plain JSON"},"finish_reason":"stop"}]});
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer),
        None,
    )
    .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let messages = [Message::user("go")];
    let collected = Collected::default();
    let sink = collected.sink();
    let response = client
        .complete(&request(&messages, &[], true), Some(&sink))
        .await
        .expect("fallback");
    assert_eq!(response.message.content, "plain JSON");
    assert_eq!(collected.take(), ["Content(\"plain JSON\")"]);
}

#[tokio::test]
async fn service_unavailable_then_success_is_retried() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(503).set_body_string("busy"),
        Some(1),
    )
    .await;
    let answer = json!({"choices":[{"message":{"content":"finally"},"finish_reason":"stop"}]});
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer),
        None,
    )
    .await;
    let cfg = config(&format!("{}/v1", server.uri()));
    let notices = Notices::default();
    let record = |n: &RetryNotice| notices.record(n);
    let messages = [Message::user("go")];
    let mut req = request(&messages, &[], false);
    req.on_retry = Some(&record);
    let response = model(cfg)
        .complete(&req, None)
        .await
        .expect("second attempt succeeds");
    assert_eq!(response.message.content, "finally");
    assert_eq!(received(&server).await.len(), 2);
    let seen = notices.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].attempt, 2);
    assert_eq!(seen[0].max_attempts, 4);
    assert_eq!(seen[0].reason, "503 Service Unavailable");
    assert!(!seen[0].from_retry_after);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_string("slow down");
    mount(&server, limited, Some(1)).await;
    let answer = json!({"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]});
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer),
        None,
    )
    .await;
    let cfg = config(&format!("{}/v1", server.uri()));
    let notices = Notices::default();
    let record = |n: &RetryNotice| notices.record(n);
    let messages = [Message::user("go")];
    let mut req = request(&messages, &[], false);
    req.on_retry = Some(&record);
    model(cfg).complete(&req, None).await.expect("ok");
    let seen = notices.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].from_retry_after);
    assert_eq!(seen[0].wait, Duration::from_secs(1));
    assert_eq!(seen[0].reason, "429 Too Many Requests");
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let server = MockServer::start().await;
    let body = r#"{"error":{"message":"Incorrect API key provided"}}"#;
    mount(
        &server,
        ResponseTemplate::new(401).set_body_string(body),
        None,
    )
    .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let messages = [Message::user("go")];
    let e = client
        .complete(&request(&messages, &[], false), None)
        .await
        .expect_err("401");
    assert_eq!(received(&server).await.len(), 1);
    assert!(e.is_auth());
    assert!(matches!(e, LlmError::Status { status: 401, .. }));
    let text = e.to_string();
    assert!(
        text.starts_with("llm: 401 Unauthorized (status 401): "),
        "{text}"
    );
    assert!(text.contains("Incorrect API key"));
}

#[tokio::test]
async fn billing_refusal_is_not_retried() {
    let server = MockServer::start().await;
    let body =
        r#"{"error":{"type":"insufficient_quota","message":"You exceeded your current quota"}}"#;
    mount(
        &server,
        ResponseTemplate::new(429).set_body_string(body),
        None,
    )
    .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let messages = [Message::user("go")];
    let e = client
        .complete(&request(&messages, &[], false), None)
        .await
        .expect_err("billing");
    assert_eq!(received(&server).await.len(), 1);
    assert!(e.is_billing());
    assert!(
        e.to_string().contains("billing/quota error, not retried"),
        "{e}"
    );
}

#[tokio::test]
async fn exhausted_retries_name_the_attempts_and_last_error() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(502).set_body_string("upstream down"),
        None,
    )
    .await;
    let mut cfg = config(&format!("{}/v1", server.uri()));
    cfg.max_attempts = 3;
    let notices = Notices::default();
    let record = |n: &RetryNotice| notices.record(n);
    let messages = [Message::user("go")];
    let mut req = request(&messages, &[], false);
    req.on_retry = Some(&record);
    let e = model(cfg).complete(&req, None).await.expect_err("down");
    assert_eq!(received(&server).await.len(), 3);
    assert_eq!(
        e.to_string(),
        "llm: retry exhausted (3 attempts): llm: 502 Bad Gateway (status 502): upstream down"
    );
    assert_eq!(e.http_status(), Some(502));
    let attempts: Vec<u32> = notices.seen().iter().map(|n| n.attempt).collect();
    assert_eq!(attempts, [2, 3]);
}

#[tokio::test]
async fn context_length_error_is_recognised_and_long_bodies_shortened() {
    let server = MockServer::start().await;
    let body = format!(
        r#"{{"error":{{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded","pad":"{}"}}}}"#,
        "é".repeat(2000)
    );
    mount(
        &server,
        ResponseTemplate::new(400).set_body_string(body),
        None,
    )
    .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let messages = [Message::user("go")];
    let e = client
        .complete(&request(&messages, &[], false), None)
        .await
        .expect_err("too long");
    assert_eq!(received(&server).await.len(), 1);
    assert!(e.is_context_length());
    let LlmError::Status { body, .. } = &e else {
        panic!("status error expected: {e}");
    };
    assert_eq!(body.chars().count(), ERROR_BODY_CHARS + 1);
    assert!(body.ends_with('…'));
}

#[test]
fn shorten_cuts_on_char_boundaries() {
    assert_eq!(crate::text::truncate("héllo", 2), "hé…");
    assert_eq!(crate::text::truncate("héllo", 5), "héllo");
    assert_eq!(crate::text::truncate("", 3), "");
}

#[tokio::test]
async fn request_timeout_applies_to_buffered_calls() {
    let server = MockServer::start().await;
    let slow = ResponseTemplate::new(200)
        .set_body_json(json!({"choices":[{"message":{"content":"late"}}]}))
        .set_delay(Duration::from_millis(600));
    mount(&server, slow, None).await;
    let mut cfg = config(&format!("{}/v1", server.uri()));
    cfg.request_timeout = Duration::from_millis(150);
    cfg.max_attempts = 1;
    let messages = [Message::user("go")];
    let e = model(cfg)
        .complete(&request(&messages, &[], false), None)
        .await
        .expect_err("slow");
    assert!(matches!(e, LlmError::Timeout(_)), "{e}");
    assert_eq!(e.error_class(), "network_timeout");
}

#[tokio::test]
async fn refused_connections_are_retried_then_exhausted() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let mut cfg = config(&format!("http://127.0.0.1:{port}/v1"));
    cfg.max_attempts = 2;
    let messages = [Message::user("go")];
    let e = model(cfg)
        .complete(&request(&messages, &[], false), None)
        .await
        .expect_err("refused");
    assert!(
        matches!(e, LlmError::RetryExhausted { attempts: 2, .. }),
        "{e}"
    );
    assert!(matches!(e.root(), LlmError::Network { .. }), "{e}");
    assert_eq!(e.error_class(), "connection_refused");
}

/// A server that answers every request with SSE headers, writes `first_chunk` (if any) and
/// then stays silent. Returns the base URL and the number of connections accepted.
async fn stalling_stream_server(first_chunk: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&connections);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                read_http_request(&mut socket).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let mut out = head.to_string();
                if !first_chunk.is_empty() {
                    out.push_str(&format!("{:x}\r\n{first_chunk}\r\n", first_chunk.len()));
                }
                let _ = socket.write_all(out.as_bytes()).await;
                tokio::time::sleep(Duration::from_secs(10)).await;
            });
        }
    });
    (format!("http://{address}/v1"), connections)
}

async fn read_http_request(socket: &mut tokio::net::TcpStream) {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Ok(n) = socket.read(&mut buf).await else {
            return;
        };
        if n == 0 {
            return;
        }
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_string())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return;
            }
        }
    }
}

#[tokio::test]
async fn idle_stream_after_a_delta_is_retried_and_the_partial_text_discarded() {
    let (base, connections) = stalling_stream_server(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    )
    .await;
    let mut cfg = config(&base);
    cfg.stream_idle_timeout = Duration::from_millis(200);
    cfg.max_attempts = 2;
    let collected = Collected::default();
    let sink = collected.sink();
    let messages = [Message::user("go")];
    let e = model(cfg)
        .complete(&request(&messages, &[], true), Some(&sink))
        .await
        .expect_err("idle");
    assert!(matches!(e.root(), LlmError::StreamIdle(_)), "{e}");
    assert_eq!(e.root().error_class(), "stream_idle_timeout");
    assert_eq!(
        collected.take(),
        ["Content(\"Hel\")", "Restart", "Content(\"Hel\")"]
    );
    assert_eq!(
        connections.load(Ordering::SeqCst),
        2,
        "retried after the delta"
    );
}

#[tokio::test]
async fn idle_stream_before_any_delta_is_retried() {
    let (base, connections) = stalling_stream_server(": keep-alive\n\n").await;
    let mut cfg = config(&base);
    cfg.stream_idle_timeout = Duration::from_millis(150);
    cfg.max_attempts = 2;
    let messages = [Message::user("go")];
    let collected = Collected::default();
    let sink = collected.sink();
    let e = model(cfg)
        .complete(&request(&messages, &[], true), Some(&sink))
        .await
        .expect_err("idle");
    assert!(matches!(e.root(), LlmError::StreamIdle(_)), "{e}");
    assert!(
        matches!(e, LlmError::RetryExhausted { attempts: 2, .. }),
        "{e}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn context_window_from_models_listing_is_cached() {
    let server = MockServer::start().await;
    let listing = json!({"object":"list","data":[
        {"id":"other","context_length":4096},
        {"id":"test-model","context_length":32768}
    ]});
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(listing))
        .mount(&server)
        .await;
    let mut cfg = config(&format!("{}/v1", server.uri()));
    cfg.api_key = Some("k".into());
    let client = model(cfg);
    let tokens = |w: Option<WindowSize>| w.map(|w| w.tokens);
    assert_eq!(tokens(client.context_window().await), Some(32768));
    assert_eq!(tokens(client.context_window().await), Some(32768));
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1, "discovery is cached");
    assert_eq!(
        requests[0]
            .headers
            .get("authorization")
            .map(|v| v.as_bytes()),
        Some(&b"Bearer k"[..])
    );
}

/// The web UI's model picker on Anthropic's wire: its `GET /v1/models` wants the key as
/// `x-api-key` and a version, and lists `{"id", "display_name"}` entries.
#[tokio::test]
async fn anthropic_models_are_listed_with_its_own_headers() {
    let server = MockServer::start().await;
    let listing = json!({"data": [
        {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5"},
        {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5"}],
        "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-haiku-4-5"});
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .and(wiremock::matchers::header("x-api-key", "sk-ant-k"))
        .and(wiremock::matchers::header(
            "anthropic-version",
            "2023-06-01",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(listing))
        .mount(&server)
        .await;
    let mut cfg = config(&format!("{}/v1", server.uri()));
    cfg.api_key = Some("sk-ant-k".into());
    cfg.format = crate::llm::wire::Format::Anthropic;
    let listed = model(cfg).listed_models().await;
    assert_eq!(
        listed,
        Some(vec!["claude-sonnet-4-5".into(), "claude-haiku-4-5".into()])
    );
}

#[tokio::test]
async fn context_window_falls_back_to_the_profile_table() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let deepseek = model(HttpModelConfig::new(base.as_str(), "deepseek-chat"));
    let window = deepseek.context_window().await.expect("from the table");
    assert_eq!(window.tokens, 131_072);
    assert!(
        window.source.starts_with("odek's model table"),
        "{}",
        window.source
    );
    let unknown = model(HttpModelConfig::new(base.as_str(), "my-local-model"));
    assert_eq!(unknown.context_window().await, None);
}

/// llama-server started with `-c 2048`: its listing names only what the model was trained
/// with; `/props` names what it serves, and that is the window.
#[tokio::test]
async fn llama_server_is_sized_from_props_not_from_the_trained_context() {
    let server = MockServer::start().await;
    let listing = json!({"object":"list","data":[{"id":"qwen.gguf","object":"model",
        "owned_by":"llamacpp","meta":{"vocab_type":2,"n_vocab":151936,"n_ctx_train":8192}}]});
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(listing))
        .mount(&server)
        .await;
    let props = json!({"default_generation_settings":{"n_ctx":2048},"total_slots":1});
    Mock::given(method("GET"))
        .and(path("/props"))
        .respond_with(ResponseTemplate::new(200).set_body_json(props))
        .expect(1)
        .mount(&server)
        .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let window = client.context_window().await.expect("discovered");
    assert_eq!(window.tokens, 2048);
    assert!(window.source.contains("/props"), "{}", window.source);
}

/// A llama-server too old for `/props`: the trained size, said to be only that.
#[tokio::test]
async fn llama_server_without_props_falls_back_to_the_trained_context() {
    let server = MockServer::start().await;
    let listing = json!({"data":[{"id":"m","meta":{"n_ctx_train":8192}}]});
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(listing))
        .mount(&server)
        .await;
    let client = model(config(&format!("{}/v1", server.uri())));
    let window = client.context_window().await.expect("discovered");
    assert_eq!(window.tokens, 8192);
    assert!(window.source.contains("trained"), "{}", window.source);
}

#[test]
fn config_defaults_follow_the_profile() {
    let pro = HttpModelConfig::new("http://x/v1", "deepseek-v4-pro");
    assert_eq!(pro.request_timeout, Duration::from_secs(180));
    assert_eq!(pro.thinking.as_deref(), Some("enabled"));
    let plain = HttpModelConfig::new("http://x/v1", "gpt-4o");
    assert_eq!(plain.request_timeout, DEFAULT_REQUEST_TIMEOUT);
    assert_eq!(plain.stream_idle_timeout, DEFAULT_STREAM_IDLE_TIMEOUT);
    assert_eq!(plain.max_attempts, 4);
    assert_eq!(plain.backoff_base, Duration::from_secs(1));
    assert!(plain.thinking.is_none() && plain.temperature.is_none() && plain.api_key.is_none());
    let mut keyed = plain;
    keyed.api_key = Some("sk-secret".into());
    assert!(!format!("{keyed:?}").contains("sk-secret"));
}
