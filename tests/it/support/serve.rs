//! `odek serve` as a child process on a free loopback port, and a small HTTP client for it.

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::Sandbox;

/// A running `odek serve`.
pub struct Served {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The instance token.
    pub token: String,
    stderr: Arc<Mutex<String>>,
    client: reqwest::Client,
}

/// A response: status, headers and body (JSON when it parses, else `Value::Null`).
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
}

impl Served {
    /// Starts `odek serve --addr 127.0.0.1:0 <args>` against `base_url` and waits for its
    /// token URL.
    pub fn start(sb: &Sandbox, base_url: &str, args: &[&str]) -> Served {
        Self::start_with_env(sb, base_url, args, &[])
    }

    /// [`Served::start`] with more environment variables (e.g. an API key).
    pub fn start_with_env(
        sb: &Sandbox,
        base_url: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Served {
        let mut cmd = sb.odek(base_url);
        cmd.args(["serve", "--addr", "127.0.0.1:0"]).args(args);
        cmd.envs(env.iter().copied());
        let super::Spawned {
            child,
            stderr: captured,
            line: url,
        } = super::spawn_until(cmd, "odek serve ⚡  ");
        let rest = url.strip_prefix("http://").expect("http URL");
        let (addr, token) = rest.split_once("/?token=").expect("token URL");
        Served {
            child: Some(child),
            base: format!("http://{addr}"),
            addr: addr.to_string(),
            token: token.to_string(),
            stderr: captured,
            client: odek::llm::http::client_builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
        }
    }

    /// What the server printed so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }

    /// A request with the token header.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .header("X-Odek-Token", &self.token)
    }

    /// A request without any credentials.
    pub fn bare(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    pub async fn get(&self, path: &str) -> Answer {
        send(self.request(reqwest::Method::GET, path)).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Answer {
        send(self.request(reqwest::Method::POST, path).json(&body)).await
    }

    pub async fn delete(&self, path: &str) -> Answer {
        send(self.request(reqwest::Method::DELETE, path)).await
    }

    /// Polls `GET /api/runs/{id}` until the run is no longer running (30 s at most).
    /// Posts a prompt, which must be accepted, and waits until its run has completed;
    /// the acceptance (`run_id`, `session_id`).
    pub async fn prompt_completed(&self, body: Value) -> Value {
        let started = self.post("/api/prompt", body).await;
        assert_eq!(started.status, 202, "{}", started.text);
        let run = self
            .wait_run(started.json["run_id"].as_str().expect("run id"))
            .await;
        assert_eq!(run["status"], "completed", "{run}");
        started.json
    }

    pub async fn wait_run(&self, run_id: &str) -> Value {
        for _ in 0..3000 {
            let run = self.get(&format!("/api/runs/{run_id}")).await.json;
            if run["status"] != "running" {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {run_id} did not end:\n{}", self.stderr());
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends SIGTERM and waits for the exit code (30 s at most).
    pub fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take().expect("running");
        super::sigterm(&child);
        for _ in 0..3000 {
            if let Some(status) = child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        panic!("odek serve did not stop on SIGTERM:\n{}", self.stderr());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends a request and reads the whole answer.
pub async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        text,
        json,
    }
}

/// One Server-Sent Events frame.
#[derive(Debug, Clone)]
pub struct SseFrame {
    pub id: Option<u64>,
    pub event: String,
    pub data: Value,
}

/// A live `GET /api/events/stream`, read frame by frame.
pub struct SseReader {
    response: reqwest::Response,
    buffer: String,
}

impl SseReader {
    /// Opens the stream (with `Last-Event-ID` when given).
    pub async fn open(served: &Served, query: &str, last_event_id: Option<u64>) -> SseReader {
        let mut request =
            served.request(reqwest::Method::GET, &format!("/api/events/stream{query}"));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        let response = request.send().await.expect("stream opens");
        assert_eq!(response.status().as_u16(), 200);
        SseReader {
            response,
            buffer: String::new(),
        }
    }

    /// The next frame (keep-alive comments skipped); `None` when the stream ended or
    /// nothing came for 30 s.
    pub async fn next(&mut self) -> Option<SseFrame> {
        // One deadline for the frame: keep-alive comments do not extend it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(frame) = parse_frame(&block) {
                    return Some(frame);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk())
                .await
                .ok()?
                .ok()??;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Frames until (and with) the first whose event is `until`.
    pub async fn until(&mut self, until: &str) -> Vec<SseFrame> {
        let mut frames = Vec::new();
        while let Some(frame) = self.next().await {
            let done = frame.event == until;
            frames.push(frame);
            if done {
                return frames;
            }
        }
        panic!("the stream ended before {until}: {frames:?}");
    }
}

fn parse_frame(block: &str) -> Option<SseFrame> {
    let mut id = None;
    let mut event = String::from("message");
    let mut data = String::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("id:") {
            id = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("event:") {
            event = v.trim().to_string();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    if data.is_empty() {
        return None;
    }
    Some(SseFrame {
        id,
        event,
        data: serde_json::from_str(&data).unwrap_or(Value::Null),
    })
}
