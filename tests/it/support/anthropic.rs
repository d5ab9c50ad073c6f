//! The scripted server's answers in Anthropic's Messages format: the same [`Reply`] scripts,
//! rendered as a `message` body or as its event stream (`message_start`, content blocks with
//! their deltas, `message_delta`, `message_stop`, with `ping`s between). A scripted message
//! may carry thinking blocks under [`THINKING_KEY`]; they are streamed as `thinking_delta`s
//! and a `signature_delta`.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use super::{Reply, USAGE_KEY, WireFormat, event_stream};

/// Where a scripted message keeps the thinking blocks it answers with (never sent as is).
pub const THINKING_KEY: &str = "__thinking";

/// A scripted answer with these thinking blocks before its text and calls.
pub fn with_thinking(reply: Reply, blocks: Value) -> Reply {
    super::with_field(reply, THINKING_KEY, blocks)
}

/// Anthropic's Messages.
pub struct Anthropic;

impl WireFormat for Anthropic {
    fn message(message: &Value, stream: bool) -> ResponseTemplate {
        answer(message, stop_reason(message), stream)
    }

    fn cut_off(message: &Value, stream: bool) -> ResponseTemplate {
        answer(message, "max_tokens", stream)
    }

    fn pieces(parts: Vec<String>, stream: bool) -> ResponseTemplate {
        if !stream {
            return answer(
                &json!({"role": "assistant", "content": parts.concat()}),
                "end_turn",
                false,
            );
        }
        let mut events = vec![message_start(&json!({}))];
        events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
        for part in &parts {
            events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}));
        }
        events.push(json!({"type": "content_block_stop", "index": 0}));
        events.extend(end("end_turn", &json!({})));
        event_stream(&events)
    }
}

fn stop_reason(message: &Value) -> &'static str {
    if message["tool_calls"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// The content blocks of a scripted (chat-shaped) message.
pub fn blocks(message: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = message[THINKING_KEY]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        out.push(json!({"type": "text", "text": text}));
    }
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        let args = call["function"]["arguments"].as_str().unwrap_or("{}");
        let input: Value = serde_json::from_str(args).unwrap_or(json!({}));
        out.push(json!({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": input}));
    }
    out
}

/// Anthropic's usage of a scripted message: [`super::with_usage`]'s chat figures turned into
/// Anthropic's (cached input counted apart), else 100 in and 20 out.
fn usage(message: &Value) -> Value {
    let Some(u) = message.get(USAGE_KEY) else {
        return json!({"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0});
    };
    if u.get("input_tokens").is_some() {
        return u.clone();
    }
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    json!({"input_tokens": prompt - cached, "cache_read_input_tokens": cached,
           "cache_creation_input_tokens": 0, "output_tokens": u["completion_tokens"]})
}

fn answer(message: &Value, stop: &str, stream: bool) -> ResponseTemplate {
    if stream {
        return event_stream(&events(message, stop));
    }
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": "claude-scripted",
        "content": blocks(message), "stop_reason": stop, "stop_sequence": null,
        "usage": usage(message),
    }))
}

fn message_start(message: &Value) -> Value {
    let mut u = usage(message);
    u["output_tokens"] = json!(1);
    json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message",
        "role": "assistant", "model": "claude-scripted", "content": [], "stop_reason": null,
        "stop_sequence": null, "usage": u}})
}

fn end(stop: &str, message: &Value) -> Vec<Value> {
    vec![
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": usage(message)["output_tokens"]}}),
        json!({"type": "message_stop"}),
    ]
}

/// The events of a streamed answer: each block opened, filled in pieces (text in
/// 7-character pieces, a call's input JSON split in the middle), closed.
pub fn events(message: &Value, stop: &str) -> Vec<Value> {
    let mut out = vec![message_start(message), json!({"type": "ping"})];
    for (index, block) in blocks(message).iter().enumerate() {
        let (start, deltas) = block_pieces(block);
        out.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        for delta in deltas {
            out.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        out.push(json!({"type": "content_block_stop", "index": index}));
    }
    out.extend(end(stop, message));
    out
}

fn block_pieces(block: &Value) -> (Value, Vec<Value>) {
    let pieces = |text: &str| -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(7).map(|c| c.iter().collect()).collect()
    };
    match block["type"].as_str().unwrap_or("") {
        "text" => (
            json!({"type": "text", "text": ""}),
            pieces(block["text"].as_str().unwrap_or(""))
                .into_iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect(),
        ),
        "thinking" => {
            let mut deltas: Vec<Value> = pieces(block["thinking"].as_str().unwrap_or(""))
                .into_iter()
                .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                .collect();
            deltas.push(json!({"type": "signature_delta", "signature": block["signature"]}));
            (
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                deltas,
            )
        }
        "tool_use" => {
            let input = block["input"].to_string();
            let mid = (0..=input.len() / 2)
                .rev()
                .find(|i| input.is_char_boundary(*i))
                .unwrap_or(0);
            let (a, b) = input.split_at(mid);
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                vec![
                    json!({"type": "input_json_delta", "partial_json": a}),
                    json!({"type": "input_json_delta", "partial_json": b}),
                ],
            )
        }
        // Blocks that arrive whole (`redacted_thinking`).
        _ => (block.clone(), Vec::new()),
    }
}

/// The text of the last user turn of an Anthropic request (its text blocks).
pub fn last_user_text(request: &Value) -> String {
    let turns = request["messages"].as_array().cloned().unwrap_or_default();
    let Some(turn) = turns.iter().rev().find(|t| t["role"] == "user") else {
        return String::new();
    };
    turn["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
