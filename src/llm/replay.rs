//! Recorded conversations: [`ReplayModel`] plays a file of responses with no server at all,
//! and [`RecordingModel`] writes such a file while talking to a real model.
//!
//! # File format
//!
//! JSON Lines. Each line is one OpenAI chat-completion response body, exactly as a server
//! would send it to a buffered request:
//!
//! ```text
//! // odek recording (lines starting with // and blank lines are ignored)
//! {"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":120,"completion_tokens":18}}
//! {"choices":[{"message":{"role":"assistant","content":"There are 3 files."},"finish_reason":"stop"}]}
//! ```
//!
//! Responses are played one per request, in order, whatever the request says; they are
//! parsed by the same code as the HTTP client's answers, so everything it tolerates
//! (`arguments` as an object, missing ids, `reasoning_content`…) works here too.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use tokio::io::AsyncWriteExt;

use super::response::{completion_to_json, parse_completion};
use super::{ChatModel, ChatRequest, ChatResponse, Delta, DeltaSink, LlmError};

/// Streamed text is handed to the sink in this many pieces at most.
const STREAM_PIECES: usize = 4;

/// A [`ChatModel`] that answers from a recording, one response per request.
#[derive(Debug)]
pub struct ReplayModel {
    source: String,
    responses: Vec<ChatResponse>,
    next: AtomicUsize,
}

impl ReplayModel {
    /// Loads a recording file (format in the module documentation). Fails naming the file
    /// (and the line) when it cannot be read, a line is not a valid response, or it holds
    /// no responses.
    pub fn load(path: impl AsRef<Path>) -> Result<ReplayModel, LlmError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| LlmError::Replay(format!("cannot read {}: {e}", path.display())))?;
        ReplayModel::from_jsonl(&path.display().to_string(), &text)
    }

    /// Parses a recording held in memory; `source` names it in errors.
    pub fn from_jsonl(source: &str, text: &str) -> Result<ReplayModel, LlmError> {
        let mut responses = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            let response = parse_recorded_line(line)
                .map_err(|e| LlmError::Replay(format!("{source}:{}: {e}", number + 1)))?;
            responses.push(response);
        }
        if responses.is_empty() {
            return Err(LlmError::Replay(format!("{source}: no responses recorded")));
        }
        Ok(ReplayModel {
            source: source.to_string(),
            responses,
            next: AtomicUsize::new(0),
        })
    }

    /// How many responses the recording holds.
    pub fn len(&self) -> usize {
        self.responses.len()
    }

    /// True when the recording holds no responses (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.responses.is_empty()
    }

    /// How many responses have not been played yet.
    pub fn remaining(&self) -> usize {
        self.len().saturating_sub(self.next.load(Ordering::SeqCst))
    }

    /// The file (or name) the recording came from.
    pub fn source(&self) -> &str {
        &self.source
    }
}

/// Why a recorded line cannot be replayed.
#[derive(Debug, thiserror::Error)]
enum RecordingError {
    /// Not JSON.
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not an answer the client could use (the client's own words).
    #[error(transparent)]
    Answer(#[from] LlmError),
}

impl crate::error::Classified for RecordingError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            RecordingError::Json(_) => crate::error::ErrorKind::Usage,
            RecordingError::Answer(e) => crate::error::Classified::kind(e),
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            RecordingError::Json(_) => {
                Some("record the replay again with --record (docs/REPLAY.md)")
            }
            RecordingError::Answer(e) => crate::error::Classified::hint(e),
        }
    }
}

/// A recorded answer, with the provider state a recording keeps beside the message (what
/// a wire needs back; a server's chat answer never carries it).
fn parse_recorded_line(line: &str) -> Result<ChatResponse, RecordingError> {
    let value: serde_json::Value = serde_json::from_str(line)?;
    let mut response = parse_completion(&value)?;
    if let Some(state) = value.pointer("/choices/0/message/provider_state") {
        response.message.provider_state = Some(Box::new(serde_json::from_value(state.clone())?));
    }
    Ok(response)
}

#[async_trait]
impl ChatModel for ReplayModel {
    fn model_name(&self) -> &str {
        "replay"
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let index = self
            .next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.responses.len()).then_some(n + 1)
            })
            .map_err(|_| {
                LlmError::Replay(format!(
                    "recording exhausted after {} responses",
                    self.responses.len()
                ))
            })?;
        let response = self.responses[index].clone();
        if let (true, Some(sink)) = (request.stream, on_delta) {
            stream_to_sink(&response, sink).await;
        }
        Ok(response)
    }
}

/// Hands a recorded answer to the sink in a few pieces, as a server stream would.
async fn stream_to_sink(response: &ChatResponse, sink: DeltaSink<'_>) {
    if let Some(reasoning) = &response.message.reasoning_content {
        for piece in split_for_streaming(reasoning, STREAM_PIECES) {
            sink(Delta::Reasoning(piece));
            tokio::task::yield_now().await;
        }
    }
    for piece in split_for_streaming(&response.message.content, STREAM_PIECES) {
        sink(Delta::Content(piece));
        tokio::task::yield_now().await;
    }
}

/// `text` in at most `pieces` non-empty parts of similar length, cut on char boundaries.
fn split_for_streaming(text: &str, pieces: usize) -> Vec<&str> {
    let target = text.len().div_ceil(pieces.max(1)).max(1);
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = target.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        parts.push(piece);
        rest = tail;
    }
    parts
}

/// Wraps any [`ChatModel`] and appends each successful response to a recording file that
/// [`ReplayModel`] can play (`odek run --record FILE`).
#[derive(Debug)]
pub struct RecordingModel<M> {
    inner: M,
    path: PathBuf,
    write_lock: tokio::sync::Mutex<()>,
}

impl<M: ChatModel> RecordingModel<M> {
    /// Starts a new recording at `path` (replacing any file there) with a header comment.
    pub fn create(inner: M, path: impl Into<PathBuf>) -> Result<RecordingModel<M>, LlmError> {
        let path = path.into();
        let header = format!(
            "// odek recording of model {}: one chat-completion response per line\n",
            inner.model_name()
        );
        std::fs::write(&path, header)
            .map_err(|e| LlmError::Replay(format!("cannot create {}: {e}", path.display())))?;
        Ok(RecordingModel {
            inner,
            path,
            write_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The recording file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    async fn append(&self, response: &ChatResponse) -> Result<(), LlmError> {
        let mut line = completion_to_json(response).to_string();
        line.push('\n');
        let failed = |e: std::io::Error| {
            LlmError::Replay(format!("cannot write {}: {e}", self.path.display()))
        };
        let _guard = self.write_lock.lock().await;
        let mut file = tokio::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.path)
            .await
            .map_err(failed)?;
        file.write_all(line.as_bytes()).await.map_err(failed)?;
        file.flush().await.map_err(failed)
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for RecordingModel<M> {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let response = self.inner.complete(request, on_delta).await?;
        self.append(&response).await?;
        Ok(response)
    }

    async fn context_window(&self) -> Option<crate::llm::WindowSize> {
        self.inner.context_window().await
    }

    async fn listed_models(&self) -> Option<Vec<String>> {
        self.inner.listed_models().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{Message, ToolCall, Usage};
    use std::sync::Mutex;

    const RECORDING: &str = r#"
// a demo
{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"shell","arguments":{"command":"ls"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":4}}

{"choices":[{"message":{"role":"assistant","content":"Three files: a, b and c.","reasoning_content":"counted"},"finish_reason":"stop"}]}
"#;

    fn request(messages: &[Message], stream: bool) -> ChatRequest<'_> {
        ChatRequest {
            messages: messages.into(),
            tools: &[],
            stream,
            max_tokens: None,
            on_retry: None,
        }
    }

    #[tokio::test]
    async fn plays_in_order_then_reports_exhaustion() {
        let model = ReplayModel::from_jsonl("demo.jsonl", RECORDING).expect("valid");
        assert_eq!(model.len(), 2);
        let messages = [Message::user("list files")];
        let first = model
            .complete(&request(&messages, false), None)
            .await
            .expect("one");
        assert_eq!(
            first.message.tool_calls[0].function.arguments,
            r#"{"command":"ls"}"#
        );
        assert_eq!(first.message.tool_calls[0].id, "");
        assert_eq!(first.usage.input_tokens, 10);
        let seen = Mutex::new(Vec::new());
        let sink = |d: Delta<'_>| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(format!("{d:?}"));
            }
        };
        let second = model
            .complete(&request(&messages, true), Some(&sink))
            .await
            .expect("two");
        assert_eq!(second.message.content, "Three files: a, b and c.");
        let seen = seen.into_inner().expect("not poisoned");
        let content_pieces = seen.iter().filter(|d| d.starts_with("Content")).count();
        assert!(content_pieces > 1, "content arrives in pieces: {seen:?}");
        assert!(
            seen[0].starts_with("Reasoning"),
            "reasoning comes first: {seen:?}"
        );
        assert_eq!(model.remaining(), 0);
        let e = model
            .complete(&request(&messages, false), None)
            .await
            .expect_err("out");
        assert_eq!(
            e.to_string(),
            "replay: recording exhausted after 2 responses"
        );
    }

    #[test]
    fn bad_lines_are_named_at_load_time() {
        let e = ReplayModel::from_jsonl("r.jsonl", "// ok\n{\"choices\":[]}\n").expect_err("bad");
        assert_eq!(
            e.to_string(),
            "replay: r.jsonl:2: llm: broken answer: the answer has no choices"
        );
        let e = ReplayModel::from_jsonl("r.jsonl", "\n\n{oops\n").expect_err("bad");
        assert!(
            e.to_string().starts_with("replay: r.jsonl:3: invalid JSON"),
            "{e}"
        );
        let e = ReplayModel::from_jsonl("r.jsonl", "// nothing\n").expect_err("empty");
        assert_eq!(e.to_string(), "replay: r.jsonl: no responses recorded");
        let e = ReplayModel::load("/nonexistent/odek/recording.jsonl").expect_err("missing");
        assert!(e.to_string().contains("/nonexistent/odek/recording.jsonl"));
    }

    #[test]
    fn shipped_demo_recording_loads() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/demo.jsonl");
        let demo = ReplayModel::load(path).expect("examples/demo.jsonl is a valid recording");
        assert_eq!(demo.len(), 4);
        assert_eq!(
            demo.responses[0].message.tool_calls.len(),
            4,
            "plan create + update, two shells"
        );
        assert!(
            demo.responses[3].message.tool_calls.is_empty(),
            "then the answer"
        );
    }

    #[test]
    fn streaming_pieces_cover_the_text_on_char_boundaries() {
        let text = "héllo wörld ✓";
        let parts = split_for_streaming(text, 4);
        assert!(parts.len() <= 4 && parts.len() > 1);
        assert_eq!(parts.concat(), text);
        assert!(split_for_streaming("", 4).is_empty());
        assert_eq!(split_for_streaming("ab", 4), ["a", "b"]);
    }

    #[tokio::test]
    async fn recording_round_trips_into_replay() {
        let source = ReplayModel::from_jsonl("src", RECORDING).expect("valid");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("rec.jsonl");
        let recorder = RecordingModel::create(source, &path).expect("created");
        let messages = [Message::user("go")];
        let mut originals = Vec::new();
        for _ in 0..2 {
            originals.push(
                recorder
                    .complete(&request(&messages, false), None)
                    .await
                    .expect("ok"),
            );
        }
        assert!(
            recorder
                .complete(&request(&messages, false), None)
                .await
                .is_err()
        );
        let replay = ReplayModel::load(&path).expect("recording is valid");
        assert_eq!(replay.len(), 2);
        for original in &originals {
            let played = replay
                .complete(&request(&messages, false), None)
                .await
                .expect("ok");
            assert_eq!(&played, original);
        }
        let expected_call = ToolCall::new("", "shell", r#"{"command":"ls"}"#);
        assert_eq!(originals[0].message.tool_calls, [expected_call]);
        assert_eq!(
            originals[0].usage,
            Usage {
                input_tokens: 10,
                output_tokens: 4,
                ..Usage::default()
            }
        );
    }

    #[test]
    fn a_recorded_answer_keeps_its_provider_state() {
        let mut message = Message::assistant("hi");
        message.provider_state = Some(Box::new(crate::llm::ProviderState {
            wire: "anthropic".into(),
            origin: None,
            items: vec![
                serde_json::json!({"type": "thinking", "thinking": "t", "signature": "s+/="}),
            ],
        }));
        let response = ChatResponse {
            message,
            usage: Usage::default(),
            finish_reason: Some("stop".into()),
        };
        let line = completion_to_json(&response).to_string();
        let back = parse_recorded_line(&line).expect("parses");
        assert_eq!(back, response);
    }
}
