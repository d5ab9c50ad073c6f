//! JSON-RPC 2.0 as ACP carries it: one JSON object per line on stdin and stdout. Reading a
//! line (bounded), telling requests, notifications and responses apart, and the connection's
//! side of requests the agent sends the client (`session/request_permission`, `fs/*`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::{mpsc, oneshot};

/// The largest line read (a prompt with images in base64); a longer one is answered with an
/// error and skipped.
pub(crate) const MAX_LINE_BYTES: usize = 64 << 20;

/// JSON-RPC's error codes, and ACP's.
pub(crate) mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC 2.0 request, or one that may not come yet (before `initialize`).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The parameters do not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Something failed inside odek.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: the agent needs authentication first.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: no such resource (a session).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INTERNAL_ERROR, message)
    }

    fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

/// One message read from the client.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// A call that wants an answer.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A call that wants none.
    Notification { method: String, params: Value },
    /// The client's answer to a request of odek's.
    Response {
        id: Value,
        outcome: Result<Value, RpcError>,
    },
    /// Not a message odek can take: answered with this error (`id` null when unknown).
    Invalid { id: Value, error: RpcError },
}

/// What one line holds.
pub(crate) fn parse(line: &[u8]) -> Incoming {
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(line) else {
        let error = match serde_json::from_slice::<Value>(line) {
            Ok(_) => RpcError::new(code::INVALID_REQUEST, "a message must be a JSON object"),
            Err(e) => RpcError::new(code::PARSE_ERROR, format!("not JSON: {e}")),
        };
        return Incoming::Invalid {
            id: Value::Null,
            error,
        };
    };
    let id = message.remove("id");
    let id_ok = matches!(&id, None | Some(Value::String(_) | Value::Number(_)));
    let version_ok = message.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    if !id_ok || !version_ok {
        return Incoming::Invalid {
            id: id.filter(|_| id_ok).unwrap_or(Value::Null),
            error: RpcError::new(
                code::INVALID_REQUEST,
                "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" and a string or number id)",
            ),
        };
    }
    match (message.remove("method"), id) {
        (Some(Value::String(method)), id) => {
            let params = message.remove("params").unwrap_or(Value::Null);
            match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            }
        }
        (None, Some(id)) => Incoming::Response {
            outcome: response_outcome(&mut message),
            id,
        },
        (_, id) => Incoming::Invalid {
            id: id.unwrap_or(Value::Null),
            error: RpcError::new(code::INVALID_REQUEST, "\"method\" must be a string"),
        },
    }
}

fn response_outcome(message: &mut Map<String, Value>) -> Result<Value, RpcError> {
    if let Some(error) = message.remove("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let text = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(RpcError::new(code, text));
    }
    Ok(message.remove("result").unwrap_or(Value::Null))
}

/// A line read with [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// The line, without its end.
    Text(Vec<u8>),
    /// A line over [`MAX_LINE_BYTES`], skipped to its end.
    TooLong,
    /// The input ended.
    End,
}

/// Reads the next line of at most `max` bytes; a longer one is read to its end and dropped.
pub(crate) async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    max: usize,
) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut over = false;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (over, line.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Text(line),
            });
        }
        let (piece, ended) = match memchr::memchr(b'\n', buffer) {
            Some(at) => (&buffer[..at], Some(at + 1)),
            None => (buffer, None),
        };
        if !over && line.len() + piece.len() <= max {
            line.extend_from_slice(piece);
        } else {
            over = true;
            line = Vec::new();
        }
        let used = ended.unwrap_or(buffer.len());
        input.consume(used);
        if ended.is_some() {
            if over {
                return Ok(Line::TooLong);
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Line::Text(line));
        }
    }
}

type Waiting = oneshot::Sender<Result<Value, RpcError>>;

/// The writing side of the connection, shared by every task: messages go to the writer task
/// as whole lines, in the order they were sent.
pub(crate) struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
    waiting: Mutex<HashMap<u64, Waiting>>,
}

impl Connection {
    /// A connection whose lines go to `out`.
    pub(crate) fn new(out: mpsc::UnboundedSender<Vec<u8>>) -> Arc<Connection> {
        Arc::new(Connection {
            out,
            next_id: AtomicU64::new(0),
            waiting: Mutex::new(HashMap::new()),
        })
    }

    fn send(&self, message: &Value) {
        // Serialising a Value cannot fail; a closed output means the client went away.
        if let Ok(mut line) = serde_json::to_vec(message) {
            line.push(b'\n');
            let _ = self.out.send(line);
        }
    }

    /// A notification to the client.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The answer to the client's request `id`.
    pub(crate) fn respond(&self, id: Value, outcome: Result<Value, RpcError>) {
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
        };
        self.send(&message);
    }

    /// A request to the client; its answer, or an error when the connection closes first.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await
            .unwrap_or_else(|_| Err(RpcError::internal("the client closed the connection")))
    }

    /// Hands the client's answer to the request it answers (unknown ids are dropped).
    pub(crate) fn answered(&self, id: &Value, outcome: Result<Value, RpcError>) {
        let Some(id) = id.as_u64() else { return };
        let waiting = self
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
        if let Some(tx) = waiting {
            let _ = tx.send(outcome);
        }
    }

    /// Fails every request still waiting (the input ended).
    pub(crate) fn close(&self) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_responses_and_bad_lines_are_told_apart() {
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"a": 1})
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Incoming::Notification {
                method: "session/cancel".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":"7","result":{"ok":true}}"#),
            Incoming::Response {
                id: json!("7"),
                outcome: Ok(json!({"ok": true}))
            }
        );
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"no"}}"#),
            Incoming::Response {
                id: json!(3),
                outcome: Err(RpcError::new(-32603, "no"))
            }
        );
        let code_of = |line: &[u8]| match parse(line) {
            Incoming::Invalid { error, .. } => error.code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code_of(b"{not json"), code::PARSE_ERROR);
        assert_eq!(code_of(b"[1,2]"), code::INVALID_REQUEST);
        assert_eq!(code_of(br#"{"id":1,"method":"x"}"#), code::INVALID_REQUEST);
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#),
            code::INVALID_REQUEST
        );
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":1,"method":5}"#),
            code::INVALID_REQUEST
        );
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_a_long_one_is_skipped() {
        let input = b"short\r\n0123456789abc\nlast".to_vec();
        let mut reader = tokio::io::BufReader::with_capacity(4, &input[..]);
        assert_eq!(
            read_line(&mut reader, 10).await.expect("read"),
            Line::Text(b"short".to_vec())
        );
        assert_eq!(
            read_line(&mut reader, 10).await.expect("read"),
            Line::TooLong
        );
        assert_eq!(
            read_line(&mut reader, 10).await.expect("read"),
            Line::Text(b"last".to_vec())
        );
        assert_eq!(read_line(&mut reader, 10).await.expect("read"), Line::End);
    }

    #[tokio::test]
    async fn a_request_gets_the_answer_with_its_id() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let conn = Connection::new(tx);
        let asking = {
            let conn = conn.clone();
            tokio::spawn(async move { conn.request("fs/read_text_file", json!({})).await })
        };
        let sent: Value = serde_json::from_slice(&rx.recv().await.expect("line")).expect("json");
        assert_eq!(sent["method"], "fs/read_text_file");
        conn.answered(&sent["id"], Ok(json!({"content": "x"})));
        assert_eq!(asking.await.expect("task"), Ok(json!({"content": "x"})));
    }
}
