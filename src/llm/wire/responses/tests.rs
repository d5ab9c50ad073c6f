use serde_json::{Value, json};

use super::*;
use crate::llm::sse::read_event_pieces;
use crate::llm::wire::KeptEncodings;
use crate::llm::{ImagePart, RequestMessages, ThinkingMode, ToolDef};

fn reasoning_item() -> Value {
    json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check the file."}],
           "encrypted_content": "gAAAAABsk-proj-AAAA+/=="})
}

fn encoded(messages: &[Message], thinking: Option<ThinkingMode>) -> Value {
    let tools = [ToolDef {
        name: "read_file".into(),
        description: "read".into(),
        parameters: json!({"type": "object"}),
    }];
    let request = ChatRequest {
        messages: RequestMessages::new(messages),
        tools: &tools,
        stream: true,
        max_tokens: Some(500),
        on_retry: None,
    };
    let settings = WireSettings {
        model: "gpt-test",
        temperature: Some(0.3),
        thinking,
    };
    let body = encode(&request, &settings, &mut KeptEncodings::default()).expect("encodes");
    let value: Value = serde_json::from_slice(&body).expect("json");
    // Compact JSON, keys in the order they were inserted: what one serialisation writes.
    assert_eq!(serde_json::to_vec(&value).expect("json"), body);
    value
}

#[test]
fn a_conversation_goes_as_input_items_with_reasoning_back_verbatim() {
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new("call_1", "read_file", r#"{"path":"a"}"#)];
    call.provider_state = Some(Box::new(ProviderState {
        wire: WIRE.into(),
        origin: None,
        items: vec![reasoning_item()],
    }));
    let mut other = Message::assistant("earlier");
    other.provider_state = Some(Box::new(ProviderState {
        wire: "anthropic".into(),
        origin: None,
        items: vec![json!({"type": "thinking"})],
    }));
    let mut user = Message::user("look");
    user.images
        .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
    let messages = [
        Message::system("You are odek."),
        user,
        other,
        call,
        Message::tool_result("call_1", "read_file", "contents"),
        Message::system("Plan: step 1"),
    ];
    let body = encoded(&messages, Some(ThinkingMode::High));
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert!(body.get("temperature").is_none());
    assert_eq!(body["max_output_tokens"], 500);
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "name": "read_file", "description": "read",
               "parameters": {"type": "object"}, "strict": false})
    );
    let input = body["input"].as_array().expect("items");
    assert_eq!(
        input[0],
        json!({"type": "message", "role": "system", "content": "You are odek."})
    );
    assert_eq!(input[1]["content"][1]["type"], "input_image");
    assert_eq!(
        input[2],
        json!({"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "earlier"}]}),
        "another wire's state is not sent"
    );
    assert_eq!(input[3], reasoning_item(), "reasoning first, as received");
    assert_eq!(
        input[4],
        json!({"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a\"}"})
    );
    assert_eq!(
        input[5],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "contents"})
    );
    assert_eq!(input[6]["content"], "Plan: step 1");
    let plain = encoded(&messages[..2], None);
    assert_eq!(plain["temperature"], 0.3);
    assert!(plain.get("reasoning").is_none());
}

fn events(list: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for event in list {
        let name = event["type"].as_str().unwrap_or("message");
        out.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    out.into_bytes()
}

fn streamed() -> Vec<Value> {
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "read_file", "arguments": "{\"path\":\"a\"}", "status": "completed"});
    let message = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]});
    vec![
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Check "}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "the file."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item()}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Read"}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "ing."}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": message}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": "{\"path\""}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": call}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
            "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 800},
                      "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 25}, "total_tokens": 940}}}),
    ]
}

#[test]
fn a_streamed_answer_keeps_reasoning_items_beside_text_and_calls() {
    let bytes = events(&streamed());
    let (a, b) = bytes.split_at(700);
    let answer = read_event_pieces(vec![a.to_vec(), b.to_vec()], StreamFold::default())
        .expect("ready")
        .expect("answer");
    let m = &answer.message;
    assert_eq!(m.content, "Reading.");
    assert_eq!(m.reasoning_content.as_deref(), Some("Check the file."));
    assert_eq!(
        m.tool_calls,
        [ToolCall::new("call_9", "read_file", r#"{"path":"a"}"#)]
    );
    assert_eq!(
        m.provider_state.as_ref().map(|s| s.items.clone()),
        Some(vec![reasoning_item()])
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(answer.usage.input_tokens, 900);
    assert_eq!(answer.usage.cache_read_tokens, 800);
    assert_eq!(answer.usage.output_tokens, 40);
    assert_eq!(answer.usage.reasoning_tokens, 25);
}

#[test]
fn cut_failed_and_incomplete_streams_say_so() {
    let mut cut = streamed();
    cut.truncate(8);
    let result = read_event_pieces(vec![events(&cut)], StreamFold::default()).expect("ready");
    assert!(
        matches!(result, Err(LlmError::BrokenAnswer(_))),
        "{result:?}"
    );
    let failed = [
        json!({"type": "response.failed", "response": {"status": "failed",
        "error": {"code": "server_error", "message": "boom"}}}),
    ];
    let result = read_event_pieces(vec![events(&failed)], StreamFold::default()).expect("ready");
    assert!(
        matches!(result, Err(LlmError::BrokenAnswer(_))),
        "{result:?}"
    );
    let error = [json!({"type": "error", "code": "invalid_prompt", "message": "no"})];
    let result = read_event_pieces(vec![events(&error)], StreamFold::default()).expect("ready");
    assert!(matches!(result, Err(LlmError::Protocol(_))), "{result:?}");
    let incomplete = [
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "cut"}]}]}}),
    ];
    let answer = read_event_pieces(vec![events(&incomplete)], StreamFold::default())
        .expect("ready")
        .expect("answer");
    assert_eq!(answer.message.content, "cut");
    assert_eq!(answer.finish_reason.as_deref(), Some("length"));
}

#[test]
fn a_buffered_response_reads_like_a_streamed_one() {
    let body = json!({"id": "resp_1", "object": "response", "status": "completed",
        "output": [reasoning_item(),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
            {"type": "web_search_call", "id": "ws_1"}],
        "usage": {"input_tokens": 10, "output_tokens": 3}});
    let answer = parse_body(body.to_string().as_bytes()).expect("answer");
    assert_eq!(answer.message.content, "Hi.");
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        answer.message.provider_state.map(|s| s.items.len()),
        Some(1)
    );
    let error = parse_body(br#"{"error": {"code": "server_error", "message": "x"}}"#);
    assert!(matches!(error, Err(LlmError::BrokenAnswer(_))));
    assert!(matches!(parse_body(b"{}"), Err(LlmError::BrokenAnswer(_))));
}

#[test]
fn a_request_reusing_the_kept_items_is_the_request_encoded_afresh() {
    let tools = [ToolDef {
        name: "read_file".into(),
        description: "read \"it\"".into(),
        parameters: json!({"type": "object"}),
    }];
    let settings = WireSettings {
        model: "gpt-test",
        temperature: None,
        thinking: Some(ThinkingMode::High),
    };
    let both = |kept: &mut KeptEncodings, messages: &[Message], images: bool| {
        let request = ChatRequest {
            messages: RequestMessages::new(messages).with_images(images),
            tools: &tools,
            stream: false,
            max_tokens: None,
            on_retry: None,
        };
        let reused = encode(&request, &settings, kept).expect("encodes");
        let fresh = encode(&request, &settings, &mut KeptEncodings::default()).expect("encodes");
        assert_eq!(
            String::from_utf8_lossy(&reused),
            String::from_utf8_lossy(&fresh)
        );
        serde_json::from_slice::<Value>(&reused).expect("json")
    };
    let mut kept = KeptEncodings::default();
    let mut all = vec![Message::system("prompt"), Message::user("task")];
    both(&mut kept, &all, true);
    // An assistant turn with neither text nor calls has no item: nothing between commas.
    all.push(Message::assistant(""));
    let mut call = Message::assistant("looking");
    call.tool_calls = vec![ToolCall::new("call_1", "read_file", r#"{"path":"a"}"#)];
    call.provider_state = Some(Box::new(ProviderState {
        wire: WIRE.into(),
        origin: None,
        items: vec![reasoning_item()],
    }));
    all.push(call);
    all.push(Message::tool_result("call_1", "read_file", "line\n"));
    let body = both(&mut kept, &all, true);
    let types: Vec<&str> = body["input"]
        .as_array()
        .expect("input")
        .iter()
        .map(|i| i["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    all[1].content.push_str(" (edited)");
    all[1]
        .images
        .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
    both(&mut kept, &all, true);
    both(&mut kept, &all, false);
    all.remove(0);
    both(&mut kept, &all, false);
    // Only empty turns: an empty input.
    let body = both(&mut kept, &[Message::assistant("")], true);
    assert_eq!(body["input"], json!([]));
}

#[test]
fn a_tool_results_image_follows_its_output_as_a_user_item() {
    let mut call = Message::assistant("");
    call.tool_calls = vec![ToolCall::new("c1", "browser", "{}")];
    let mut shot = Message::tool_result("c1", "browser", "screenshot");
    shot.images
        .push(ImagePart::from_bytes("image/jpeg", b"one"));
    let mut older = shot.clone();
    older.tool_call_id = Some("c0".into());
    let body = encoded(&[Message::user("look"), call, shot], None);
    let input = &body["input"];
    assert_eq!(
        input[2],
        json!({"type": "function_call_output", "call_id": "c1", "output": "screenshot"})
    );
    assert_eq!(
        input[3],
        json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "[image from tool call c1]"},
            {"type": "input_image", "image_url": "data:image/jpeg;base64,b25l"}]})
    );
    // An older one (before the newest's batch) goes as text with a note.
    let body = encoded(&[older, Message::assistant("again"), body_shot()], None);
    assert_eq!(
        body["input"][0]["output"],
        "screenshot\n\n[1 image(s) omitted: only the newest are sent]"
    );
    assert_eq!(body["input"].as_array().map(Vec::len), Some(4));
}

fn body_shot() -> Message {
    let mut shot = Message::tool_result("c2", "browser", "screenshot");
    shot.images
        .push(ImagePart::from_bytes("image/jpeg", b"two"));
    shot
}

#[test]
fn a_batchs_images_follow_its_last_output() {
    let mut call = Message::assistant("");
    call.tool_calls = vec![
        ToolCall::new("c1", "browser", "{}"),
        ToolCall::new("c2", "browser", "{}"),
    ];
    let mut shot = Message::tool_result("c1", "browser", "screenshot");
    shot.images
        .push(ImagePart::from_bytes("image/jpeg", b"one"));
    let plain = Message::tool_result("c2", "browser", "clicked");
    let body = encoded(&[Message::user("look"), call, shot, plain], None);
    let types: Vec<&str> = body["input"]
        .as_array()
        .expect("input")
        .iter()
        .map(|i| i["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        [
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "message"
        ]
    );
    assert_eq!(
        body["input"][5]["content"][0]["text"],
        "[image from tool call c1]"
    );
}
