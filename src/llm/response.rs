//! Parsing of chat-completion answers, shared by the HTTP client, the streaming path and the
//! replay model (so a recording is read exactly as a server answer would be).
//!
//! Tolerant by design: `content` may be null or an array of text parts, tool-call `arguments`
//! may be an object instead of a string, ids may be missing, and `reasoning_content` (or the
//! `reasoning` spelling some servers use) is kept beside content and tool calls.

use serde_json::{Map, Value, json};

use super::{ChatResponse, LlmError, Message, ToolCall, Usage};

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
    message.tool_calls = value
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| calls.iter().filter_map(parse_tool_call).collect())
        .unwrap_or_default();
    message
}

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
                cache_write_tokens: 0
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
            },
            finish_reason: Some("tool_calls".into()),
        };
        let back = parse_completion(&completion_to_json(&response)).expect("parses");
        assert_eq!(back, response);
    }
}
