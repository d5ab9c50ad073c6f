//! Anthropic's Messages API: `POST {base}/messages` with `x-api-key` and
//! `anthropic-version`.
//!
//! The conversation's leading system messages become the `system` blocks; a system message
//! later in it (the plan, sent last; a hint) becomes a text block of a user turn; tool
//! results are `tool_result` blocks of a user turn, and turns of one role are merged, as the
//! API wants them alternating. An assistant message's thinking blocks (kept verbatim in its
//! provider state, signatures included) go back first in its turn.
//!
//! Prompt caching: at most four `cache_control` breakpoints — the last tool, the system
//! prompt (the first system block, so a changed memory block after it costs nothing before
//! it), the last block of the conversation before the trailing system text (the plan
//! changes without moving the cached prefix), and the same point of the request before.
//! The breakpoints move with every request: they are kept out of the kept encodings (see
//! [`encode`]).

use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Value, json};

use super::WireSettings;
use super::kept::KeptEncodings;
use crate::llm::response::non_empty_str;
use crate::llm::sse::{EventFold, event_json};
use crate::llm::types::Images;
use crate::llm::{
    ChatRequest, ChatResponse, Delta, LlmError, Message, ProviderState, RequestMessages, Role,
    ToolCall, ToolDef, Usage,
};

/// The API version sent in `anthropic-version`.
const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request names none (the field is required), beside any thinking
/// budget.
const DEFAULT_MAX_TOKENS: u32 = 8_192;
/// The wire name kept in a message's provider state.
pub(super) const WIRE: &str = "anthropic";
/// Said in place of an assistant turn that had neither text nor calls (the API refuses
/// empty turns).
const EMPTY_TURN: &str = "(no answer)";

/// The request with Anthropic's credentials.
pub(super) fn authorise(
    builder: reqwest::RequestBuilder,
    key: Option<&str>,
) -> reqwest::RequestBuilder {
    let builder = builder.header("anthropic-version", API_VERSION);
    match key {
        Some(key) => builder.header("x-api-key", key),
        None => builder,
    }
}

/// The body of `request`, with the encodings of the messages' blocks and of the tools `kept`
/// from the request before where they are the same.
///
/// Each message is kept as the JSON array of its blocks, a system message as its text (a
/// JSON string: its block depends on where it stands, see [`Piece`]); the turns are their
/// elements, one message's after the other's, and the few blocks that carry a breakpoint
/// this time get their `cache_control` as they are written.
pub(super) fn encode(
    request: &ChatRequest<'_>,
    settings: &WireSettings<'_>,
    kept: &mut KeptEncodings,
) -> Result<Vec<u8>, serde_json::Error> {
    kept.keep_messages(&request.messages, |message, images, _| match message.role {
        Role::System => to_raw_value(&message.content),
        Role::User => to_raw_value(&user_blocks(message, images)),
        Role::Tool => to_raw_value(&[tool_result(message, images)]),
        Role::Assistant => to_raw_value(&assistant_blocks(message)),
    })?;
    kept.keep_tools_with(request.tools, |tools| to_raw_value(&tools_value(tools)))?;
    let mut out = kept.body_buffer();
    let conversation = Conversation::of(&request.messages, kept.messages());
    let budget = settings.thinking.and_then(|t| t.budget_tokens());
    let answer_tokens = request
        .max_tokens
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let size = kept
        .messages()
        .iter()
        .map(|m| m.get().len() + 64)
        .sum::<usize>()
        + kept.tools().map_or(0, |t| t.get().len())
        + settings.model.len()
        + 256;
    out.reserve(size);
    out.extend_from_slice(b"{\"model\":");
    serde_json::to_writer(&mut out, settings.model)?;
    out.extend_from_slice(b",\"max_tokens\":");
    serde_json::to_writer(&mut out, &answer_tokens.saturating_add(budget.unwrap_or(0)))?;
    conversation.write(&mut out);
    if let Some(tools) = kept.tools() {
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools.get().as_bytes());
    }
    match budget {
        // Thinking takes no temperature but the default.
        Some(budget) => {
            out.extend_from_slice(b",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":");
            serde_json::to_writer(&mut out, &budget)?;
            out.push(b'}');
        }
        None => {
            if let Some(t) = settings.temperature {
                out.extend_from_slice(b",\"temperature\":");
                serde_json::to_writer(&mut out, &t.min(1.0))?;
            }
        }
    }
    out.extend_from_slice(match request.stream {
        true => b",\"stream\":true}",
        false => b",\"stream\":false}",
    });
    Ok(out)
}

/// The tools, the last with a breakpoint.
fn tools_value(tools: &[ToolDef]) -> Value {
    let count = tools.len();
    let tools = tools.iter().enumerate().map(|(i, tool)| {
        let mut entry = json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.parameters,
        });
        if i + 1 == count {
            entry["cache_control"] = json!({"type": "ephemeral"});
        }
        entry
    });
    Value::Array(tools.collect())
}

/// A breakpoint, as the last field of the block it marks.
const CACHE_CONTROL: &[u8] = b",\"cache_control\":{\"type\":\"ephemeral\"}";

/// The first turn of a conversation that does not start with the user's.
const CONTINUES: &str = r#"{"type":"text","text":"(the conversation continues)"}"#;

/// One message's part of a turn, as kept.
#[derive(Clone, Copy)]
enum Piece<'a> {
    /// Its blocks: the elements of a JSON array, comma-separated.
    Blocks(&'a str),
    /// A system message inside the conversation (a JSON string), said to the model as such
    /// in a text block.
    Note(&'a str),
}

impl Piece<'_> {
    /// Writes the piece's blocks, the last with a breakpoint when `marked`.
    fn write(self, out: &mut Vec<u8>, marked: bool) {
        match self {
            Piece::Blocks(blocks) => match blocks.strip_suffix('}') {
                Some(open) if marked => {
                    out.extend_from_slice(open.as_bytes());
                    out.extend_from_slice(CACHE_CONTROL);
                    out.push(b'}');
                }
                _ => out.extend_from_slice(blocks.as_bytes()),
            },
            Piece::Note(text) => {
                // JSON escapes a string character by character: the note's encoding is its
                // text's between the escaped words around it.
                let inner = text.get(1..text.len().saturating_sub(1)).unwrap_or("");
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"<system-reminder>\\n");
                out.extend_from_slice(inner.as_bytes());
                out.extend_from_slice(b"\\n</system-reminder>\"}");
            }
        }
    }
}

/// The conversation in Messages' shape, made of the kept encodings.
struct Conversation<'a> {
    /// The leading system messages' texts (JSON strings), blank ones left out.
    system: Vec<&'a str>,
    /// Every turn's pieces, in order.
    pieces: Vec<Piece<'a>>,
    turns: Vec<Turn>,
}

/// A turn: its role, its pieces, and its last piece of the conversation proper (system
/// notes come after it).
struct Turn {
    role: &'static str,
    pieces: std::ops::Range<usize>,
    last_own: Option<usize>,
}

impl<'a> Conversation<'a> {
    /// The conversation of `messages`, each encoded as `encoded` at its place.
    fn of(messages: &RequestMessages<'_>, encoded: &'a [Box<RawValue>]) -> Conversation<'a> {
        let mut conversation = Conversation {
            system: Vec::new(),
            pieces: Vec::with_capacity(encoded.len() + 1),
            turns: Vec::new(),
        };
        let mut head = true;
        for (message, raw) in messages.iter().zip(encoded) {
            let raw = raw.get();
            if head && message.role == Role::System {
                if !message.content.trim().is_empty() {
                    conversation.system.push(raw);
                }
                continue;
            }
            head = false;
            let blocks = raw.get(1..raw.len().saturating_sub(1)).unwrap_or("");
            match message.role {
                Role::System => conversation.push("user", Piece::Note(raw), false),
                Role::Assistant => conversation.push("assistant", Piece::Blocks(blocks), true),
                Role::User | Role::Tool => conversation.push("user", Piece::Blocks(blocks), true),
            }
        }
        if conversation.turns.first().is_none_or(|t| t.role != "user") {
            let at = conversation.pieces.len();
            conversation.pieces.push(Piece::Blocks(CONTINUES));
            let start = Turn {
                role: "user",
                pieces: at..at + 1,
                last_own: None,
            };
            conversation.turns.insert(0, start);
        }
        conversation
    }

    /// Adds `piece` to the last turn when it has `role`, else as a new turn; `own` when it
    /// is of the conversation proper.
    fn push(&mut self, role: &'static str, piece: Piece<'a>, own: bool) {
        if let Piece::Blocks("") = piece {
            return;
        }
        let at = self.pieces.len();
        self.pieces.push(piece);
        let turn = match self.turns.last_mut() {
            Some(turn) if turn.role == role => turn,
            _ => {
                self.turns.push(Turn {
                    role,
                    pieces: at..at,
                    last_own: None,
                });
                let last = self.turns.len() - 1;
                &mut self.turns[last]
            }
        };
        turn.pieces.end = at + 1;
        if own {
            turn.last_own = Some(at);
        }
    }

    /// The pieces whose last block carries a breakpoint: the last of the conversation
    /// proper, and the same point of the request before this one (the last user turn's
    /// before the last assistant turn).
    fn cache_points(&self) -> [Option<usize>; 2] {
        let turns = &self.turns;
        let latest = turns.iter().rposition(|t| t.last_own.is_some());
        let last_assistant = turns.iter().rposition(|t| t.role == "assistant");
        let previous = last_assistant.and_then(|a| {
            turns[..a]
                .iter()
                .rposition(|t| t.role == "user" && t.last_own.is_some())
        });
        [latest, previous].map(|turn| turn.and_then(|t| turns[t].last_own))
    }

    /// Writes the `system` blocks (a breakpoint on the first) and the `messages`.
    fn write(&self, out: &mut Vec<u8>) {
        for (i, text) in self.system.iter().enumerate() {
            out.extend_from_slice(match i {
                0 => b",\"system\":[{\"type\":\"text\",\"text\":",
                _ => b",{\"type\":\"text\",\"text\":",
            });
            out.extend_from_slice(text.as_bytes());
            if i == 0 {
                out.extend_from_slice(CACHE_CONTROL);
            }
            out.push(b'}');
        }
        if !self.system.is_empty() {
            out.push(b']');
        }
        out.extend_from_slice(b",\"messages\":[");
        let marked = self.cache_points();
        for (i, turn) in self.turns.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"role\":\"");
            out.extend_from_slice(turn.role.as_bytes());
            out.extend_from_slice(b"\",\"content\":[");
            for at in turn.pieces.clone() {
                if at > turn.pieces.start {
                    out.push(b',');
                }
                self.pieces[at].write(out, marked.contains(&Some(at)));
            }
            out.extend_from_slice(b"]}");
        }
        out.push(b']');
    }
}

fn text(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn user_blocks(message: &Message, images: Images) -> Vec<Value> {
    let mut blocks = Vec::new();
    let said = images.text(&message.content, message.images.len());
    if !said.trim().is_empty() {
        blocks.push(text(&said));
    }
    if images == Images::Sent {
        blocks.extend(message.images.iter().map(|i| image_block(&i.url)));
    }
    blocks
}

/// An image part: a `data:` URL as base64 source, any other URL as a URL source.
fn image_block(url: &str) -> Value {
    let inline = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .and_then(|(meta, data)| Some((meta.strip_suffix(";base64")?, data)));
    match inline {
        Some((media_type, data)) => json!({"type": "image", "source": {
            "type": "base64", "media_type": media_type, "data": data}}),
        None => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

/// A tool result: its text, and its images (when sent) as image blocks after it.
fn tool_result(message: &Message, images: Images) -> Value {
    let said = images.text(&message.content, message.images.len());
    let said = if said.is_empty() {
        "(no output)"
    } else {
        &said
    };
    let content = match images {
        Images::Sent if !message.images.is_empty() => {
            let blocks = std::iter::once(text(said));
            Value::Array(
                blocks
                    .chain(message.images.iter().map(|i| image_block(&i.url)))
                    .collect(),
            )
        }
        _ => json!(said),
    };
    json!({
        "type": "tool_result",
        "tool_use_id": tool_id(message.tool_call_id.as_deref().unwrap_or("")),
        "content": content,
    })
}

fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks: Vec<Value> =
        ProviderState::items_for(message.provider_state.as_deref(), WIRE).to_vec();
    if !message.content.trim().is_empty() {
        blocks.push(text(&message.content));
    }
    for call in &message.tool_calls {
        blocks.push(json!({
            "type": "tool_use",
            "id": tool_id(&call.id),
            "name": call.function.name,
            "input": tool_input(&call.function.arguments),
        }));
    }
    if blocks.is_empty() {
        blocks.push(text(EMPTY_TURN));
    }
    blocks
}

/// A call's arguments as the object the API wants: the arguments when they are one, `{}`
/// for none, else the raw text under `arguments`.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) if value.is_object() => value,
        _ => json!({ "arguments": arguments }),
    }
}

/// A call id as the API accepts it (`[A-Za-z0-9_-]+`): other characters become `_`, the
/// same way on the call and on its result.
fn tool_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Parses a buffered answer.
pub(super) fn parse_body(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::BrokenAnswer(format!("the answer is not JSON: {e}")))?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(event_error(&value));
    }
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::BrokenAnswer("the answer has no content".into()))?;
    let mut answer = Answer::default();
    for block in blocks {
        answer.add_block(block.clone(), None);
    }
    let usage = value.get("usage").map(usage_of).unwrap_or_default();
    Ok(answer.finish(usage, non_empty_str(value.get("stop_reason"))))
}

/// The failure an `error` event or body names: an overloaded or failing server is a broken
/// answer (retried), anything else an error the server reported.
fn event_error(value: &Value) -> LlmError {
    let error = value.get("error");
    let kind = non_empty_str(error.and_then(|e| e.get("type"))).unwrap_or("error");
    let message = non_empty_str(error.and_then(|e| e.get("message"))).unwrap_or("");
    match kind {
        "overloaded_error" | "api_error" | "rate_limit_error" => {
            LlmError::BrokenAnswer(format!("server error in stream: {kind}: {message}"))
        }
        _ => LlmError::Protocol(format!("server error in stream: {kind}: {message}")),
    }
}

/// Tokens of `usage`: Anthropic counts cached input apart; odek's input includes it.
fn usage_of(usage: &Value) -> Usage {
    let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
    let read = count("cache_read_input_tokens");
    let written = count("cache_creation_input_tokens");
    Usage {
        input_tokens: count("input_tokens") + read + written,
        output_tokens: count("output_tokens"),
        cache_read_tokens: read,
        cache_write_tokens: written,
        reasoning_tokens: 0,
    }
}

/// The content blocks of an answer, turned into one message.
#[derive(Default)]
struct Answer {
    content: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    opaque: Vec<Value>,
}

impl Answer {
    /// Adds a finished block; `arguments` is a tool call's streamed input text.
    fn add_block(&mut self, block: Value, arguments: Option<String>) {
        match block.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => self
                .content
                .push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            "thinking" => {
                let thought = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                self.reasoning.push_str(thought);
                self.opaque.push(block);
            }
            "redacted_thinking" => self.opaque.push(block),
            "tool_use" => {
                let arguments = arguments.unwrap_or_else(|| match block.get("input") {
                    Some(input) if !input.is_null() => input.to_string(),
                    _ => String::new(),
                });
                let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
                self.calls
                    .push(ToolCall::new(field("id"), field("name"), arguments));
            }
            // Block types odek does not use (server tools, citations) are left out.
            _ => {}
        }
    }

    fn finish(self, usage: Usage, stop_reason: Option<&str>) -> ChatResponse {
        let mut message = Message::assistant(self.content);
        message.reasoning_content = (!self.reasoning.is_empty()).then_some(self.reasoning);
        message.tool_calls = self.calls;
        if !self.opaque.is_empty() {
            message.provider_state = Some(Box::new(ProviderState {
                wire: WIRE.into(),
                origin: None,
                items: self.opaque,
            }));
        }
        ChatResponse {
            message,
            usage,
            finish_reason: stop_reason.map(finish_reason),
        }
    }
}

/// A stop reason in the chat vocabulary the engine reads.
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" | "model_context_window_exceeded" => "length",
        "refusal" => "content_filter",
        other => other,
    }
    .to_string()
}

/// A block being streamed.
struct OpenBlock {
    index: u64,
    block: Value,
    input: String,
}

/// The events of a streamed answer folded into one.
#[derive(Default)]
pub(super) struct StreamFold {
    answer: Answer,
    open: Vec<OpenBlock>,
    usage: Usage,
    stop_reason: Option<String>,
    stopped: bool,
}

impl StreamFold {
    fn open_block(&mut self, index: u64) -> Option<&mut OpenBlock> {
        self.open.iter_mut().find(|b| b.index == index)
    }

    fn start_block(&mut self, event: &Value) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let mut block = event.get("content_block").cloned().unwrap_or(Value::Null);
        if block.get("type").and_then(Value::as_str) == Some("tool_use") {
            // The input comes as JSON text in the deltas.
            if let Some(b) = block.as_object_mut() {
                b.remove("input");
            }
        }
        self.open.push(OpenBlock {
            index,
            block,
            input: String::new(),
        });
    }

    fn apply_delta(&mut self, event: &Value, emit: &mut dyn FnMut(Delta<'_>)) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(delta) = event.get("delta") else {
            return;
        };
        let Some(open) = self.open_block(index) else {
            return;
        };
        let piece = |field: &str| delta.get(field).and_then(Value::as_str).unwrap_or("");
        match delta.get("type").and_then(Value::as_str).unwrap_or("") {
            "text_delta" => {
                append(&mut open.block, "text", piece("text"));
                emit_some(emit, Delta::Content(piece("text")));
            }
            "thinking_delta" => {
                append(&mut open.block, "thinking", piece("thinking"));
                emit_some(emit, Delta::Reasoning(piece("thinking")));
            }
            "signature_delta" => append(&mut open.block, "signature", piece("signature")),
            "input_json_delta" => open.input.push_str(piece("partial_json")),
            _ => {}
        }
    }

    fn stop_block(&mut self, event: &Value) {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        if let Some(at) = self.open.iter().position(|b| b.index == index) {
            let done = self.open.remove(at);
            self.answer.add_block(done.block, Some(done.input));
        }
    }

    fn message_delta(&mut self, event: &Value) {
        if let Some(reason) = non_empty_str(event.get("delta").and_then(|d| d.get("stop_reason"))) {
            self.stop_reason = Some(reason.to_string());
        }
        if let Some(usage) = event.get("usage") {
            let later = usage_of(usage);
            self.usage.output_tokens = later.output_tokens;
            if usage.get("input_tokens").is_some() {
                self.usage.input_tokens = later.input_tokens;
                self.usage.cache_read_tokens = later.cache_read_tokens;
                self.usage.cache_write_tokens = later.cache_write_tokens;
            }
        }
    }
}

fn append(block: &mut Value, field: &str, piece: &str) {
    let Some(object) = block.as_object_mut() else {
        return;
    };
    let slot = object
        .entry(field)
        .or_insert_with(|| Value::String(String::new()));
    match slot {
        Value::String(s) => s.push_str(piece),
        other => *other = Value::String(piece.to_string()),
    }
}

fn emit_some(emit: &mut dyn FnMut(Delta<'_>), delta: Delta<'_>) {
    if let Delta::Content(t) | Delta::Reasoning(t) = delta
        && t.is_empty()
    {
        return;
    }
    emit(delta);
}

impl EventFold for StreamFold {
    fn push_event(
        &mut self,
        name: &str,
        data: &str,
        emit: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, LlmError> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let event = event_json(data)?;
        let kind = non_empty_str(event.get("type")).unwrap_or(name);
        match kind {
            "message_start" => {
                if let Some(usage) = event.get("message").and_then(|m| m.get("usage")) {
                    self.usage = usage_of(usage);
                }
            }
            "content_block_start" => self.start_block(&event),
            "content_block_delta" => self.apply_delta(&event, emit),
            "content_block_stop" => self.stop_block(&event),
            "message_delta" => self.message_delta(&event),
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => return Err(event_error(&event)),
            // `ping` and event types added later.
            _ => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<ChatResponse, LlmError> {
        if !self.stopped && self.stop_reason.is_none() {
            return Err(LlmError::BrokenAnswer(
                "the stream ended before the answer did (no message_stop)".into(),
            ));
        }
        let mut answer = self.answer;
        // Blocks a stream left open are kept as far as they came.
        for open in self.open {
            answer.add_block(open.block, Some(open.input));
        }
        Ok(answer.finish(self.usage, self.stop_reason.as_deref()))
    }

    fn usage_so_far(&self) -> Usage {
        self.usage
    }
}

#[cfg(test)]
mod tests;
