//! A model server that answers each conversation by its first user message (parent and
//! sub-agents talk to it at once, in any order): a raw HTTP/1.1 server on 127.0.0.1, one
//! async task per connection, buffered JSON answers only (tests set `"stream": false`).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Answers one request: the first user message and the whole request → the assistant
/// message (async, so an answer may wait for other requests: a barrier).
pub type Answer = Arc<
    dyn Fn(String, Value) -> std::pin::Pin<Box<dyn std::future::Future<Output = Value> + Send>>
        + Send
        + Sync,
>;

/// The server.
pub struct KeyedServer {
    port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
    heads: Arc<Mutex<Vec<String>>>,
}

impl KeyedServer {
    /// Starts the server with its answering function.
    pub async fn start(answer: Answer) -> KeyedServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = (requests.clone(), heads.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, answer.clone(), seen.clone()));
            }
        });
        KeyedServer {
            port,
            requests,
            heads,
        }
    }

    /// The base URL for `ODEK_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Every chat request so far, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("lock").clone()
    }

    /// The request line and headers of every chat request so far, in arrival order.
    pub fn heads(&self) -> Vec<String> {
        self.heads.lock().expect("lock").clone()
    }
}

/// The first user message of a request.
pub fn first_user(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string()
}

type Seen = (Arc<Mutex<Vec<Value>>>, Arc<Mutex<Vec<String>>>);

async fn serve(mut socket: TcpStream, answer: Answer, seen: Seen) {
    loop {
        let Some((head, body)) = read_request(&mut socket).await else {
            return;
        };
        let reply = if head.starts_with("POST") {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            seen.0.lock().expect("lock").push(request.clone());
            seen.1.lock().expect("lock").push(head.clone());
            let message = answer(first_user(&request), request).await;
            let finish = if message.get("tool_calls").is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
            .to_string()
        } else {
            json!({"data": []}).to_string()
        };
        let out = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if socket.write_all(out.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = buf[end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}
