//! A fake Telegram Bot API on a free loopback port, strict like the real one where the bot
//! could go wrong: `getUpdates` confirms updates only through `offset`, `sendMessage` and
//! `editMessageText` answer 400 `can't parse entities` to invalid MarkdownV2 and 400 to texts
//! over 4096 UTF-16 units. Failures can be scripted (429 with `retry_after`), and the server
//! can drop off the network (every connection closed, the port refusing) and come back.
//! Files users send are served as the real one serves them: `getFile` answers a path, and
//! `GET /file/bot<token>/<path>` the bytes; files the bot sends arrive as multipart uploads
//! (`sendDocument`, `sendPhoto`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinSet;

/// The bot token the fake accepts.
pub const TOKEN: &str = "123456:ABCdefGhIJKlmNoPQRsTUVwxyZ0123456789";

/// A scripted failure of the next call of a method.
#[derive(Clone, Debug)]
pub enum Failure {
    /// 429 with `retry_after` seconds.
    TooManyRequests(u64),
    /// 400 `can't parse entities`, as Telegram answers markup it rejects.
    CantParseEntities,
}

#[derive(Default)]
struct Fake {
    updates: Mutex<Vec<Value>>,
    next_update: AtomicI64,
    offsets: Mutex<Vec<i64>>,
    next_message: AtomicI64,
    sent: Mutex<Vec<Value>>,
    edits: Mutex<Vec<Value>>,
    answered: Mutex<Vec<Value>>,
    rejected: Mutex<Vec<(String, Value)>>,
    failures: Mutex<Vec<(String, VecDeque<Failure>)>>,
    calls: Mutex<Vec<String>>,
    /// file_id → the file's bytes.
    files: Mutex<std::collections::HashMap<String, Vec<u8>>>,
    /// Files the bot sent.
    files_sent: Mutex<Vec<SentFile>>,
    changed: Notify,
}

/// A file the bot sent (`sendDocument`, `sendPhoto`).
#[derive(Clone, Debug)]
pub struct SentFile {
    /// The method.
    pub method: String,
    /// The chat.
    pub chat: i64,
    /// The file name of the upload.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The running fake.
pub struct FakeTelegram {
    fake: Arc<Fake>,
    addr: SocketAddr,
    server: Option<tokio::task::JoinHandle<()>>,
}

impl FakeTelegram {
    /// Starts on a free port of 127.0.0.1.
    pub async fn start() -> FakeTelegram {
        let fake = Arc::new(Fake {
            next_update: AtomicI64::new(1000),
            next_message: AtomicI64::new(1),
            ..Fake::default()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut t = FakeTelegram {
            fake,
            addr,
            server: None,
        };
        t.serve(listener);
        t
    }

    /// `http://127.0.0.1:PORT` (the bot's `telegram.api_base`).
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn serve(&mut self, listener: tokio::net::TcpListener) {
        let app = Router::new()
            .route("/{bot}/{method}", post(call))
            .route("/file/{bot}/{*path}", axum::routing::get(file))
            .with_state(self.fake.clone());
        self.server = Some(tokio::spawn(async move {
            // Connections live in this set: aborting the task closes every one of them.
            let mut connections = JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let service = TowerToHyperService::new(app.clone());
                connections.spawn(async move {
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }));
    }

    /// Drops off the network: open connections are cut, new ones refused.
    pub async fn go_offline(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
    }

    /// Listens again on the same port.
    pub async fn come_back(&mut self) {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseaddr(true).expect("reuseaddr");
        socket.bind(self.addr).expect("the same port again");
        let listener = socket.listen(64).expect("listen");
        self.serve(listener);
    }

    /// Queues a text message from `user` in `chat`; returns its update id.
    pub fn message(&self, chat: i64, user: i64, text: &str) -> i64 {
        let message_id = self.fake.next_message.fetch_add(1, Ordering::SeqCst);
        self.push(json!({"message": {
            "message_id": message_id, "date": 1_764_547_200,
            "chat": {"id": chat, "type": if chat > 0 { "private" } else { "group" }},
            "from": {"id": user, "is_bot": false, "first_name": "Ada", "username": "ada"},
            "text": text,
        }}))
    }

    /// Queues a document `name` from `user` in `chat`, with an optional caption.
    pub fn document(
        &self,
        chat: i64,
        user: i64,
        name: &str,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> i64 {
        let file_id = self.keep_file(bytes);
        let mut message = self.file_message(chat, user, caption);
        message["document"] = json!({"file_id": file_id, "file_unique_id": "u", "file_name": name,
                                     "file_size": bytes.len()});
        self.push(json!({ "message": message }))
    }

    /// Queues a photo (two sizes, the larger `bytes`) from `user` in `chat`.
    pub fn photo(&self, chat: i64, user: i64, bytes: &[u8], caption: Option<&str>) -> i64 {
        let small = self.keep_file(b"thumbnail");
        let large = self.keep_file(bytes);
        let mut message = self.file_message(chat, user, caption);
        message["photo"] = json!([
            {"file_id": small, "file_unique_id": "s", "width": 90, "height": 60, "file_size": 9},
            {"file_id": large, "file_unique_id": "l", "width": 1280, "height": 853, "file_size": bytes.len()},
        ]);
        self.push(json!({ "message": message }))
    }

    fn keep_file(&self, bytes: &[u8]) -> String {
        let id = format!(
            "file{}",
            self.fake.next_message.fetch_add(1, Ordering::SeqCst)
        );
        self.fake
            .files
            .lock()
            .expect("lock")
            .insert(id.clone(), bytes.to_vec());
        id
    }

    fn file_message(&self, chat: i64, user: i64, caption: Option<&str>) -> Value {
        let message_id = self.fake.next_message.fetch_add(1, Ordering::SeqCst);
        let mut m = json!({
            "message_id": message_id, "date": 1_764_547_200,
            "chat": {"id": chat, "type": if chat > 0 { "private" } else { "group" }},
            "from": {"id": user, "is_bot": false, "first_name": "Ada", "username": "ada"},
        });
        if let Some(c) = caption {
            m["caption"] = json!(c);
        }
        m
    }

    /// Queues a press of an inline button under the bot's message `message_id`.
    pub fn press(&self, chat: i64, user: i64, message_id: i64, data: &str) -> i64 {
        let id = format!("cb{}", self.fake.next_update.load(Ordering::SeqCst));
        self.push(json!({"callback_query": {
            "id": id, "chat_instance": "ci", "data": data,
            "from": {"id": user, "is_bot": false, "first_name": "Ada", "username": "ada"},
            "message": {"message_id": message_id, "date": 1_764_547_200,
                        "chat": {"id": chat, "type": "private"}, "text": "…"},
        }}))
    }

    fn push(&self, mut update: Value) -> i64 {
        let id = self.fake.next_update.fetch_add(1, Ordering::SeqCst);
        update["update_id"] = json!(id);
        self.fake.updates.lock().expect("lock").push(update);
        self.fake.changed.notify_waiters();
        id
    }

    /// The next `times` calls of `method` fail this way.
    pub fn fail(&self, method: &str, failure: Failure, times: usize) {
        let mut failures = self.fake.failures.lock().expect("lock");
        failures.push((
            method.to_string(),
            std::iter::repeat_n(failure, times).collect(),
        ));
    }

    /// Every message the bot sent and the fake accepted, oldest first.
    pub fn sent(&self) -> Vec<Value> {
        self.fake.sent.lock().expect("lock").clone()
    }

    /// Every file the bot sent and the fake accepted, oldest first.
    pub fn files_sent(&self) -> Vec<SentFile> {
        self.fake.files_sent.lock().expect("lock").clone()
    }

    /// Every accepted `editMessageText`.
    pub fn edits(&self) -> Vec<Value> {
        self.fake.edits.lock().expect("lock").clone()
    }

    /// Every `answerCallbackQuery`.
    pub fn answered(&self) -> Vec<Value> {
        self.fake.answered.lock().expect("lock").clone()
    }

    /// Every refused call: (the 400 description, the body).
    pub fn rejected(&self) -> Vec<(String, Value)> {
        self.fake.rejected.lock().expect("lock").clone()
    }

    /// The offsets the bot asked with, in order.
    pub fn offsets(&self) -> Vec<i64> {
        self.fake.offsets.lock().expect("lock").clone()
    }

    /// Method names in the order they were called (failed ones too).
    pub fn calls(&self) -> Vec<String> {
        self.fake.calls.lock().expect("lock").clone()
    }

    /// Waits (up to 20 s) for a sent message that satisfies `matches`; returns it.
    pub async fn wait_sent(&self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..2000 {
            if let Some(m) = self.sent().into_iter().find(|m| matches(m)) {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the bot never sent {what}; sent: {:#?}", self.sent());
    }

    /// Waits (up to 20 s) until `check` holds.
    pub async fn wait_until(&self, what: &str, check: impl Fn(&FakeTelegram) -> bool) {
        for _ in 0..2000 {
            if check(self) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "timed out waiting for {what}; calls: {:?}; sent: {:#?}",
            self.calls(),
            self.sent()
        );
    }
}

/// A sent message's text.
pub fn text_of(message: &Value) -> &str {
    message["text"].as_str().unwrap_or_default()
}

fn api_error(status: StatusCode, description: &str, extra: Option<Value>) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Some(parameters) = extra {
        body["parameters"] = parameters;
    }
    (status, axum::Json(body)).into_response()
}

fn ok(result: Value) -> Response {
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

async fn call(
    State(fake): State<Arc<Fake>>,
    Path((bot, method)): Path<(String, String)>,
    request: axum::extract::Request,
) -> Response {
    fake.calls.lock().expect("lock").push(method.clone());
    if bot != format!("bot{TOKEN}") {
        return api_error(StatusCode::UNAUTHORIZED, "Unauthorized", None);
    }
    let multipart = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if multipart {
        if let Some(Failure::TooManyRequests(after)) = scripted_failure(&fake, &method) {
            return too_many_requests(after);
        }
        let form = <axum::extract::Multipart as axum::extract::FromRequest<()>>::from_request(
            request,
            &(),
        )
        .await;
        return match form {
            Ok(form) => send_file(&fake, &method, form).await,
            Err(_) => api_error(StatusCode::BAD_REQUEST, "Bad Request: invalid form", None),
        };
    }
    let Ok(body) = axum::body::to_bytes(request.into_body(), 1 << 20).await else {
        return api_error(StatusCode::BAD_REQUEST, "Bad Request: body too large", None);
    };
    let body = String::from_utf8_lossy(&body).into_owned();
    let body: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_str(&body) {
            Ok(v) => v,
            Err(_) => return api_error(StatusCode::BAD_REQUEST, "Bad Request: invalid JSON", None),
        }
    };
    let scripted = scripted_failure(&fake, &method);
    match scripted {
        Some(Failure::TooManyRequests(after)) => return too_many_requests(after),
        Some(Failure::CantParseEntities) if body.get("parse_mode").is_some() => {
            let e = "Bad Request: can't parse entities: scripted refusal";
            fake.rejected
                .lock()
                .expect("lock")
                .push((e.to_string(), body));
            return api_error(StatusCode::BAD_REQUEST, e, None);
        }
        _ => {}
    }
    match method.as_str() {
        "getUpdates" => get_updates(&fake, &body).await,
        "sendMessage" => send_message(&fake, body),
        "editMessageText" => edit_message(&fake, body),
        "getFile" => {
            let id = body["file_id"].as_str().unwrap_or("");
            match fake.files.lock().expect("lock").get(id) {
                Some(bytes) => ok(json!({"file_id": id, "file_unique_id": "u",
                    "file_size": bytes.len(), "file_path": format!("documents/{id}.bin")})),
                None => api_error(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: invalid file_id",
                    None,
                ),
            }
        }
        "answerCallbackQuery" => {
            fake.answered.lock().expect("lock").push(body);
            ok(json!(true))
        }
        _ => api_error(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    }
}

/// The next scripted failure of `method`, if any.
fn scripted_failure(fake: &Fake, method: &str) -> Option<Failure> {
    let mut failures = fake.failures.lock().expect("lock");
    failures
        .iter_mut()
        .find(|(m, queue)| *m == method && !queue.is_empty())
        .and_then(|(_, queue)| queue.pop_front())
}

fn too_many_requests(after: u64) -> Response {
    api_error(
        StatusCode::TOO_MANY_REQUESTS,
        &format!("Too Many Requests: retry after {after}"),
        Some(json!({"retry_after": after})),
    )
}

/// `sendDocument` / `sendPhoto` as multipart uploads: `chat_id` and the file in the field
/// the method names (`document`, `photo`), as the real API takes them.
async fn send_file(fake: &Fake, method: &str, mut form: axum::extract::Multipart) -> Response {
    let field_name = match method {
        "sendDocument" => "document",
        "sendPhoto" => "photo",
        _ => return api_error(StatusCode::NOT_FOUND, "Not Found: method not found", None),
    };
    let mut chat = None;
    let mut file = None;
    while let Ok(Some(field)) = form.next_field().await {
        let name = field.name().unwrap_or_default().to_string();
        let file_name = field.file_name().map(str::to_string);
        let Ok(bytes) = field.bytes().await else {
            return api_error(StatusCode::BAD_REQUEST, "Bad Request: broken form", None);
        };
        if name == "chat_id" {
            chat = String::from_utf8_lossy(&bytes).parse::<i64>().ok();
        } else if name == field_name {
            file = Some((file_name.unwrap_or_default(), bytes.to_vec()));
        }
    }
    let (Some(chat), Some((name, bytes))) = (chat, file) else {
        return api_error(
            StatusCode::BAD_REQUEST,
            &format!("Bad Request: chat_id and {field_name} are required"),
            None,
        );
    };
    if bytes.is_empty() {
        return api_error(
            StatusCode::BAD_REQUEST,
            "Bad Request: file must be non-empty",
            None,
        );
    }
    fake.files_sent.lock().expect("lock").push(SentFile {
        method: method.to_string(),
        chat,
        name,
        bytes,
    });
    let message_id = fake.next_message.fetch_add(1, Ordering::SeqCst);
    fake.changed.notify_waiters();
    ok(
        json!({"message_id": message_id, "date": 1_764_547_200, "chat": {"id": chat, "type": "private"}}),
    )
}

/// `GET /file/bot<token>/documents/<id>.bin`: a file's bytes.
async fn file(
    State(fake): State<Arc<Fake>>,
    Path((bot, path)): Path<(String, String)>,
) -> Response {
    fake.calls
        .lock()
        .expect("lock")
        .push(format!("file:{path}"));
    if bot != format!("bot{TOKEN}") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let id = path
        .strip_prefix("documents/")
        .and_then(|p| p.strip_suffix(".bin"))
        .unwrap_or("");
    match fake.files.lock().expect("lock").get(id) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn get_updates(fake: &Fake, body: &Value) -> Response {
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = body["timeout"].as_u64().unwrap_or(0).min(50);
    fake.offsets.lock().expect("lock").push(offset);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    loop {
        let waiting = fake.changed.notified();
        {
            let mut updates = fake.updates.lock().expect("lock");
            // Like Telegram: an offset confirms every update before it.
            updates.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            if !updates.is_empty() {
                return ok(Value::Array(updates.clone()));
            }
        }
        if tokio::time::timeout_at(deadline, waiting).await.is_err() {
            return ok(json!([]));
        }
    }
}

fn check_text(body: &Value) -> Result<String, String> {
    let text = body["text"].as_str().unwrap_or_default().to_string();
    if text.trim().is_empty() {
        return Err("Bad Request: message text is empty".into());
    }
    if text.encode_utf16().count() > 4096 {
        return Err("Bad Request: message is too long".into());
    }
    if body["parse_mode"] == "MarkdownV2" {
        check_markdown_v2(&text).map_err(|e| format!("Bad Request: can't parse entities: {e}"))?;
    }
    Ok(text)
}

fn send_message(fake: &Fake, mut body: Value) -> Response {
    let text = match check_text(&body) {
        Ok(t) => t,
        Err(e) => {
            fake.rejected.lock().expect("lock").push((e.clone(), body));
            return api_error(StatusCode::BAD_REQUEST, &e, None);
        }
    };
    let id = fake.next_message.fetch_add(1, Ordering::SeqCst);
    body["message_id"] = json!(id);
    let chat = body["chat_id"].clone();
    fake.sent.lock().expect("lock").push(body);
    ok(json!({"message_id": id, "date": 1_764_547_200,
              "chat": {"id": chat, "type": "private"}, "text": text}))
}

fn edit_message(fake: &Fake, body: Value) -> Response {
    let text = match check_text(&body) {
        Ok(t) => t,
        Err(e) => {
            fake.rejected.lock().expect("lock").push((e.clone(), body));
            return api_error(StatusCode::BAD_REQUEST, &e, None);
        }
    };
    let chat = body["chat_id"].clone();
    let id = body["message_id"].clone();
    fake.edits.lock().expect("lock").push(body);
    ok(json!({"message_id": id, "date": 1_764_547_200,
              "chat": {"id": chat, "type": "private"}, "text": text}))
}

/// Telegram's MarkdownV2 rules as far as a bot that escapes text can break them: outside
/// code every reserved character is escaped or is an entity marker (`*` `_` `~` `||`,
/// balanced); inside code only `` ` `` and `\` may be escaped and must be.
pub fn check_markdown_v2(text: &str) -> Result<(), String> {
    const RESERVED: &str = "_*[]()~`>#+-=|{}.!";
    let chars: Vec<char> = text.chars().collect();
    let mut open: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            match chars.get(i + 1) {
                Some(n) if (*n as u32) >= 1 && (*n as u32) <= 126 => {
                    i += 2;
                    continue;
                }
                _ => return Err(format!("character '\\' at {i} escapes nothing")),
            }
        }
        if c == '`' {
            let fence = chars[i..].starts_with(&['`', '`', '`']);
            let marker_len = if fence { 3 } else { 1 };
            let mut j = i + marker_len;
            loop {
                match chars.get(j) {
                    None => return Err(format!("can't find end of code entity at {i}")),
                    Some('\\') => {
                        if !matches!(chars.get(j + 1), Some('`') | Some('\\')) {
                            return Err(format!("needless escape in code at {j}"));
                        }
                        j += 2;
                    }
                    Some('`') if !fence || chars[j..].starts_with(&['`', '`', '`']) => break,
                    Some(_) => j += 1,
                }
            }
            i = j + marker_len;
            continue;
        }
        let marker = match c {
            '*' => Some("*"),
            '_' if chars.get(i + 1) == Some(&'_') => Some("__"),
            '_' => Some("_"),
            '~' => Some("~"),
            '|' if chars.get(i + 1) == Some(&'|') => Some("||"),
            _ => None,
        };
        if let Some(m) = marker {
            if open.last() == Some(&m) {
                open.pop();
            } else {
                open.push(m);
            }
            i += m.len();
            continue;
        }
        if RESERVED.contains(c) {
            return Err(format!(
                "Character '{c}' is reserved and must be escaped with the preceding '\\'"
            ));
        }
        i += 1;
    }
    match open.last() {
        Some(m) => Err(format!("can't find end of {m} entity")),
        None => Ok(()),
    }
}
