use serde_json::{Value, json};

use super::*;
use crate::llm::sse::read_event_pieces;
use crate::llm::{ImagePart, RequestMessages, ToolDef};

fn settings(thinking: Option<crate::llm::ThinkingMode>) -> WireSettings<'static> {
    WireSettings {
        model: "claude-test",
        temperature: Some(0.2),
        thinking,
    }
}

fn encoded(messages: &[Message], tools: &[ToolDef], thinking: bool) -> Value {
    let request = ChatRequest {
        messages: RequestMessages::new(messages),
        tools,
        stream: true,
        max_tokens: None,
        on_retry: None,
    };
    let mode = thinking.then_some(crate::llm::ThinkingMode::Low);
    let body = encode(&request, &settings(mode)).expect("encodes");
    serde_json::from_slice(&body).expect("json")
}

fn cache_points(body: &Value) -> usize {
    body.to_string().matches("\"cache_control\"").count()
}

fn thinking_block() -> Value {
    json!({"type": "thinking", "thinking": "I should list.", "signature": "EqQBCkgIARABGAIiQL+sk-ant-api03-AAAA/+=="})
}

/// A conversation with a tool round, a hint and the plan sent last.
fn conversation() -> Vec<Message> {
    let mut call = Message::assistant("Looking.");
    call.tool_calls = vec![
        ToolCall::new("call_1_0", "shell", r#"{"command":"ls"}"#),
        ToolCall::new("call:1.1", "read_file", "not json"),
    ];
    call.provider_state = Some(Box::new(ProviderState {
        wire: WIRE.into(),
        origin: None,
        items: vec![thinking_block()],
    }));
    vec![
        Message::system("You are odek."),
        Message::system("Memory: the user likes tea."),
        Message::user("list files"),
        call,
        Message::tool_result("call_1_0", "shell", "a\nb"),
        Message::tool_result("call:1.1", "read_file", ""),
        Message::system("Plan: step 1 in progress"),
    ]
}

fn tool() -> ToolDef {
    ToolDef {
        name: "shell".into(),
        description: "run".into(),
        parameters: json!({"type": "object"}),
    }
}

#[test]
fn a_conversation_goes_as_system_blocks_and_alternating_turns() {
    let body = encoded(&conversation(), &[tool(), tool()], false);
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"][0]["text"], "You are odek.");
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(body["system"][1]["text"], "Memory: the user likes tea.");
    assert!(body["system"][1].get("cache_control").is_none());
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
    let turns = body["messages"].as_array().expect("turns");
    let roles: Vec<&str> = turns.iter().filter_map(|t| t["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let assistant = &turns[1]["content"];
    assert_eq!(assistant[0], thinking_block(), "thinking first, verbatim");
    assert_eq!(assistant[1], json!({"type": "text", "text": "Looking."}));
    assert_eq!(assistant[2]["input"], json!({"command": "ls"}));
    assert_eq!(assistant[3]["id"], "call_1_1");
    assert_eq!(assistant[3]["input"], json!({"arguments": "not json"}));
    let results = &turns[2]["content"];
    assert_eq!(results[0]["tool_use_id"], "call_1_0");
    assert_eq!(results[1]["tool_use_id"], "call_1_1");
    assert_eq!(results[1]["content"], "(no output)");
    assert_eq!(
        results[1]["cache_control"]["type"], "ephemeral",
        "the breakpoint is on the last block before the plan"
    );
    assert!(
        results[2]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("<system-reminder>\nPlan: step 1"))
    );
    assert!(results[2].get("cache_control").is_none());
    assert_eq!(turns[0]["content"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(cache_points(&body), 4);
}

#[test]
fn the_cached_prefix_of_one_request_is_a_prefix_of_the_next() {
    let first = conversation();
    let mut next = first.clone();
    let plan = next.pop().expect("plan");
    next.push(Message::assistant("Done."));
    next.push(Message::user("thanks"));
    next.push(Message::system("Plan: all done"));
    let a = without_cache_points(encoded(&first, &[tool()], false));
    let b = encoded(&next, &[tool()], false);
    assert!(cache_points(&b) <= 4);
    let b = without_cache_points(b);
    // Up to the first request's last breakpoint, the second says the same (breakpoints
    // mark places; they are not part of the prompt).
    let a_turns = a["messages"].as_array().expect("turns");
    let b_turns = b["messages"].as_array().expect("turns");
    assert_eq!(a_turns[0], b_turns[0]);
    assert_eq!(a_turns[1], b_turns[1]);
    let a_results = a_turns[2]["content"].as_array().expect("blocks");
    let b_results = b_turns[2]["content"].as_array().expect("blocks");
    assert_eq!(a_results[..2], b_results[..2]);
    assert!(plan.content.starts_with("Plan"));
}

fn without_cache_points(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            map.remove("cache_control");
            for v in map.values_mut() {
                *v = without_cache_points(v.take());
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                *v = without_cache_points(v.take());
            }
        }
        _ => {}
    }
    value
}

#[test]
fn thinking_sets_a_budget_and_leaves_temperature_out() {
    let body = encoded(&conversation(), &[], true);
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS + 2048);
    assert!(body.get("temperature").is_none());
    assert!(body.get("tools").is_none());
}

#[test]
fn images_go_as_base64_sources_or_are_counted_out() {
    let mut user = Message::user("what is this?");
    user.images
        .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
    let messages = [user];
    let body = encoded(&messages, &[], false);
    let blocks = &body["messages"][0]["content"];
    assert_eq!(
        blocks[1]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": "iVBORw=="})
    );
    let request = ChatRequest {
        messages: RequestMessages::new(&messages).with_images(false),
        tools: &[],
        stream: false,
        max_tokens: Some(100),
        on_retry: None,
    };
    let body: Value =
        serde_json::from_slice(&encode(&request, &settings(None)).expect("encodes")).expect("json");
    assert_eq!(body["max_tokens"], 100);
    let text = body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.ends_with("[1 image(s) omitted: this model does not take images]"));
}

#[test]
fn a_conversation_that_does_not_start_with_the_user_gets_a_first_turn() {
    let messages = [Message::system("s"), Message::assistant("")];
    let body = encoded(&messages, &[], false);
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][1]["content"][0]["text"], EMPTY_TURN);
}

/// Server-sent events as Anthropic writes them.
fn events(list: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for event in list {
        let name = event["type"].as_str().unwrap_or("message");
        out.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    out.into_bytes()
}

fn streamed_answer() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 12, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 30, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "I should "}}),
        json!({"type": "ping"}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "list."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkgIARABGAIiQL+sk-ant-api03-AAAA/+=="}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Look"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ing."}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"comm"}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "and\": \"ls\"}"}}),
        json!({"type": "content_block_stop", "index": 3}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}}),
        json!({"type": "message_stop"}),
    ]
}

#[test]
fn a_streamed_answer_keeps_thinking_verbatim_beside_text_and_calls() {
    let bytes = events(&streamed_answer());
    let (a, b) = bytes.split_at(333);
    let answer = read_event_pieces(vec![a.to_vec(), b.to_vec()], StreamFold::default())
        .expect("ready")
        .expect("answer");
    let m = &answer.message;
    assert_eq!(m.content, "Looking.");
    assert_eq!(m.reasoning_content.as_deref(), Some("I should list."));
    assert_eq!(
        m.tool_calls,
        [ToolCall::new("toolu_1", "shell", r#"{"command": "ls"}"#)]
    );
    let state = m.provider_state.as_ref().expect("opaque state");
    assert_eq!(state.wire, "anthropic");
    assert_eq!(state.items, [thinking_block()]);
    assert_eq!(answer.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: 142,
            output_tokens: 42,
            cache_read_tokens: 100,
            cache_write_tokens: 30,
            reasoning_tokens: 0,
        }
    );
    // Sent back, the thinking block is the one received.
    let messages = [Message::user("list"), m.clone()];
    let body = encoded(&messages, &[], true);
    assert_eq!(body["messages"][1]["content"][0], thinking_block());
}

#[test]
fn a_cut_stream_an_error_event_and_a_broken_chunk_fail_as_they_should() {
    let mut cut = streamed_answer();
    cut.truncate(9);
    let result = read_event_pieces(vec![events(&cut)], StreamFold::default()).expect("ready");
    assert!(
        matches!(result, Err(LlmError::BrokenAnswer(_))),
        "{result:?}"
    );

    let mut overloaded = streamed_answer();
    overloaded.truncate(5);
    overloaded.push(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let result =
        read_event_pieces(vec![events(&overloaded)], StreamFold::default()).expect("ready");
    assert!(
        matches!(&result, Err(LlmError::BrokenAnswer(m)) if m.contains("overloaded_error")),
        "{result:?}"
    );

    let invalid =
        [json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})];
    let result = read_event_pieces(vec![events(&invalid)], StreamFold::default()).expect("ready");
    assert!(matches!(result, Err(LlmError::Protocol(_))), "{result:?}");

    let broken = b"event: message_start\ndata: {not json\n\n".to_vec();
    let result = read_event_pieces(vec![broken], StreamFold::default()).expect("ready");
    assert!(
        matches!(result, Err(LlmError::BrokenAnswer(_))),
        "{result:?}"
    );
}

#[test]
fn a_buffered_answer_reads_like_a_streamed_one() {
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant",
        "content": [
            thinking_block(),
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"},
            {"type": "text", "text": "Hi."},
            {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "a"}},
        ],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 5, "output_tokens": 7},
    });
    let answer = parse_body(body.to_string().as_bytes()).expect("answer");
    assert_eq!(answer.message.content, "Hi.");
    assert_eq!(
        answer.message.tool_calls[0].function.arguments,
        r#"{"path":"a"}"#
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("length"));
    assert_eq!(answer.usage.input_tokens, 5);
    let state = answer.message.provider_state.expect("state");
    assert_eq!(state.items.len(), 2);
    let error = parse_body(
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    assert!(matches!(error, Err(LlmError::BrokenAnswer(_))));
    assert!(matches!(parse_body(b"{}"), Err(LlmError::BrokenAnswer(_))));
}

#[test]
fn the_provider_state_is_kept_in_a_session_and_never_sent_over_chat() {
    let mut m = Message::assistant("x");
    m.provider_state = Some(Box::new(ProviderState {
        wire: WIRE.into(),
        origin: None,
        items: vec![thinking_block()],
    }));
    let saved = serde_json::to_string(&m).expect("json");
    assert!(saved.contains("\"provider_state\""));
    let back: Message = serde_json::from_str(&saved).expect("parses");
    assert_eq!(back, m);
    let all = [m];
    let wire = serde_json::to_string(&RequestMessages::new(&all)).expect("json");
    assert!(!wire.contains("provider_state"), "{wire}");
}

#[test]
fn a_tool_results_image_goes_in_its_tool_result_and_only_the_newest() {
    let shot = |id: &str, bytes: &[u8]| {
        let mut result = Message::tool_result(id, "browser", "screenshot");
        result
            .images
            .push(ImagePart::from_bytes("image/jpeg", bytes));
        result
    };
    let call = |id: &str| {
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall::new(id, "browser", "{}")];
        call
    };
    let mut messages = vec![Message::user("look"), call("c1"), shot("c1", b"one")];
    let body = encoded(&messages, &[], false);
    let content = &body["messages"][2]["content"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "screenshot"}));
    assert_eq!(
        content[1]["source"],
        json!({"type": "base64", "media_type": "image/jpeg", "data": "b25l"})
    );
    messages.extend([call("c2"), shot("c2", b"two")]);
    let body = encoded(&messages, &[], false);
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        "screenshot\n\n[1 image(s) omitted: only the newest are sent]"
    );
    assert_eq!(
        body["messages"][4]["content"][0]["content"][1]["source"]["data"],
        "dHdv"
    );
}
