//! The scripted server's answers in OpenAI's Responses format: the same [`Reply`] scripts,
//! rendered as a `response` object or as its event stream (`response.created`, each output
//! item added, its deltas, done, `response.completed`). A scripted message may carry
//! reasoning items under [`REASONING_KEY`]; their summaries stream as
//! `response.reasoning_summary_text.delta`s.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use super::{Reply, USAGE_KEY, WireFormat, event_stream};

/// Where a scripted message keeps the reasoning items it answers with.
pub const REASONING_KEY: &str = "__reasoning";

/// A scripted answer with these reasoning items before its text and calls.
pub fn with_reasoning(reply: Reply, items: Value) -> Reply {
    super::with_field(reply, REASONING_KEY, items)
}

/// OpenAI's Responses API.
pub struct Responses;

impl WireFormat for Responses {
    fn message(message: &Value, stream: bool) -> ResponseTemplate {
        answer(message, None, stream)
    }

    fn cut_off(message: &Value, stream: bool) -> ResponseTemplate {
        answer(message, Some("max_output_tokens"), stream)
    }

    fn pieces(parts: Vec<String>, stream: bool) -> ResponseTemplate {
        let message = json!({"role": "assistant", "content": parts.concat(), "__pieces": parts});
        answer(&message, None, stream)
    }
}

/// The output items of a scripted (chat-shaped) message.
pub fn items(message: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = message[REASONING_KEY]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(text) = message["content"].as_str().filter(|t| !t.is_empty()) {
        out.push(json!({"type": "message", "id": "msg_scripted", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}));
    }
    for (i, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        out.push(json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": call["id"],
            "name": call["function"]["name"], "arguments": call["function"]["arguments"], "status": "completed"}));
    }
    out
}

fn usage(message: &Value) -> Value {
    let u = message.get(USAGE_KEY);
    let count = |field: &str| u.and_then(|u| u[field].as_u64());
    let input = count("prompt_tokens").unwrap_or(100);
    let output = count("completion_tokens").unwrap_or(20);
    let cached = u
        .and_then(|u| u["prompt_tokens_details"]["cached_tokens"].as_u64())
        .unwrap_or(0);
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": input + output})
}

fn response(message: &Value, incomplete: Option<&str>, output: Vec<Value>) -> Value {
    json!({"id": "resp_scripted", "object": "response", "created_at": 1, "model": "gpt-scripted",
        "status": if incomplete.is_some() { "incomplete" } else { "completed" },
        "incomplete_details": incomplete.map(|r| json!({"reason": r})),
        "error": null, "output": output, "parallel_tool_calls": true, "tool_choice": "auto",
        "tools": [], "usage": usage(message)})
}

fn answer(message: &Value, incomplete: Option<&str>, stream: bool) -> ResponseTemplate {
    if stream {
        return event_stream(&events(message, incomplete));
    }
    ResponseTemplate::new(200).set_body_json(response(message, incomplete, items(message)))
}

/// The events of a streamed answer.
pub fn events(message: &Value, incomplete: Option<&str>) -> Vec<Value> {
    let mut out = vec![json!({"type": "response.created", "sequence_number": 0,
        "response": response(message, None, Vec::new())})];
    let all = items(message);
    for (index, item) in all.iter().enumerate() {
        let mut added = item.clone();
        match item["type"].as_str().unwrap_or("") {
            "message" => added["content"] = json!([]),
            "reasoning" => added["summary"] = json!([]),
            "function_call" => added["arguments"] = json!(""),
            _ => {}
        }
        out.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        );
        out.extend(deltas(message, item, index));
        out.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    let kind = if incomplete.is_some() {
        "response.incomplete"
    } else {
        "response.completed"
    };
    out.push(json!({"type": kind, "response": response(message, incomplete, all)}));
    for (n, event) in out.iter_mut().enumerate() {
        event["sequence_number"] = json!(n);
    }
    out
}

fn deltas(message: &Value, item: &Value, index: usize) -> Vec<Value> {
    let id = item["id"].clone();
    let pieces = |text: &str| -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars.chunks(7).map(|c| c.iter().collect()).collect()
    };
    match item["type"].as_str().unwrap_or("") {
        "message" => {
            let text = item["content"][0]["text"].as_str().unwrap_or("");
            let parts: Vec<String> = match message["__pieces"].as_array() {
                Some(p) => p
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                None => pieces(text),
            };
            let mut out = vec![
                json!({"type": "response.content_part.added", "item_id": id, "output_index": index,
                "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
            ];
            for p in parts {
                out.push(json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                    "content_index": 0, "delta": p, "logprobs": []}));
            }
            out.push(
                json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
                "content_index": 0, "text": text, "logprobs": []}),
            );
            out.push(
                json!({"type": "response.content_part.done", "item_id": id, "output_index": index,
                "content_index": 0, "part": item["content"][0]}),
            );
            out
        }
        "reasoning" => {
            let text = item["summary"][0]["text"].as_str().unwrap_or("");
            pieces(text)
                .into_iter()
                .map(|p| {
                    json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                    "output_index": index, "summary_index": 0, "delta": p})
                })
                .collect()
        }
        "function_call" => {
            let args = item["arguments"].as_str().unwrap_or("");
            vec![
                json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": args}),
                json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "arguments": args}),
            ]
        }
        _ => Vec::new(),
    }
}

/// Why an input item of a request would be refused, as llama-server's `/v1/responses` refuses
/// it (the strictest reader odek meets): each item says its type, a message its role, an
/// assistant message's parts are `output_text`.
pub fn invalid_input(body: &Value) -> Option<String> {
    let items = body["input"].as_array()?;
    for item in items {
        let ok = match item["type"].as_str() {
            Some("message") => match item["role"].as_str() {
                Some("assistant") => {
                    item["content"].is_string()
                        || item["content"]
                            .as_array()
                            .is_some_and(|parts| parts.iter().all(|p| p["type"] == "output_text"))
                }
                Some("user" | "system" | "developer") => true,
                _ => false,
            },
            Some("function_call") => item["call_id"].is_string() && item["arguments"].is_string(),
            Some("function_call_output") => item["call_id"].is_string(),
            Some("reasoning") => item["summary"].is_array(),
            _ => false,
        };
        if !ok {
            return Some("Cannot determine type of 'item'".into());
        }
    }
    None
}
