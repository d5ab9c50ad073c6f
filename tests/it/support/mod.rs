//! A scripted OpenAI-protocol server (wiremock) and helpers to run the real `odek` binary
//! against it in an isolated `ODEK_HOME`.
#![allow(dead_code)]
// Test helpers fail loudly on purpose; their few unsafe blocks send signals to children.
#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers};

pub mod anthropic;
pub mod browser;
mod external;
mod fault;
pub mod keyed;
pub mod release;
pub mod responses;
pub mod serve;
pub mod telegram;
pub use external::{run_external_client, venv_python};
#[allow(unused_imports)] // not every test file breaks answers
pub use fault::{Fault, FaultServer};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// An assistant message; sent as SSE when the request streams, else as one JSON body.
    Message(Value),
    /// A raw HTTP answer (status, headers, body).
    Status(u16, Vec<(String, String)>, String),
    /// Wait, then answer.
    Delayed(Duration, Box<Reply>),
    /// Hold the answer until [`Hold::release`] (or 60 s), e.g. to keep one process in its
    /// model call while a test runs another one.
    Held(Arc<Hold>, Box<Reply>),
    /// An assistant message that ends with `finish_reason: "length"` (cut by the output
    /// limit), streamed or not.
    CutOff(Value),
    /// An answer whose text streams in exactly these pieces (one delta each); unstreamed,
    /// their concatenation.
    Pieces(Vec<String>),
}

/// An answer streamed in exactly these pieces.
pub fn pieces(parts: &[&str]) -> Reply {
    Reply::Pieces(parts.iter().map(|p| p.to_string()).collect())
}

/// A gate for [`Reply::Held`]. The server answers nothing else while one is held.
#[derive(Default, Debug)]
pub struct Hold {
    released: Mutex<bool>,
    changed: std::sync::Condvar,
    reached: std::sync::atomic::AtomicBool,
}

impl Hold {
    /// A closed gate.
    pub fn new() -> Arc<Self> {
        Arc::new(Hold::default())
    }

    /// Lets the held answer go.
    pub fn release(&self) {
        *self.released.lock().expect("lock") = true;
        self.changed.notify_all();
    }

    /// True once the held request reached the server.
    pub fn reached(&self) -> bool {
        self.reached.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (up to 15 s) until the held request reached the server.
    pub async fn wait_reached(&self) {
        for _ in 0..1500 {
            if self.reached() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the held request never arrived");
    }

    fn wait(&self) {
        self.reached
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let released = self.released.lock().expect("lock");
        let _ = self
            .changed
            .wait_timeout_while(released, Duration::from_secs(60), |r| !*r);
    }
}

/// An assistant message with text only.
pub fn text(content: &str) -> Reply {
    Reply::Message(json!({"role": "assistant", "content": content}))
}

/// An assistant message calling tools: `(name, arguments)` pairs, ids `call_<n>`.
pub fn tools(calls: &[(&str, Value)]) -> Reply {
    tools_with_text("", calls)
}

/// An assistant message with narration and tool calls.
pub fn tools_with_text(content: &str, calls: &[(&str, Value)]) -> Reply {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_{}", unique()), "type": "function", "index": i,
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    Reply::Message(json!({"role": "assistant", "content": content, "tool_calls": calls}))
}

/// A `plan` call creating these `(id, title)` steps.
pub fn plan_create(steps: &[(&str, &str)]) -> Reply {
    let steps: Vec<Value> = steps
        .iter()
        .map(|(id, title)| json!({"id": id, "title": title}))
        .collect();
    tools(&[("plan", json!({"verb": "create", "steps": steps}))])
}

/// A `plan` call completing one step.
pub fn plan_complete(step: &str) -> Reply {
    tools(&[("plan", json!({"verb": "complete", "step_id": step}))])
}

/// A tool call whose arguments are sent verbatim (e.g. invalid JSON).
pub fn raw_tool_call(name: &str, raw_args: &str) -> Reply {
    Reply::Message(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": format!("call_{}", unique()), "type": "function", "function": {"name": name, "arguments": raw_args}}]}))
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A check run against every request body.
type RequestCheck = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// Shared script state.
#[derive(Default)]
struct Script {
    /// Answer 500 to a request whose history holds tool-call arguments that are not JSON,
    /// as llama.cpp's server does.
    refuse_invalid_arguments: std::sync::atomic::AtomicBool,
    replies: Mutex<VecDeque<Reply>>,
    side_requests: Mutex<Vec<Value>>,
    requests: Mutex<Vec<Value>>,
    auth: Mutex<Vec<Option<String>>>,
    checks: Mutex<Vec<RequestCheck>>,
    failures: Mutex<Vec<String>>,
}

/// The wire a scripted server speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wire {
    Chat,
    Anthropic,
    Responses,
}

struct Responder(Arc<Script>, Wire);

impl Responder {
    fn render(&self, reply: Reply, stream: bool) -> ResponseTemplate {
        match self.1 {
            Wire::Chat => render_as::<Chat>(reply, stream),
            Wire::Anthropic => render_as::<anthropic::Anthropic>(reply, stream),
            Wire::Responses => render_as::<responses::Responses>(reply, stream),
        }
    }
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if is_side_call(&body) {
            self.0.side_requests.lock().expect("lock").push(body);
            return self.render(
                text("Digest: the agent listed files and read outputs; nothing failed."),
                false,
            );
        }
        if self
            .0
            .refuse_invalid_arguments
            .load(std::sync::atomic::Ordering::SeqCst)
            && history_has_invalid_arguments(&body)
        {
            self.0.requests.lock().expect("lock").push(body);
            return ResponseTemplate::new(500)
                .set_body_string("Failed to parse tool call arguments as JSON");
        }
        if let (Wire::Responses, Some(e)) = (&self.1, responses::invalid_input(&body)) {
            // As llama-server answers an input item it cannot read.
            self.0.requests.lock().expect("lock").push(body);
            return ResponseTemplate::new(400).set_body_json(
                json!({"error": {"code": 400, "message": e, "type": "invalid_request_error"}}),
            );
        }
        for check in self.0.checks.lock().expect("lock").iter() {
            if let Err(e) = check(&body) {
                let n = self.0.requests.lock().expect("lock").len() + 1;
                self.0
                    .failures
                    .lock()
                    .expect("lock")
                    .push(format!("request {n}: {e}"));
            }
        }
        self.0.requests.lock().expect("lock").push(body.clone());
        let header = |name: &str| {
            request
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        // Anthropic's key comes as `x-api-key` (odek) or a bearer token (newer SDKs).
        let auth = match self.1 {
            Wire::Anthropic => header("x-api-key").or_else(|| {
                header("authorization").map(|v| v.trim_start_matches("Bearer ").to_string())
            }),
            Wire::Chat | Wire::Responses => header("authorization"),
        };
        self.0.auth.lock().expect("lock").push(auth);
        let reply = self.0.replies.lock().expect("lock").pop_front();
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        match reply {
            Some(r) => self.render(r, stream),
            None => ResponseTemplate::new(500).set_body_string("script exhausted"),
        }
    }
}

/// True when an assistant message of the request carries tool-call arguments that do not
/// parse as JSON.
fn history_has_invalid_arguments(body: &Value) -> bool {
    body["messages"].as_array().into_iter().flatten().any(|m| {
        m["tool_calls"].as_array().into_iter().flatten().any(|c| {
            let args = c["function"]["arguments"].as_str().unwrap_or("");
            serde_json::from_str::<Value>(args).is_err()
        })
    })
}

/// Side calls (compaction digest, partial summary) send no tools; the loop always does.
fn is_side_call(body: &Value) -> bool {
    let system = body["messages"][0]["content"]
        .as_str()
        .or_else(|| body["system"][0]["text"].as_str())
        .or_else(|| body["input"][0]["content"].as_str());
    body.get("tools")
        .is_none_or(|t| t.as_array().is_none_or(|a| a.is_empty()))
        && system.is_some_and(|c| c.starts_with("You are a compaction assistant"))
}

/// How one wire format answers the replies it renders its own way; [`render_as`] answers
/// those every wire answers alike (a delay, a hold, a raw status).
trait WireFormat {
    /// A scripted message, as one body or streamed.
    fn message(message: &Value, stream: bool) -> ResponseTemplate;
    /// A message cut by the output limit.
    fn cut_off(message: &Value, stream: bool) -> ResponseTemplate;
    /// A text that streams in exactly these pieces (unstreamed, their concatenation).
    fn pieces(parts: Vec<String>, stream: bool) -> ResponseTemplate;
}

/// `reply` as the wire format `W` answers it.
fn render_as<W: WireFormat>(reply: Reply, stream: bool) -> ResponseTemplate {
    match reply {
        Reply::Delayed(d, inner) => render_as::<W>(*inner, stream).set_delay(d),
        Reply::Held(hold, inner) => {
            hold.wait();
            render_as::<W>(*inner, stream)
        }
        Reply::Status(code, headers, body) => {
            let kind = headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                .map_or("text/plain", |(_, v)| v.as_str());
            let mut t = ResponseTemplate::new(code).set_body_raw(body, kind);
            for (k, v) in headers
                .iter()
                .filter(|(k, _)| !k.eq_ignore_ascii_case("content-type"))
            {
                t = t.insert_header(k.as_str(), v.as_str());
            }
            t
        }
        Reply::Message(message) => W::message(&message, stream),
        Reply::CutOff(message) => W::cut_off(&message, stream),
        Reply::Pieces(parts) => W::pieces(parts, stream),
    }
}

/// A scripted message with `value` under `key` (a format's extra blocks, such as thinking or
/// reasoning); other replies as they are.
fn with_field(reply: Reply, key: &str, value: Value) -> Reply {
    match reply {
        Reply::Message(mut m) => {
            m[key] = value;
            Reply::Message(m)
        }
        other => other,
    }
}

/// `events` as an SSE body of named events (Anthropic's and the Responses API's streams).
fn event_stream(events: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("message");
        body.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// OpenAI's Chat Completions.
struct Chat;

impl WireFormat for Chat {
    fn message(message: &Value, stream: bool) -> ResponseTemplate {
        answer(message, finish_reason(message), stream)
    }

    fn cut_off(message: &Value, stream: bool) -> ResponseTemplate {
        answer(message, "length", stream)
    }

    fn pieces(parts: Vec<String>, stream: bool) -> ResponseTemplate {
        if !stream {
            return answer(
                &json!({"role": "assistant", "content": parts.concat()}),
                "stop",
                false,
            );
        }
        let mut body = String::new();
        let role = json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]});
        body.push_str(&format!("data: {role}\n\n"));
        for part in &parts {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": part}}]});
            body.push_str(&format!("data: {chunk}\n\n"));
        }
        let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        body.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
    }
}

fn answer(message: &Value, finish: &str, stream: bool) -> ResponseTemplate {
    if stream {
        return ResponseTemplate::new(200)
            .set_body_raw(sse_body(message, finish), "text/event-stream");
    }
    let usage = usage_of(message);
    let mut message = message.clone();
    if let Some(m) = message.as_object_mut() {
        m.remove(USAGE_KEY);
    }
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "cmpl", "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage
    }))
}

fn finish_reason(message: &Value) -> &'static str {
    if message
        .get("tool_calls")
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()))
    {
        "tool_calls"
    } else {
        "stop"
    }
}

/// The message as SSE chunks: text in pieces, each tool call in fragments, usage, [DONE].
pub fn sse_body(message: &Value, finish: &str) -> String {
    let mut body = String::new();
    for c in sse_chunks(message, finish) {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

/// The chunks of [`sse_body`]: the role, the text in 7-character pieces, each tool call in
/// two fragments (its arguments split in the middle), the finish reason, the usage.
pub fn sse_chunks(message: &Value, finish: &str) -> Vec<Value> {
    let mut chunks = vec![json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})];
    let content = message.get("content").and_then(Value::as_str).unwrap_or("");
    let chars: Vec<char> = content.chars().collect();
    for piece in chars.chunks(7) {
        let s: String = piece.iter().collect();
        chunks.push(json!({"choices": [{"index": 0, "delta": {"content": s}}]}));
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            let args = call["function"]["arguments"].as_str().unwrap_or("");
            let (a, b) = args.split_at(args.len() / 2);
            chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": a}}]}}]}));
            chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "function": {"arguments": b}}]}}]}));
        }
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    chunks.push(json!({"choices": [], "usage": usage_of(message)}));
    chunks
}

/// The usage a scripted answer reports: the one set by [`with_usage`], else 100 prompt and
/// 20 completion tokens.
fn usage_of(message: &Value) -> Value {
    message.get(USAGE_KEY).cloned().unwrap_or_else(
        || json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}),
    )
}

/// Where [`with_usage`] keeps the usage inside a scripted message (never sent as part of it).
const USAGE_KEY: &str = "__usage";

/// A scripted message that reports `usage` (e.g. with cached prompt tokens).
pub fn with_usage(reply: Reply, usage: Value) -> Reply {
    match reply {
        Reply::Message(mut m) => {
            m[USAGE_KEY] = usage;
            Reply::Message(m)
        }
        other => other,
    }
}

/// A scripted server on 127.0.0.1 (port 0).
pub struct ScriptedServer {
    server: MockServer,
    script: Arc<Script>,
}

impl ScriptedServer {
    /// Starts a server that plays `replies` in order to `POST /v1/chat/completions`.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::start_on(replies, "/v1/chat/completions", Wire::Chat).await
    }

    /// Starts a server that plays `replies` in Anthropic's Messages format to
    /// `POST /v1/messages` (the key is read from `x-api-key`).
    pub async fn start_anthropic(replies: Vec<Reply>) -> Self {
        Self::start_on(replies, "/v1/messages", Wire::Anthropic).await
    }

    /// Starts a server that plays `replies` in OpenAI's Responses format to
    /// `POST /v1/responses`.
    pub async fn start_responses(replies: Vec<Reply>) -> Self {
        Self::start_on(replies, "/v1/responses", Wire::Responses).await
    }

    async fn start_on(replies: Vec<Reply>, path: &str, wire: Wire) -> Self {
        let server = MockServer::start().await;
        let script = Arc::new(Script::default());
        script.replies.lock().expect("lock").extend(replies);
        let mock = Mock::given(matchers::method("POST")).and(matchers::path(path));
        let mock = match wire {
            // Without a version header Anthropic's API answers nothing useful: neither does
            // this one (404). odek sends 2023-06-01; the SDKs send their own.
            Wire::Anthropic => mock.and(matchers::header_exists("anthropic-version")),
            Wire::Chat | Wire::Responses => mock,
        };
        mock.respond_with(Responder(script.clone(), wire))
            .mount(&server)
            .await;
        ScriptedServer { server, script }
    }

    /// The base URL to give odek (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    /// The JSON bodies of every chat request so far.
    pub fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().expect("lock").clone()
    }

    /// Side calls (the compaction digest) answered with a canned digest.
    pub fn side_requests(&self) -> Vec<Value> {
        self.script.side_requests.lock().expect("lock").clone()
    }

    /// The key header of every request so far (`Authorization`; Anthropic's `x-api-key`).
    pub fn auth_headers(&self) -> Vec<Option<String>> {
        self.script.auth.lock().expect("lock").clone()
    }

    /// Adds a check run on every request; failures are collected for [`Self::assert_checks`].
    pub fn check(&self, f: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static) {
        self.script.checks.lock().expect("lock").push(Box::new(f));
    }

    /// Fails the test when any request check failed.
    pub fn assert_checks(&self) {
        let failures = self.script.failures.lock().expect("lock");
        assert!(
            failures.is_empty(),
            "request checks failed:\n{}",
            failures.join("\n")
        );
    }

    /// From now on, answers 500 to any request whose history holds tool-call arguments that
    /// are not JSON (llama.cpp's `llama-server` does).
    pub fn refuse_invalid_arguments(&self) {
        self.script
            .refuse_invalid_arguments
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Drops every queued reply.
    pub fn clear(&self) {
        self.script.replies.lock().expect("lock").clear();
    }

    /// Queues more replies.
    pub fn push(&self, replies: Vec<Reply>) {
        self.script.replies.lock().expect("lock").extend(replies);
    }

    /// The underlying server (to mount more routes such as `/v1/models`).
    pub fn mock(&self) -> &MockServer {
        &self.server
    }
}

/// The messages of request `i`.
pub fn messages(request: &Value) -> Vec<Value> {
    request["messages"].as_array().cloned().unwrap_or_default()
}

/// The last user message of a request (what the turn sent), or `Null`.
pub fn last_user(request: &Value) -> Value {
    messages(request)
        .into_iter()
        .rfind(|m| m["role"] == "user")
        .unwrap_or(Value::Null)
}

/// The text of the last user message of a request (empty when it has none or its content
/// is parts).
pub fn last_user_text(request: &Value) -> String {
    last_user(request)["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The names of the tools a request offers, in order.
pub fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results (contents) of a request, in order.
pub fn tool_results(request: &Value) -> Vec<String> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The body of an untrusted wrapper, or the text itself.
pub fn unwrap_untrusted(text: &str) -> String {
    odek::untrusted::unwrap(text).map_or_else(|| text.to_string(), |u| u.body.to_string())
}

/// An isolated home and working directory for one test.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub work: PathBuf,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("odek-home");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&home).expect("home");
        std::fs::create_dir_all(&work).expect("work");
        std::fs::create_dir_all(dir.path().join("tmp")).expect("tmp");
        Sandbox { dir, home, work }
    }

    /// Writes the global config file (mode 0600).
    pub fn global_config(&self, json: &str) {
        use std::os::unix::fs::PermissionsExt;
        let p = self.home.join("config.json");
        std::fs::write(&p, json).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }

    /// Writes the project config file in the working directory.
    pub fn project_config(&self, json: &str) {
        std::fs::write(self.work.join("odek.json"), json).expect("write");
    }

    /// The `TMPDIR` odek runs with (a folder of its own, so the shell sandbox's writable
    /// temporary directory holds neither the odek home nor the working directory).
    pub fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// `odek` with a clean environment: only PATH, HOME, TMPDIR, ODEK_HOME and the base URL
    /// (the browser off).
    pub fn odek(&self, base_url: &str) -> std::process::Command {
        let mut cmd = odek_command();
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("TMPDIR", self.tmp())
            .env("ODEK_HOME", &self.home)
            .env("ODEK_BASE_URL", base_url)
            .env("ODEK_MODEL", "test-model")
            // An episode's summary is a model call of its own: the memory tests turn it on.
            .env("ODEK_MEMORY_EPISODES", "false")
            // Chromium is on PATH here: the browser tests turn the tool on (a later
            // `.env("ODEK_BROWSER", "true")` wins), so the other tests' tool lists stay.
            .env("ODEK_BROWSER", "false")
            .current_dir(&self.work);
        cmd
    }
}

impl Sandbox {
    /// Adds the hourly `--catchup` job `name` (task `task`) and dates it `hours` back, so
    /// that the next runner on this home finds runs it missed and catches up once at start.
    pub fn add_missed_hourly_job(&self, base_url: &str, name: &str, task: &str, hours: i64) {
        let mut add = self.odek(base_url);
        add.args([
            "schedule",
            "add",
            "--cron",
            "0 * * * *",
            "--name",
            name,
            "--catchup",
            task,
        ]);
        let added = add.output().expect("runs");
        assert_eq!(added.status.code(), Some(0), "{}", show(&added));
        self.backdate_first_job(hours);
    }

    /// Dates the first scheduled job `hours` back (as if added then, and nothing ran since).
    pub fn backdate_first_job(&self, hours: i64) {
        let path = self.home.join("schedules.json");
        let mut jobs: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("jobs")).expect("json");
        let then = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(hours);
        jobs[0]["created_at"] = json!(then.to_string());
        std::fs::write(&path, jobs.to_string()).expect("backdated");
    }
}

/// The binary under test: the one Cargo built with these tests, or the one `ODEK_TEST_BIN`
/// names (CI runs the suite again against the static release binary, `make build`'s).
pub fn odek_binary() -> PathBuf {
    std::env::var_os("ODEK_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_odek")))
}

/// A command that starts the binary under test: through `ODEK_TEST_RUNNER` when it is set —
/// an emulator such as `qemu-aarch64-static`, for a binary of another architecture (CI runs
/// the `smoke::` tests so; docs/PLATFORMS.md) —, else the binary itself.
pub fn odek_command() -> std::process::Command {
    match std::env::var_os("ODEK_TEST_RUNNER").filter(|runner| !runner.is_empty()) {
        Some(runner) => {
            let mut cmd = std::process::Command::new(runner);
            cmd.arg(odek_binary());
            cmd
        }
        None => std::process::Command::new(odek_binary()),
    }
}

/// A long-running child (`odek serve`, `odek telegram`) whose stderr is collected.
pub struct Spawned {
    /// The process.
    pub child: std::process::Child,
    /// Everything it printed on stderr so far.
    pub stderr: Arc<Mutex<String>>,
    /// The rest of the first stderr line that started with the marker.
    pub line: String,
}

/// Starts `cmd` (stdin and stdout closed, stderr collected) and waits up to 30 s for a
/// stderr line starting with `marker`.
pub fn spawn_until(mut cmd: std::process::Command, marker: &str) -> Spawned {
    use std::io::{BufRead, BufReader};
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .stdin(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("the command starts");
    let stderr = child.stderr.take().expect("stderr");
    let captured = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = captured.clone();
    let marker_owned = marker.to_string();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().expect("lock").push_str(&format!("{line}\n"));
            if let Some(rest) = line.strip_prefix(&marker_owned)
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(rest.to_string());
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(line) => Spawned {
            child,
            stderr: captured,
            line,
        },
        Err(_) => {
            let _ = child.kill();
            panic!(
                "no line starting with {marker:?}:\n{}",
                captured.lock().expect("lock")
            );
        }
    }
}

/// Runs a command to completion off the async runtime.
/// `odek repl` against `server`, as a terminal runs it (`TERM=xterm`).
pub fn repl_command(sb: &Sandbox, server: &ScriptedServer) -> std::process::Command {
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("TERM", "xterm").arg("repl");
    cmd
}

/// Runs `cmd` in a pty and has `talk` drive it (15 s per expectation); panics with what the
/// pty showed when the conversation does not go as `talk` expects.
pub async fn in_pty<F>(cmd: std::process::Command, talk: F)
where
    F: FnOnce(&mut rexpect::session::PtySession) -> Result<(), rexpect::error::Error>
        + Send
        + 'static,
{
    tokio::task::spawn_blocking(move || {
        let mut p = rexpect::session::spawn_command(cmd, Some(15_000))?;
        talk(&mut p)
    })
    .await
    .expect("join")
    .expect("the conversation in the terminal went as expected");
}

pub async fn output(mut cmd: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("odek runs"))
        .await
        .expect("join")
}

/// Runs `odek run TASK` to completion (it must succeed) and returns the new session's id.
pub async fn first_session(sb: &Sandbox, server: &ScriptedServer, task: &str) -> String {
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["run", task]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let start = stderr.find("odek: session ").expect("saved line") + "odek: session ".len();
    stderr[start..start + 41].to_string()
}

/// Stdout and stderr as text, for assertion messages.
pub fn show(out: &std::process::Output) -> String {
    format!(
        "exit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What the process printed on standard output, as text.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What the process printed on standard error, as text.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The JSON lines of an event stream (`--events-jsonl`, or stdout with `--json`); fails on a
/// line that is not JSON.
pub fn event_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
        })
        .collect()
}

/// The events of type `kind` among the JSON lines of `text` (other lines skipped).
pub fn events_of(text: &str, kind: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == kind)
        .collect()
}

/// Path helper.
pub fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).expect("read")
}

/// The session files in the sandbox's home (`<home>/sessions/<id>.json`, not the index),
/// sorted; none when the folder does not exist.
pub fn session_files(sb: &Sandbox) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(sb.home.join("sessions")) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().is_some_and(|n| n != "index.json")
        })
        .collect();
    files.sort();
    files
}

/// The path of the one session file in the sandbox's home (fails unless there is exactly one).
pub fn only_session_path(sb: &Sandbox) -> PathBuf {
    let files = session_files(sb);
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// The one session in the sandbox's home, parsed (fails unless there is exactly one).
pub fn only_session(sb: &Sandbox) -> Value {
    serde_json::from_str(&read(only_session_path(sb))).expect("session parses")
}

/// The newest tool result a request carries, unwrapped.
pub fn last_result(request: &Value) -> String {
    unwrap_untrusted(tool_results(request).last().expect("a tool result"))
}

/// Fails when a tool result in `messages` answers no call of an earlier assistant message.
pub fn assert_no_orphans(messages: &[Value]) {
    let mut calls = Vec::new();
    for m in messages {
        if let Some(tc) = m["tool_calls"].as_array() {
            calls.extend(
                tc.iter()
                    .map(|c| c["id"].as_str().unwrap_or("").to_string()),
            );
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or("").to_string();
            assert!(
                calls.contains(&id),
                "tool result {id} answers no earlier call: {m}"
            );
        }
    }
}

/// Sends SIGTERM to a child process this test started.
pub fn sigterm(child: &std::process::Child) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: signalling our own child process.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
}

/// Processes whose command line holds `needle` (read from `/proc`; a zombie's is empty).
#[cfg(target_os = "linux")]
pub fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
        .collect()
}

/// The pid and command line of every process whose environment holds `entry` (e.g.
/// `TMPDIR=<the sandbox's>`: what a program and all its helpers inherit, whatever their
/// command lines or process groups).
#[cfg(target_os = "linux")]
pub fn processes_in_env(entry: &str) -> Vec<(String, String)> {
    std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == entry.as_bytes()))
        })
        .filter_map(|e| {
            let command = std::fs::read(e.path().join("cmdline")).ok()?;
            let command = String::from_utf8_lossy(&command).replace('\0', " ");
            Some((e.file_name().to_string_lossy().into_owned(), command))
        })
        .collect()
}

/// Processes whose command line holds `needle`, as `ps` lists them where there is no
/// `/proc` (a zombie's command is only its name there).
#[cfg(not(target_os = "linux"))]
pub fn processes_with(needle: &str) -> Vec<u32> {
    let listing = std::process::Command::new("ps")
        .args(["-A", "-o", "pid=,command="])
        .output()
        .expect("ps");
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|line| line.trim_start().split_once(' '))
        .filter(|(_, command)| command.contains(needle) && !command.contains("ps -A"))
        .filter_map(|(pid, _)| pid.parse().ok())
        .collect()
}

/// Waits (up to 5 s) until `n` processes hold `needle` in their command line.
pub async fn processes_running(needle: &str, n: usize) {
    for _ in 0..500 {
        if processes_with(needle).len() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not {n} running: {:?}", processes_with(needle));
}

/// Waits (up to 5 s) until no process holds `needle` in its command line.
pub async fn processes_gone(needle: &str) {
    for _ in 0..500 {
        if processes_with(needle).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("left running: {:?}", processes_with(needle));
}
