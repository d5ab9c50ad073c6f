//! A model server that breaks answers on purpose: a raw HTTP/1.1 server on 127.0.0.1 (port 0)
//! that can stop a stream mid-way, stall it, send text that is not JSON, or an answer
//! without choices — what a mock framework that sends whole bodies cannot do.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How one answer breaks. `after` counts the SSE chunks sent first (see
/// [`super::sse_chunks`]: chunk 0 is the role, the text follows in 7-character pieces, then
/// two fragments per tool call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No fault: the whole answer.
    None,
    /// Streamed: `after` chunks, then the connection closes (no finish reason, no `[DONE]`).
    /// Buffered: the JSON body cut in the middle (a complete HTTP answer).
    Truncate { after: usize },
    /// Streamed: `after` chunks, then silence for `silence`, then close. Buffered: half the
    /// body, then the silence.
    Stall { after: usize, silence: Duration },
    /// Streamed with `after`: that many chunks, then a `data:` line that is not JSON. Without
    /// (and buffered): a 200 whose body is an HTML page.
    NotJson { after: Option<usize> },
    /// A 200 whose answer has no choices (streamed: only a usage chunk and `[DONE]`).
    EmptyChoices,
}

/// One scripted answer: the assistant message and how to break it.
type Scripted = (Value, Fault);

/// The server: answers `POST /v1/chat/completions` from its script, in order.
pub struct FaultServer {
    port: u16,
    script: Arc<Mutex<VecDeque<Scripted>>>,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl FaultServer {
    /// Starts the server with its script.
    pub async fn start(script: Vec<(Value, Fault)>) -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let script = Arc::new(Mutex::new(VecDeque::from(script)));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (script.clone(), requests.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, s.clone(), r.clone()));
            }
        });
        FaultServer {
            port,
            script,
            requests,
        }
    }

    /// The base URL to give odek.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The JSON bodies of every chat request so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("lock").clone()
    }

    /// Answers still queued.
    pub fn remaining(&self) -> usize {
        self.script.lock().expect("lock").len()
    }
}

async fn serve(
    mut socket: TcpStream,
    script: Arc<Mutex<VecDeque<Scripted>>>,
    requests: Arc<Mutex<Vec<Value>>>,
) {
    let Some((head, body)) = read_request(&mut socket).await else {
        return;
    };
    if !head.starts_with("POST /v1/chat/completions ") {
        let _ = socket
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let stream = request["stream"].as_bool().unwrap_or(false);
    requests.lock().expect("lock").push(request);
    let next = script.lock().expect("lock").pop_front();
    let Some((message, fault)) = next else {
        let _ = socket
            .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 16\r\nConnection: close\r\n\r\nscript exhausted")
            .await;
        return;
    };
    if stream {
        answer_streamed(&mut socket, &message, fault).await;
    } else {
        answer_buffered(&mut socket, &message, fault).await;
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((head, body))
}

fn finish_reason(message: &Value) -> &'static str {
    if message["tool_calls"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        "tool_calls"
    } else {
        "stop"
    }
}

async fn answer_streamed(socket: &mut TcpStream, message: &Value, fault: Fault) {
    if fault == (Fault::NotJson { after: None }) {
        return html_page(socket).await;
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let chunks = super::sse_chunks(message, finish_reason(message));
    let send = |chunks: &[Value]| {
        chunks
            .iter()
            .map(|c| format!("data: {c}\n\n"))
            .collect::<String>()
    };
    let text = match fault {
        Fault::None => format!("{}data: [DONE]\n\n", send(&chunks)),
        Fault::Truncate { after } | Fault::Stall { after, .. } => send(&chunks[..after]),
        Fault::NotJson { after } => format!(
            "{}data: {{\"choices\": [{{\"delta\n\n",
            send(&chunks[..after.unwrap_or(0)])
        ),
        Fault::EmptyChoices => format!(
            "{}data: [DONE]\n\n",
            send(&[json!({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})])
        ),
    };
    let _ = socket.write_all(text.as_bytes()).await;
    let _ = socket.flush().await;
    if let Fault::Stall { silence, .. } = fault {
        tokio::time::sleep(silence).await;
    }
}

async fn answer_buffered(socket: &mut TcpStream, message: &Value, fault: Fault) {
    let whole = json!({
        "id": "cmpl", "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(message)}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20}
    })
    .to_string();
    let (body, declared, silence) = match fault {
        Fault::None => (whole.clone(), whole.len(), None),
        Fault::Truncate { .. } => {
            let cut = whole[..whole.len() / 2].to_string();
            let len = cut.len();
            (cut, len, None)
        }
        Fault::Stall { silence, .. } => (
            whole[..whole.len() / 2].to_string(),
            whole.len(),
            Some(silence),
        ),
        Fault::NotJson { .. } => return html_page(socket).await,
        Fault::EmptyChoices => {
            let empty = json!({"id": "cmpl", "choices": []}).to_string();
            let len = empty.len();
            (empty, len, None)
        }
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n"
    );
    let _ = socket.write_all(head.as_bytes()).await;
    let _ = socket.write_all(body.as_bytes()).await;
    let _ = socket.flush().await;
    if let Some(silence) = silence {
        tokio::time::sleep(silence).await;
    }
}

async fn html_page(socket: &mut TcpStream) {
    let page = "<html><body>502 Bad Gateway</body></html>";
    let text = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = socket.write_all(text.as_bytes()).await;
}
