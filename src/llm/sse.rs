//! Streaming answers: server-sent events parsed by `eventsource-stream`, with an idle
//! watchdog over the raw bytes and a pure accumulator that turns chunks into one response.
//!
//! Each `data:` payload is a chat-completion chunk: `choices[0].delta` carries content,
//! reasoning and tool-call fragments; `finish_reason` and `usage` come on the last chunks
//! (usage possibly in a chunk with empty `choices`); `data: [DONE]` ends the stream.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::{Stream, StreamExt, stream};
use serde_json::Value;

use super::error::transport_error;
use super::response::{
    MAX_BODY_BYTES, arguments_text, call_extras, chat_state, embedded_error, non_empty_str,
    parse_usage, reasoning_of,
};
use super::{ChatResponse, Delta, DeltaSink, LlmError, Message, ToolCall, Usage};

/// Accumulates streamed chunks into one [`ChatResponse`]; knows nothing about HTTP.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    content: String,
    reasoning: String,
    tool_calls: Vec<PartialToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    saw_choice: bool,
}

/// A tool call being assembled from fragments.
#[derive(Debug)]
struct PartialToolCall {
    /// The stream's `index`, or a synthetic one past every index seen when it had none.
    index: u64,
    id: String,
    name: String,
    arguments: String,
    /// Fields beyond the protocol's own, kept verbatim (Gemini's `extra_content`).
    extras: serde_json::Map<String, Value>,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the `data: [DONE]` terminator.
    pub fn mark_done(&mut self) {
        self.done = true;
    }

    /// True once `[DONE]` was seen.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Adds one decoded chunk and returns the text it carried (reasoning first), for the
    /// delta sink. A chunk holding an `error` object fails the stream.
    pub fn push_chunk<'v>(&mut self, chunk: &'v Value) -> Result<Vec<Delta<'v>>, LlmError> {
        if let Some(message) = embedded_error(chunk) {
            return Err(LlmError::Protocol(format!(
                "server error in stream: {message}"
            )));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        let Some(choice) = first_choice(chunk) else {
            return Ok(Vec::new());
        };
        self.saw_choice = true;
        if let Some(reason) = non_empty_str(choice.get("finish_reason")) {
            self.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else {
            return Ok(Vec::new());
        };
        Ok(self.push_delta(delta))
    }

    fn push_delta<'v>(&mut self, delta: &'v Value) -> Vec<Delta<'v>> {
        let mut texts = Vec::new();
        if let Some(reasoning) = reasoning_of(delta) {
            self.reasoning.push_str(reasoning);
            texts.push(Delta::Reasoning(reasoning));
        }
        if let Some(content) = non_empty_str(delta.get("content")) {
            self.content.push_str(content);
            texts.push(Delta::Content(content));
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            calls
                .iter()
                .for_each(|call| self.push_tool_call_fragment(call));
        }
        texts
    }

    fn push_tool_call_fragment(&mut self, fragment: &Value) {
        let id = non_empty_str(fragment.get("id"));
        let function = fragment.get("function");
        let name = non_empty_str(function.and_then(|f| f.get("name")));
        let slot = self.slot_for(fragment.get("index").and_then(Value::as_u64), id);
        let call = &mut self.tool_calls[slot];
        if call.id.is_empty() {
            call.id = id.unwrap_or_default().to_string();
        }
        if call.name.is_empty() {
            call.name = name.unwrap_or_default().to_string();
        }
        call.arguments
            .push_str(&arguments_text(function.and_then(|f| f.get("arguments"))));
        call.extras.extend(call_extras(fragment));
    }

    /// Which partial call a fragment belongs to: by index; without one, by id, else the last
    /// call (a continuation), else a new call.
    fn slot_for(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let found = match (index, id) {
            (Some(index), _) => self.tool_calls.iter().position(|c| c.index == index),
            (None, Some(id)) => self.tool_calls.iter().position(|c| c.id == id),
            (None, None) => self.tool_calls.len().checked_sub(1),
        };
        found.unwrap_or_else(|| {
            let index = index.unwrap_or_else(|| self.next_synthetic_index());
            self.tool_calls.push(PartialToolCall {
                index,
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
                extras: serde_json::Map::new(),
            });
            self.tool_calls.len() - 1
        })
    }

    fn next_synthetic_index(&self) -> u64 {
        self.tool_calls
            .iter()
            .map(|c| c.index + 1)
            .max()
            .unwrap_or(0)
    }

    /// The assembled response. Fails when the stream ended without `[DONE]` and without a
    /// `finish_reason` (a truncated stream), or without a single choice.
    pub fn finish(mut self) -> Result<ChatResponse, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::BrokenAnswer(
                "the stream ended before the answer did (no finish_reason or [DONE])".into(),
            ));
        }
        if !self.saw_choice {
            return Err(LlmError::BrokenAnswer("the answer has no choices".into()));
        }
        self.tool_calls.sort_by_key(|c| c.index);
        let mut message = Message::assistant(self.content);
        message.reasoning_content = (!self.reasoning.is_empty()).then_some(self.reasoning);
        let (calls, extras): (Vec<_>, Vec<_>) = self
            .tool_calls
            .into_iter()
            .filter(|c| !(c.id.is_empty() && c.name.is_empty() && c.arguments.is_empty()))
            .map(|c| (ToolCall::new(c.id, c.name, c.arguments), c.extras))
            .unzip();
        message.tool_calls = calls;
        message.provider_state = chat_state(extras);
        Ok(ChatResponse {
            message,
            usage: self.usage.unwrap_or_default(),
            finish_reason: self.finish_reason,
        })
    }
}

/// The choice with index 0 (or the first one when none carries an index).
fn first_choice(chunk: &Value) -> Option<&Value> {
    let choices = chunk.get("choices").and_then(Value::as_array)?;
    choices
        .iter()
        .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
        .or_else(|| choices.first())
}

/// Why the raw byte stream stopped early.
#[derive(Debug)]
enum ByteStreamError {
    Transport(reqwest::Error),
    Idle,
    TooLarge,
}

/// The response body as a byte stream that fails after `idle` without any byte (comments and
/// keep-alives count) or once more than `cap` bytes arrived.
fn watched_bytes(
    response: reqwest::Response,
    idle: Duration,
    cap: usize,
) -> impl Stream<Item = Result<Vec<u8>, ByteStreamError>> {
    let body = Box::pin(response.bytes_stream());
    stream::unfold(
        (body, 0usize, false),
        move |(mut body, total, failed)| async move {
            if failed {
                return None;
            }
            let item = match tokio::time::timeout(idle, body.next()).await {
                Err(_) => Err(ByteStreamError::Idle),
                Ok(None) => return None,
                Ok(Some(Err(e))) => Err(ByteStreamError::Transport(e)),
                Ok(Some(Ok(bytes))) if total + bytes.len() > cap => Err(ByteStreamError::TooLarge),
                Ok(Some(Ok(bytes))) => Ok(bytes.to_vec()),
            };
            let total = total + item.as_ref().map_or(0, Vec::len);
            let failed = item.is_err();
            Some((item, (body, total, failed)))
        },
    )
}

/// What a wire does with the events of its stream: each `data:` payload (with the event's
/// name, `message` when none) is folded into one answer, its text handed on as it arrives.
pub(crate) trait EventFold {
    /// Adds one event; `emit` receives the text it carried. Returns `true` once the stream
    /// said it is complete (nothing after it is read).
    fn push_event(
        &mut self,
        name: &str,
        data: &str,
        emit: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, LlmError>;

    /// The assembled answer; fails on a stream that ended before the answer did.
    fn finish(self) -> Result<ChatResponse, LlmError>;

    /// The tokens the provider has counted so far (Anthropic's `message_start` carries the
    /// input's): billed even when the stream breaks after them.
    fn usage_so_far(&self) -> Usage {
        Usage::default()
    }
}

/// A JSON event payload, or the broken answer it is.
pub(crate) fn event_json(data: &str) -> Result<Value, LlmError> {
    serde_json::from_str(data)
        .map_err(|e| LlmError::BrokenAnswer(format!("a stream chunk is not JSON: {e}")))
}

impl EventFold for StreamAccumulator {
    fn push_event(
        &mut self,
        _name: &str,
        data: &str,
        emit: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.mark_done();
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk = event_json(data)?;
        for delta in self.push_chunk(&chunk)? {
            emit(delta);
        }
        Ok(false)
    }

    fn finish(self) -> Result<ChatResponse, LlmError> {
        StreamAccumulator::finish(self)
    }
}

/// Reads a `text/event-stream` answer to the end with `fold`, handing text to `sink` as it
/// arrives and setting `delivered` once any text reached it.
pub(crate) async fn read_event_stream(
    response: reqwest::Response,
    idle: Duration,
    fold: impl EventFold,
    sink: Option<DeltaSink<'_>>,
    delivered: &AtomicBool,
    billed: &Mutex<Usage>,
) -> Result<ChatResponse, LlmError> {
    read_events(
        watched_bytes(response, idle, MAX_BODY_BYTES),
        idle,
        fold,
        sink,
        (delivered, billed),
    )
    .await
}

/// Reads an event stream from `bytes` to its end (see [`read_event_stream`]).
async fn read_events(
    bytes: impl Stream<Item = Result<Vec<u8>, ByteStreamError>>,
    idle: Duration,
    mut fold: impl EventFold,
    sink: Option<DeltaSink<'_>>,
    (delivered, billed): (&AtomicBool, &Mutex<Usage>),
) -> Result<ChatResponse, LlmError> {
    // A stream that breaks still costs what the provider counted before it broke.
    let bill = |so_far: Usage| {
        billed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(&so_far);
    };
    let mut events = pin!(bytes.eventsource());
    let mut emit = |delta: Delta<'_>| {
        if let Some(sink) = sink {
            delivered.store(true, Ordering::SeqCst);
            sink(delta);
        }
    };
    while let Some(event) = events.next().await {
        let pushed = event
            .map_err(|e| stream_error(e, idle))
            .and_then(|event| fold.push_event(&event.event, &event.data, &mut emit));
        match pushed {
            Ok(true) => break,
            Ok(false) => {}
            Err(error) => {
                bill(fold.usage_so_far());
                return Err(error);
            }
        }
    }
    let so_far = fold.usage_so_far();
    fold.finish().inspect_err(|_| bill(so_far))
}

/// Fuzzing entry: `pieces` as the bytes of a streamed answer, read with `fold` as the client
/// reads one.
#[cfg(any(fuzzing, test))]
pub(crate) fn read_event_pieces(
    pieces: Vec<Vec<u8>>,
    fold: impl EventFold,
) -> Option<Result<ChatResponse, LlmError>> {
    use futures_util::FutureExt as _;
    let delivered = AtomicBool::new(false);
    let billed = Mutex::new(Usage::default());
    let sink = |_: Delta<'_>| {};
    let bytes = stream::iter(pieces.into_iter().map(Ok));
    let trace = (&delivered, &billed);
    read_events(bytes, Duration::from_secs(1), fold, Some(&sink), trace).now_or_never()
}

fn stream_error(error: EventStreamError<ByteStreamError>, idle: Duration) -> LlmError {
    match error {
        EventStreamError::Transport(ByteStreamError::Idle) => LlmError::StreamIdle(idle),
        EventStreamError::Transport(ByteStreamError::TooLarge) => {
            LlmError::Protocol("response exceeds maximum size".into())
        }
        EventStreamError::Transport(ByteStreamError::Transport(e)) => transport_error(&e, idle),
        EventStreamError::Utf8(_) => {
            LlmError::BrokenAnswer("the event stream is not valid UTF-8".into())
        }
        EventStreamError::Parser(e) => {
            LlmError::BrokenAnswer(format!("malformed event stream: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn push(acc: &mut StreamAccumulator, chunk: Value) -> Vec<String> {
        acc.push_chunk(&chunk)
            .expect("chunk accepted")
            .into_iter()
            .map(|d| format!("{d:?}"))
            .collect()
    }

    fn delta(delta: Value) -> Value {
        json!({"choices":[{"index":0,"delta":delta,"finish_reason":null}]})
    }

    #[test]
    fn content_and_reasoning_concatenate_and_are_reported() {
        let mut acc = StreamAccumulator::new();
        assert_eq!(
            push(
                &mut acc,
                delta(json!({"role":"assistant","reasoning_content":"hm"}))
            ),
            ["Reasoning(\"hm\")"]
        );
        assert_eq!(
            push(&mut acc, delta(json!({"content":"Hel"}))),
            ["Content(\"Hel\")"]
        );
        assert!(push(&mut acc, delta(json!({"content":""}))).is_empty());
        push(&mut acc, delta(json!({"content":"lo"})));
        push(
            &mut acc,
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
        );
        push(
            &mut acc,
            json!({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}),
        );
        acc.mark_done();
        let r = acc.finish().expect("complete");
        assert_eq!(r.message.content, "Hello");
        assert_eq!(r.message.reasoning_content.as_deref(), Some("hm"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.usage.input_tokens, 5);
        assert_eq!(r.usage.output_tokens, 2);
    }

    #[test]
    fn tool_calls_accumulate_by_index_when_interleaved() {
        let mut acc = StreamAccumulator::new();
        let fragments = [
            json!({"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"shell","arguments":""}}]}),
            json!({"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}),
            json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"command\""}}]}),
            json!({"tool_calls":[{"index":1,"id":"","function":{"name":"","arguments":"th\":\"x\"}"}}]}),
            json!({"tool_calls":[{"index":0,"function":{"arguments":":\"ls\"}"}}]}),
        ];
        for f in fragments {
            assert!(push(&mut acc, delta(f)).is_empty());
        }
        push(
            &mut acc,
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        );
        let r = acc.finish().expect("finish_reason suffices without [DONE]");
        let calls = &r.message.tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0], ToolCall::new("a", "shell", r#"{"command":"ls"}"#));
        assert_eq!(calls[1], ToolCall::new("b", "read_file", r#"{"path":"x"}"#));
        assert!(r.message.provider_state.is_none());
    }

    #[test]
    fn a_streamed_calls_extra_fields_are_kept_by_its_position() {
        let mut acc = StreamAccumulator::new();
        let extra = json!({"google": {"thought_signature": "c2ln"}});
        let fragments = [
            json!({"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"shell","arguments":"{}"}}]}),
            json!({"tool_calls":[{"index":1,"id":"b","type":"function","extra_content":extra,"function":{"name":"glob","arguments":""}}]}),
            json!({"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}),
        ];
        for f in fragments {
            push(&mut acc, delta(f));
        }
        acc.mark_done();
        let r = acc.finish().expect("done");
        let state = r.message.provider_state.expect("state");
        assert_eq!(
            state.items,
            vec![json!({"call": 1, "fields": {"extra_content": extra}})]
        );
    }

    #[test]
    fn out_of_order_indices_are_sorted_and_content_is_kept_beside_calls() {
        let mut acc = StreamAccumulator::new();
        push(&mut acc, delta(json!({"content":"I'll run two things."})));
        push(
            &mut acc,
            delta(
                json!({"tool_calls":[{"index":1,"function":{"name":"second","arguments":{"n":2}}}]}),
            ),
        );
        push(
            &mut acc,
            delta(json!({"tool_calls":[{"index":0,"function":{"name":"first","arguments":"{}"}}]})),
        );
        acc.mark_done();
        let r = acc.finish().expect("complete");
        assert_eq!(r.message.content, "I'll run two things.");
        let names: Vec<_> = r
            .message
            .tool_calls
            .iter()
            .map(|c| &c.function.name)
            .collect();
        assert_eq!(names, ["first", "second"]);
        assert_eq!(r.message.tool_calls[1].id, "");
        assert_eq!(r.message.tool_calls[1].function.arguments, r#"{"n":2}"#);
    }

    #[test]
    fn missing_index_matches_by_id_or_continues_the_last_call() {
        let mut acc = StreamAccumulator::new();
        let fragments = [
            json!({"tool_calls":[{"id":"x","function":{"name":"one","arguments":"{\"a\""}}]}),
            json!({"tool_calls":[{"function":{"arguments":":1}"}}]}),
            json!({"tool_calls":[{"id":"y","function":{"name":"two","arguments":"{}"}}]}),
            json!({"tool_calls":[{"id":"x","function":{"arguments":""}}]}),
        ];
        for f in fragments {
            push(&mut acc, delta(f));
        }
        acc.mark_done();
        let calls = acc.finish().expect("complete").message.tool_calls;
        assert_eq!(
            calls,
            [
                ToolCall::new("x", "one", r#"{"a":1}"#),
                ToolCall::new("y", "two", "{}")
            ]
        );
    }

    #[test]
    fn truncated_stream_and_error_chunks_are_rejected() {
        let mut acc = StreamAccumulator::new();
        push(&mut acc, delta(json!({"content":"par"})));
        let e = acc.finish().expect_err("truncated");
        assert_eq!(
            e.to_string(),
            "llm: broken answer: the stream ended before the answer did (no finish_reason or [DONE])"
        );
        let mut acc = StreamAccumulator::new();
        push(
            &mut acc,
            json!({"choices": [], "usage": {"prompt_tokens": 1}}),
        );
        acc.mark_done();
        let e = acc.finish().expect_err("no choice at all");
        assert_eq!(
            e.to_string(),
            "llm: broken answer: the answer has no choices"
        );
        let mut acc = StreamAccumulator::new();
        let e = acc
            .push_chunk(&json!({"error":{"message":"upstream overloaded"}}))
            .expect_err("error chunk");
        assert!(e.to_string().contains("upstream overloaded"));
    }
}
