//! OpenAI's Chat Completions: the request body. Answers are parsed by `response.rs` and
//! streams folded by `sse::StreamAccumulator`, which the replay model shares.

use serde::Serialize;
use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Value, json};

use super::kept::KeptEncodings;
use super::{ThinkingMode, WireSettings};
use crate::llm::ChatRequest;
use crate::llm::types::ChatWireMessage;

/// The JSON body of `/chat/completions`.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: &'a [Box<RawValue>],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
}

/// The body of `request`, with the encodings of the messages and tools `kept` from the
/// request before where they are the same.
pub(super) fn encode(
    request: &ChatRequest<'_>,
    settings: &WireSettings<'_>,
    kept: &mut KeptEncodings,
) -> Result<Vec<u8>, serde_json::Error> {
    let temperature = match settings.thinking {
        Some(ThinkingMode::Enabled) => Some(1.0),
        _ => settings.temperature,
    };
    kept.keep_messages(&request.messages, |message, images| {
        to_raw_value(&ChatWireMessage(message, images))
    })?;
    kept.keep_tools(request.tools)?;
    let body = RequestBody {
        model: settings.model,
        messages: kept.messages(),
        tools: kept.tools(),
        stream: request.stream,
        stream_options: request.stream.then(|| json!({"include_usage": true})),
        temperature,
        max_tokens: request.max_tokens.filter(|&n| n > 0),
        thinking: settings.thinking.and_then(thinking_field),
        reasoning_effort: settings.thinking.and_then(reasoning_effort),
    };
    let size = body
        .messages
        .iter()
        .map(|m| m.get().len() + 1)
        .sum::<usize>()
        + body.tools.map_or(0, |t| t.get().len())
        + 512;
    let mut out = Vec::with_capacity(size);
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

fn thinking_field(mode: ThinkingMode) -> Option<Value> {
    match mode {
        ThinkingMode::Enabled => mode
            .budget_tokens()
            .map(|budget| json!({"type": "enabled", "budget_tokens": budget})),
        ThinkingMode::Disabled => Some(json!({"type": "disabled"})),
        _ => None,
    }
}

fn reasoning_effort(mode: ThinkingMode) -> Option<&'static str> {
    match mode {
        ThinkingMode::Low => Some("low"),
        ThinkingMode::Medium => Some("medium"),
        ThinkingMode::High => Some("high"),
        ThinkingMode::Enabled | ThinkingMode::Disabled => None,
    }
}
