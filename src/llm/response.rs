//! Parsing of chat-completion answers, shared by the HTTP client, the streaming path and the
//! replay model (so a recording is read exactly as a server answer would be).
//!
//! Tolerant by design: `content` may be null or an array of text parts, tool-call `arguments`
//! may be an object instead of a string, ids may be missing, and `reasoning_content` (or the
//! `reasoning` spelling some servers use) is kept beside content and tool calls.

use serde_json::{Map, Value, json};

use super::{ChatResponse, LlmError, Message, ProviderState, ToolCall, Usage};

/// Largest answer body read into memory.
pub(crate) const MAX_BODY_BYTES: usize = 50 * 1024 * 1024;

/// Parses a buffered chat-completion body.
pub(crate) fn parse_completion_body(body: &[u8]) -> Result<ChatResponse, LlmError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| LlmError::BrokenAnswer(format!("the answer is not JSON: {e}")))?;
    parse_completion(&value)
}

/// Parses a chat-completion answer already decoded as JSON.
pub(crate) fn parse_completion(value: &Value) -> Result<ChatResponse, LlmError> {
    if let Some(message) = embedded_error(value) {
        return Err(LlmError::Protocol(format!("server error: {message}")));
    }
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or_else(|| LlmError::BrokenAnswer("the answer has no choices".into()))?;
    let message = match choice.get("message") {
        Some(m) if m.is_object() => parse_assistant_message(m),
        _ => {
            return Err(LlmError::BrokenAnswer(
                "the answer's choice has no message".into(),
            ));
        }
    };
    Ok(ChatResponse {
        message,
        usage: value.get("usage").map(parse_usage).unwrap_or_default(),
        finish_reason: non_empty_str(choice.get("finish_reason")).map(str::to_string),
    })
}

/// The text of an `{"error": …}` object some servers send with a 200 status (or mid-stream).
pub(crate) fn embedded_error(value: &Value) -> Option<String> {
    let error = value.get("error").filter(|e| !e.is_null())?;
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| error.as_str().map(str::to_string))
        .unwrap_or_else(|| error.to_string());
    Some(message)
}

fn parse_assistant_message(value: &Value) -> Message {
    let mut message = Message::assistant(text_of(value.get("content")));
    message.reasoning_content = reasoning_of(value).map(str::to_string);
    let calls = value.get("tool_calls").and_then(Value::as_array);
    let parsed: Vec<(ToolCall, Map<String, Value>)> = calls
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| Some((parse_tool_call(c)?, call_extras(c))))
                .collect()
        })
        .unwrap_or_default();
    let (calls, extras): (Vec<_>, Vec<_>) = parsed.into_iter().unzip();
    message.tool_calls = calls;
    message.provider_state = chat_state(extras);
    message
}

/// The fields of a tool call beyond the protocol's own (`id`, `type`, `index`,
/// `function`), kept verbatim to be sent back: Gemini's `extra_content` with its thought
/// signature, which its OpenAI-compatible endpoint requires on the next request.
pub(crate) fn call_extras(call: &Value) -> Map<String, Value> {
    let known = ["id", "type", "index", "function"];
    call.as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !known.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The Chat Completions wire's opaque state of a message: each call's extras by its
/// position, `None` when no call had any.
pub(crate) fn chat_state(extras: Vec<Map<String, Value>>) -> Option<Box<ProviderState>> {
    let items: Vec<Value> = extras
        .into_iter()
        .enumerate()
        .filter(|(_, e)| !e.is_empty())
        .map(|(i, e)| json!({"call": i, "fields": e}))
        .collect();
    (!items.is_empty()).then(|| {
        Box::new(ProviderState {
            wire: CHAT_WIRE.to_string(),
            origin: None,
            items,
        })
    })
}

/// The name of the Chat Completions wire in a message's provider state.
pub(crate) const CHAT_WIRE: &str = "chat";

/// Reasoning text of a message or a stream delta (`reasoning_content`, else `reasoning`).
pub(crate) fn reasoning_of(value: &Value) -> Option<&str> {
    non_empty_str(value.get("reasoning_content")).or_else(|| non_empty_str(value.get("reasoning")))
}

fn parse_tool_call(value: &Value) -> Option<ToolCall> {
    let function = value.get("function")?;
    Some(ToolCall::new(
        value.get("id").and_then(Value::as_str).unwrap_or(""),
        function.get("name").and_then(Value::as_str).unwrap_or(""),
        arguments_text(function.get("arguments")),
    ))
}

/// Tool-call arguments as raw JSON text: strings are kept, objects are re-serialised.
pub(crate) fn arguments_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Message text: a string, null, or an array of `{"type":"text","text":…}` parts.
fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect(),
        _ => String::new(),
    }
}

pub(crate) fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// Token usage from an OpenAI-style `usage` object, with DeepSeek's cache fields.
///
/// OpenAI reports cached prompt tokens in `prompt_tokens_details.cached_tokens`, DeepSeek in
/// `prompt_cache_hit_tokens` (and sometimes both): the larger is taken so they are never
/// double-counted. DeepSeek's `prompt_cache_miss_tokens` are written to its cache.
pub(crate) fn parse_usage(value: &Value) -> Usage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let openai_cached = count(value.pointer("/prompt_tokens_details/cached_tokens"));
    let deepseek_hit = count(value.get("prompt_cache_hit_tokens"));
    Usage {
        input_tokens: count(value.get("prompt_tokens")),
        output_tokens: count(value.get("completion_tokens")),
        cache_read_tokens: openai_cached.max(deepseek_hit),
        cache_write_tokens: count(value.get("prompt_cache_miss_tokens")),
        reasoning_tokens: count(value.pointer("/completion_tokens_details/reasoning_tokens")),
    }
}

/// Serialises a response in the chat-completion shape that [`parse_completion`] reads back
/// unchanged (the replay file format).
pub(crate) fn completion_to_json(response: &ChatResponse) -> Value {
    let message = serde_json::to_value(&response.message).unwrap_or(Value::Null);
    let mut choice = Map::new();
    choice.insert("index".into(), json!(0));
    choice.insert("message".into(), message);
    choice.insert(
        "finish_reason".into(),
        response
            .finish_reason
            .as_deref()
            .map_or(Value::Null, Value::from),
    );
    json!({ "choices": [Value::Object(choice)], "usage": usage_to_json(&response.usage) })
}

fn usage_to_json(usage: &Usage) -> Value {
    let mut out = Map::new();
    out.insert("prompt_tokens".into(), json!(usage.input_tokens));
    out.insert("completion_tokens".into(), json!(usage.output_tokens));
    if usage.cache_read_tokens > 0 {
        out.insert(
            "prompt_tokens_details".into(),
            json!({ "cached_tokens": usage.cache_read_tokens }),
        );
    }
    if usage.cache_write_tokens > 0 {
        out.insert(
            "prompt_cache_miss_tokens".into(),
            json!(usage.cache_write_tokens),
        );
    }
    if usage.reasoning_tokens > 0 {
        out.insert(
            "completion_tokens_details".into(),
            json!({ "reasoning_tokens": usage.reasoning_tokens }),
        );
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ChatResponse, LlmError> {
        parse_completion_body(text.as_bytes())
    }

    #[test]
    fn content_reasoning_and_usage() {
        let r = parse(
            r#"{"choices":[{"message":{"role":"assistant","content":"hi","reasoning_content":"think"},"finish_reason":"stop"}],
               "usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#,
        )
        .expect("parses");
        assert_eq!(r.message.content, "hi");
        assert_eq!(r.message.reasoning_content.as_deref(), Some("think"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 3,
                cache_read_tokens: 4,
                cache_write_tokens: 0,
                reasoning_tokens: 0,
            }
        );
    }

    #[test]
    fn tool_calls_tolerate_objects_missing_ids_and_content_beside() {
        let r = parse(
            r#"{"choices":[{"message":{"content":"let me look","tool_calls":[
                {"id":"a","type":"function","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}},
                {"function":{"name":"read_file","arguments":{"path":"x"}}}]},"finish_reason":"tool_calls"}]}"#,
        )
        .expect("parses");
        assert_eq!(r.message.content, "let me look");
        assert_eq!(r.message.tool_calls.len(), 2);
        assert_eq!(r.message.tool_calls[0].id, "a");
        assert_eq!(r.message.tool_calls[1].id, "");
        assert_eq!(
            r.message.tool_calls[1].function.arguments,
            r#"{"path":"x"}"#
        );
        assert_eq!(r.usage, Usage::default());
    }

    #[test]
    fn null_content_array_content_and_deepseek_cache_fields() {
        let r = parse(
            r#"{"choices":[{"message":{"content":null}}],"usage":{"prompt_tokens":9,"prompt_cache_hit_tokens":5,"prompt_cache_miss_tokens":4}}"#,
        )
        .expect("parses");
        assert_eq!(r.message.content, "");
        assert_eq!(r.usage.cache_read_tokens, 5);
        assert_eq!(r.usage.cache_write_tokens, 4);
        let parts = parse(
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}"#,
        )
        .expect("parses");
        assert_eq!(parts.message.content, "ab");
    }

    #[test]
    fn no_choices_bad_json_and_embedded_errors() {
        let e = parse(r#"{"choices":[]}"#).expect_err("no choices");
        assert_eq!(
            e.to_string(),
            "llm: broken answer: the answer has no choices"
        );
        assert!(matches!(parse("{not json"), Err(LlmError::BrokenAnswer(_))));
        let e = parse(r#"{"error":{"message":"model overloaded"}}"#).expect_err("error");
        assert!(e.to_string().contains("model overloaded"));
    }

    /// Gemini's OpenAI-compatible endpoint adds a thought signature to each call and wants
    /// it back: kept beside the message, sent inside the call, stored apart in a session.
    #[test]
    fn a_calls_extra_fields_go_back_inside_the_call_and_nowhere_else() {
        let r = parse(
            r#"{"choices":[{"message":{"tool_calls":[
                {"id":"a","type":"function","function":{"name":"shell","arguments":"{}"}},
                {"id":"b","type":"function","function":{"name":"glob","arguments":"{}"},
                 "extra_content":{"google":{"thought_signature":"sig/B=="}}}]}}]}"#,
        )
        .expect("parses");
        let state = r.message.provider_state.as_deref().expect("state");
        assert_eq!(state.wire, CHAT_WIRE);
        assert_eq!(
            state.items,
            vec![
                json!({"call": 1, "fields": {"extra_content": {"google": {"thought_signature": "sig/B=="}}}})
            ]
        );
        let messages = [r.message.clone()];
        let sent = serde_json::to_value(crate::llm::RequestMessages::new(&messages)).unwrap();
        let calls = &sent[0]["tool_calls"];
        assert!(calls[0].get("extra_content").is_none());
        assert_eq!(
            calls[1]["extra_content"]["google"]["thought_signature"],
            "sig/B=="
        );
        assert_eq!(calls[1]["function"]["name"], "glob");
        assert!(sent[0].get("provider_state").is_none());
        let saved = serde_json::to_value(&r.message).unwrap();
        assert!(saved["tool_calls"][1].get("extra_content").is_none());
        assert_eq!(saved["provider_state"]["wire"], "chat");
        let back: Message = serde_json::from_value(saved).unwrap();
        assert_eq!(back, r.message);
        // No extras: no state.
        let plain = parse(
            r#"{"choices":[{"message":{"tool_calls":[{"id":"a","index":0,"type":"function","function":{"name":"shell","arguments":"{}"}}]}}]}"#,
        )
        .expect("parses");
        assert!(plain.message.provider_state.is_none());
    }

    #[test]
    fn serialised_response_round_trips() {
        let mut message = Message::assistant("done");
        message.reasoning_content = Some("why".into());
        message.tool_calls = vec![ToolCall::new("c1", "shell", r#"{"command":"ls"}"#)];
        let response = ChatResponse {
            message,
            usage: Usage {
                input_tokens: 7,
                output_tokens: 2,
                cache_read_tokens: 3,
                cache_write_tokens: 4,
                reasoning_tokens: 5,
            },
            finish_reason: Some("tool_calls".into()),
        };
        let back = parse_completion(&completion_to_json(&response)).expect("parses");
        assert_eq!(back, response);
    }
}
