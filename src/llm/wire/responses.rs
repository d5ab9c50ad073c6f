//! OpenAI's Responses API: `POST {base}/responses`, stateless (`store: false`) so that the
//! conversation stays odek's: the whole input every time, and the model's reasoning carried
//! across tool calls as the `reasoning` items it returned (with `encrypted_content`, asked
//! for by `include`), sent back verbatim before the calls they led to.
//!
//! Messages become `message` items (system messages stay where they are, as `system`
//! messages), an assistant's calls `function_call` items, tool results
//! `function_call_output` items; tools are flat functions (`strict: false`: odek's schemas
//! are not written for strict mode).

use serde_json::{Map, Value, json};

use serde_json::value::to_raw_value;

use super::kept::KeptEncodings;
use super::{ThinkingMode, WireSettings};
use crate::llm::response::non_empty_str;
use crate::llm::sse::{EventFold, event_json};
use crate::llm::types::{Images, tool_images_parts};
use crate::llm::{
    ChatRequest, ChatResponse, Delta, LlmError, Message, ProviderState, Role, ToolCall, Usage,
};

/// The wire name kept in a message's provider state.
pub(super) const WIRE: &str = "responses";

/// The body of `request`, with the encodings of the messages' items and of the tools `kept`
/// from the request before where they are the same.
pub(super) fn encode(
    request: &ChatRequest<'_>,
    settings: &WireSettings<'_>,
    kept: &mut KeptEncodings,
) -> Result<Vec<u8>, serde_json::Error> {
    // Each message's items are kept as one JSON array; the body's `input` is their
    // elements, one array after the other.
    kept.keep_messages(&request.messages, |message, images, then| {
        let mut items = Vec::new();
        push_items(&mut items, message, images);
        // A function's output takes no images: the newest outputs' follow them as the user's.
        if !then.is_empty() {
            items.push(tool_images_item(then));
        }
        to_raw_value(&items)
    })?;
    kept.keep_tools_with(request.tools, |tools| {
        let tools = tools.iter().map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
                   "parameters": t.parameters, "strict": false})
        });
        to_raw_value(&tools.collect::<Vec<_>>())
    })?;
    let mut rest = Map::new();
    rest.insert("store".into(), json!(false));
    rest.insert("include".into(), json!(["reasoning.encrypted_content"]));
    if let Some(effort) = settings.thinking.and_then(effort) {
        rest.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
    } else if let Some(t) = settings.temperature {
        rest.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_tokens.filter(|&n| n > 0) {
        rest.insert("max_output_tokens".into(), json!(n));
    }
    rest.insert("stream".into(), json!(request.stream));
    let rest = serde_json::to_vec(&rest)?;
    let size = kept.messages().iter().map(|m| m.get().len()).sum::<usize>()
        + kept.tools().map_or(0, |t| t.get().len())
        + rest.len()
        + settings.model.len()
        + 64;
    let mut out = kept.body_buffer();
    out.reserve(size);
    out.extend_from_slice(b"{\"model\":");
    serde_json::to_writer(&mut out, settings.model)?;
    out.extend_from_slice(b",\"input\":[");
    let mut first = true;
    for items in kept.messages() {
        let items = items.get();
        let inner = items.get(1..items.len().saturating_sub(1)).unwrap_or("");
        if inner.is_empty() {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(inner.as_bytes());
    }
    out.push(b']');
    if let Some(tools) = kept.tools() {
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools.get().as_bytes());
    }
    // `rest` is an object of at least `store`: its fields follow, and its `}` ends the body.
    out.push(b',');
    out.extend_from_slice(rest.get(1..).unwrap_or(b"}"));
    Ok(out)
}

fn effort(mode: ThinkingMode) -> Option<&'static str> {
    match mode {
        ThinkingMode::Low => Some("low"),
        ThinkingMode::Medium | ThinkingMode::Enabled => Some("medium"),
        ThinkingMode::High => Some("high"),
        ThinkingMode::Disabled => None,
    }
}

fn push_items(input: &mut Vec<Value>, message: &Message, images: Images) {
    match message.role {
        // Every item says its type: llama-server's `/v1/responses` refuses a message without
        // one ("Cannot determine type of 'item'"), which OpenAI's API merely allows.
        Role::System => {
            input.push(json!({"type": "message", "role": "system", "content": message.content}))
        }
        Role::User => input.push(user_item(message, images)),
        Role::Tool => input.push(json!({
            "type": "function_call_output",
            "call_id": message.tool_call_id.as_deref().unwrap_or(""),
            "output": images.text(&message.content, message.images.len()),
        })),
        Role::Assistant => {
            input.extend(
                ProviderState::items_for(message.provider_state.as_deref(), WIRE)
                    .iter()
                    .cloned(),
            );
            if !message.content.is_empty() {
                input.push(json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": message.content}]}));
            }
            for call in &message.tool_calls {
                input.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.function.name,
                    "arguments": call.function.arguments,
                }));
            }
        }
    }
}

fn user_item(message: &Message, images: Images) -> Value {
    if message.images.is_empty() || images != Images::Sent {
        let text = images.text(&message.content, message.images.len());
        return json!({"type": "message", "role": "user", "content": text});
    }
    let mut parts = Vec::new();
    push_parts(&mut parts, &message.content, &message.images);
    json!({"type": "message", "role": "user", "content": parts})
}

/// The user message after tool results with their images, each after the text naming its
/// call.
fn tool_images_item(results: &[Message]) -> Value {
    let mut parts = Vec::new();
    for (text, images) in tool_images_parts(results) {
        push_parts(&mut parts, &text, images);
    }
    json!({"type": "message", "role": "user", "content": parts})
}

/// `text` (when any), then `images`, as input parts.
fn push_parts(parts: &mut Vec<Value>, text: &str, images: &[crate::llm::ImagePart]) {
    if !text.is_empty() {
        parts.push(json!({"type": "input_text", "text": text}));
    }
    for image in images {
        parts.push(json!({"type": "input_image", "image_url": image.url}));
    }
}

/// Parses a buffered answer (a `response` object).
pub(super) fn parse_body(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::BrokenAnswer(format!("the answer is not JSON: {e}")))?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        return Err(failure(error));
    }
    let output = value
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::BrokenAnswer("the answer has no output".into()))?;
    Ok(answer_of(output.iter().cloned(), &value))
}

/// A failure the server reported (`error`, a failed response): an overloaded or failing
/// server is a broken answer (retried), anything else an error.
fn failure(error: &Value) -> LlmError {
    let code = non_empty_str(error.get("code"))
        .or_else(|| non_empty_str(error.get("type")))
        .unwrap_or("error");
    let message = non_empty_str(error.get("message")).unwrap_or("");
    match code {
        "server_error" | "rate_limit_exceeded" | "server_is_overloaded" => {
            LlmError::BrokenAnswer(format!("server error in stream: {code}: {message}"))
        }
        _ => LlmError::Protocol(format!("server error: {code}: {message}")),
    }
}

/// The answer of a response's output items and its status and usage.
fn answer_of(items: impl Iterator<Item = Value>, response: &Value) -> ChatResponse {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    let mut opaque = Vec::new();
    for item in items {
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "message" => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let text = non_empty_str(part.get("text"))
                        .or_else(|| non_empty_str(part.get("refusal")))
                        .unwrap_or("");
                    content.push_str(text);
                }
            }
            "function_call" => {
                let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or("");
                calls.push(ToolCall::new(
                    field("call_id"),
                    field("name"),
                    field("arguments"),
                ));
            }
            "reasoning" => {
                for part in item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    reasoning.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""));
                }
                opaque.push(item);
            }
            // Items odek does not use (built-in tools' calls) are left out.
            _ => {}
        }
    }
    let mut message = Message::assistant(content);
    message.reasoning_content = (!reasoning.is_empty()).then_some(reasoning);
    let finish_reason = finish_reason(response, !calls.is_empty());
    message.tool_calls = calls;
    if !opaque.is_empty() {
        message.provider_state = Some(Box::new(ProviderState {
            wire: WIRE.into(),
            origin: None,
            items: opaque,
        }));
    }
    ChatResponse {
        message,
        usage: response.get("usage").map(usage_of).unwrap_or_default(),
        finish_reason: Some(finish_reason.to_string()),
    }
}

fn finish_reason(response: &Value, calls: bool) -> &'static str {
    let incomplete = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    match incomplete {
        Some("max_output_tokens") => "length",
        Some("content_filter") => "content_filter",
        _ if calls => "tool_calls",
        _ => "stop",
    }
}

/// Tokens of `usage`: input includes the cached part, as odek counts it.
fn usage_of(usage: &Value) -> Usage {
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: count("/input_tokens"),
        output_tokens: count("/output_tokens"),
        cache_read_tokens: count("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        reasoning_tokens: count("/output_tokens_details/reasoning_tokens"),
    }
}

/// The events of a streamed answer folded into one: text and reasoning summaries handed on
/// as they come, each finished output item kept (`response.output_item.done`), the whole
/// response's status and usage at the end (`response.completed` or `.incomplete`).
#[derive(Default)]
pub(super) struct StreamFold {
    items: Vec<(u64, Value)>,
    response: Option<Value>,
}

impl EventFold for StreamFold {
    fn push_event(
        &mut self,
        name: &str,
        data: &str,
        emit: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, LlmError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(data == "[DONE]" && self.response.is_some());
        }
        let event = event_json(data)?;
        let kind = non_empty_str(event.get("type")).unwrap_or(name);
        let delta = || non_empty_str(event.get("delta"));
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(text) = delta() {
                    emit(Delta::Content(text));
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(text) = delta() {
                    emit(Delta::Reasoning(text));
                }
            }
            "response.output_item.done" => {
                let index = event.get("output_index").and_then(Value::as_u64);
                if let Some(item) = event.get("item") {
                    let index = index.unwrap_or(self.items.len() as u64);
                    self.items.push((index, item.clone()));
                }
            }
            "response.completed" | "response.incomplete" => {
                self.response = Some(event.get("response").cloned().unwrap_or(Value::Null));
                return Ok(true);
            }
            "response.failed" => {
                let error = event
                    .pointer("/response/error")
                    .cloned()
                    .unwrap_or(Value::Null);
                return Err(failure(&error));
            }
            "error" => return Err(failure(event.get("error").unwrap_or(&event))),
            _ => {}
        }
        Ok(false)
    }

    fn finish(mut self) -> Result<ChatResponse, LlmError> {
        let Some(response) = self.response else {
            return Err(LlmError::BrokenAnswer(
                "the stream ended before the answer did (no response.completed)".into(),
            ));
        };
        // The finished items as they streamed; a server that sent none has them in the
        // final response.
        let items: Vec<Value> = if self.items.is_empty() {
            response
                .get("output")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        } else {
            self.items.sort_by_key(|(index, _)| *index);
            self.items.into_iter().map(|(_, item)| item).collect()
        };
        Ok(answer_of(items.into_iter(), &response))
    }
}

#[cfg(test)]
mod tests;
