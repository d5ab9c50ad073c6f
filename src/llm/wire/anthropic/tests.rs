use serde_json::{Value, json};

use super::*;
use crate::llm::sse::read_event_pieces;
use crate::llm::wire::KeptEncodings;
use crate::llm::{ImagePart, RequestMessages, ThinkingMode, ToolDef};

fn settings(thinking: Option<ThinkingMode>) -> WireSettings<'static> {
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
    let mode = thinking.then_some(ThinkingMode::Low);
    let body = encode(&request, &settings(mode), &mut KeptEncodings::default()).expect("encodes");
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
    let body = encode(&request, &settings(None), &mut KeptEncodings::default()).expect("encodes");
    let body: Value = serde_json::from_slice(&body).expect("json");
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

/// A tool result with a screenshot.
fn shot(id: &str, bytes: &[u8]) -> Message {
    let mut result = Message::tool_result(id, "browser", "screenshot");
    result
        .images
        .push(ImagePart::from_bytes("image/jpeg", bytes));
    result
}

/// An answer with thinking, text and calls.
fn answer(text: &str, ids: &[&str]) -> Message {
    let mut call = Message::assistant(text);
    call.tool_calls = ids
        .iter()
        .map(|id| ToolCall::new(*id, "read_file", r#"{"path":"a"}"#))
        .collect();
    call.provider_state = Some(Box::new(ProviderState {
        wire: WIRE.into(),
        origin: None,
        items: vec![thinking_block()],
    }));
    call
}

#[test]
fn a_request_reusing_the_kept_blocks_is_the_request_encoded_afresh() {
    let tools = [tool(), tool()];
    let both = |kept: &mut KeptEncodings, messages: RequestMessages<'_>| {
        let request = ChatRequest {
            messages,
            tools: &tools,
            stream: true,
            max_tokens: None,
            on_retry: None,
        };
        let settings = settings(Some(ThinkingMode::High));
        let reused = encode(&request, &settings, kept).expect("encodes");
        let fresh = encode(&request, &settings, &mut KeptEncodings::default()).expect("encodes");
        assert_eq!(
            String::from_utf8_lossy(&reused),
            String::from_utf8_lossy(&fresh)
        );
        serde_json::from_slice::<Value>(&reused).expect("json")
    };
    let memory = Message::system("Memory: tea \"hot\"");
    let mut kept = KeptEncodings::default();
    // The plan is kept second and sent last, the memory block sent second.
    let mut all = vec![
        Message::system("You are odek."),
        Message::system("Plan: step 1"),
        Message::user("list\tfiles"),
    ];
    let body = both(
        &mut kept,
        RequestMessages::with_last(&all, 1).with_second(Some(&memory)),
    );
    assert_eq!(body["system"].as_array().map(Vec::len), Some(2));
    // Growing by tool rounds: the breakpoints move to the newest results.
    for round in 0..3 {
        let id = format!("call:{round}");
        all.push(answer(&format!("round {round}"), &[&id, "c2"]));
        all.push(Message::tool_result(&id, "read_file", "line\n"));
        all.push(Message::tool_result("c2", "read_file", ""));
        all[1].content = format!("Plan: step {round}");
        let body = both(
            &mut kept,
            RequestMessages::with_last(&all, 1).with_second(Some(&memory)),
        );
        assert_eq!(cache_points(&body), 4);
        let turns = body["messages"].as_array().expect("turns");
        let last = turns.last().expect("a turn")["content"]
            .as_array()
            .expect("blocks");
        assert_eq!(last[1]["cache_control"]["type"], "ephemeral");
        assert!(
            last[2]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Plan: step"))
        );
    }
    // A hint mid-conversation, an empty user message, an answer with nothing in it.
    all.push(Message::system("Hint: <look> \u{7f} é"));
    all.push(Message::user("  "));
    all.push(Message::assistant(""));
    all.push(Message::user("go on"));
    both(
        &mut kept,
        RequestMessages::with_last(&all, 1).with_second(Some(&memory)),
    );
    // An edit in place, and images: sent, a newer one, then left out.
    all[2].content.push_str(" (edited)");
    all[2]
        .images
        .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
    all.push(answer("", &["s1"]));
    all.push(shot("s1", b"one"));
    both(
        &mut kept,
        RequestMessages::with_last(&all, 1).with_second(Some(&memory)),
    );
    all.push(answer("again", &["s2"]));
    all.push(shot("s2", b"two"));
    let body = both(
        &mut kept,
        RequestMessages::with_last(&all, 1).with_second(Some(&memory)),
    );
    assert_eq!(body.to_string().matches("\"type\":\"image\"").count(), 2);
    both(
        &mut kept,
        RequestMessages::with_last(&all, 1)
            .with_second(Some(&memory))
            .with_images(false),
    );
    // The first message removed: every place shifts, the memory block leads.
    all.remove(0);
    both(
        &mut kept,
        RequestMessages::with_last(&all, 0).with_second(Some(&memory)),
    );
    // A system message kept at its place, leading the conversation and then inside it.
    let first = [
        Message::system("a"),
        Message::system("b"),
        Message::user("u"),
    ];
    both(&mut kept, RequestMessages::new(&first));
    let second = [Message::system("a"), Message::user("v"), Message::user("u")];
    both(&mut kept, RequestMessages::new(&second));
    let third = [
        Message::system("a"),
        Message::assistant("v"),
        Message::system("b"),
    ];
    let body = both(&mut kept, RequestMessages::new(&third));
    assert_eq!(
        body["messages"][0]["content"][0]["text"],
        "(the conversation continues)"
    );
    // Nothing but a blank system message; nothing at all.
    both(&mut kept, RequestMessages::new(&[Message::system(" ")]));
    both(&mut kept, RequestMessages::new(&[]));
}

/// Histories grown, edited and cut at random (the same sequence every run), each request
/// sent with the plan moved last or not, the memory block or not, images or not.
#[test]
fn random_histories_reuse_the_bytes_of_a_fresh_encoding() {
    let mut seed: u64 = 0x1234_5678;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let tools = [tool()];
    for run in 0..50 {
        let mut kept = KeptEncodings::default();
        let mut all: Vec<Message> = Vec::new();
        let memory = Message::system("mem \"x\"\n");
        for step in 0..40 {
            let op = next(14);
            let m = match op {
                0 => Message::system(if next(3) == 0 { " " } else { "sys\u{1}\t" }),
                1 => Message::user(if next(4) == 0 { "" } else { "u\"</" }),
                2 => answer(if next(2) == 0 { "" } else { "txt" }, &["c:1", "c2"]),
                3 => Message::assistant(if next(2) == 0 { "" } else { "  " }),
                9 => answer("", &[]),
                4 => Message::tool_result("c:1", "read_file", if next(2) == 0 { "" } else { "r" }),
                5 => shot("c2", b"img"),
                6 => {
                    let mut u = Message::user("pic");
                    u.images.push(ImagePart::from_bytes("image/png", b"p"));
                    u
                }
                7 if !all.is_empty() => {
                    let at = next(all.len() as u64) as usize;
                    all.remove(at);
                    continue;
                }
                8 if !all.is_empty() => {
                    let at = next(all.len() as u64) as usize;
                    all[at].content.push('!');
                    continue;
                }
                _ => {
                    let mut a = Message::assistant("plain");
                    a.tool_calls = vec![ToolCall::new("x y", "shell", "")];
                    a
                }
            };
            all.push(m);
            let last = next(all.len() as u64 + 2) as usize;
            let mut messages = RequestMessages::with_last(&all, last);
            if next(3) == 0 {
                messages = messages.with_second(Some(&memory));
            }
            messages = messages.with_images(next(5) != 0);
            let request = ChatRequest {
                messages,
                tools: if next(2) == 0 { &tools } else { &[] },
                stream: next(2) == 0,
                max_tokens: if next(2) == 0 { Some(7) } else { None },
                on_retry: None,
            };
            let settings = settings(if next(2) == 0 {
                Some(ThinkingMode::High)
            } else {
                None
            });
            let reused = encode(&request, &settings, &mut kept).expect("encodes");
            let fresh =
                encode(&request, &settings, &mut KeptEncodings::default()).expect("encodes");
            assert_eq!(
                String::from_utf8_lossy(&reused),
                String::from_utf8_lossy(&fresh),
                "run {run} step {step}"
            );
        }
    }
}

/// The body of [`conversation`] as the encoder built of `serde_json::Value`s wrote it before
/// the kept encodings (the same bytes keep the providers' prompt caches).
const BODY_BEFORE: &str = r#"{"model":"claude-test","max_tokens":10240,"system":[{"type":"text","text":"You are odek.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Memory: the user likes tea."}],"messages":[{"role":"user","content":[{"type":"text","text":"list files","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"I should list.","signature":"EqQBCkgIARABGAIiQL+sk-ant-api03-AAAA/+=="},{"type":"text","text":"Looking."},{"type":"tool_use","id":"call_1_0","name":"shell","input":{"command":"ls"}},{"type":"tool_use","id":"call_1_1","name":"read_file","input":{"arguments":"not json"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1_0","content":"a\nb"},{"type":"tool_result","tool_use_id":"call_1_1","content":"(no output)","cache_control":{"type":"ephemeral"}},{"type":"text","text":"<system-reminder>\nPlan: step 1 in progress\n</system-reminder>"}]}],"tools":[{"name":"shell","description":"run","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"thinking":{"type":"enabled","budget_tokens":2048},"stream":true}"#;

#[test]
fn the_body_is_byte_for_byte_the_one_sent_before() {
    let all = conversation();
    let request = ChatRequest {
        messages: RequestMessages::new(&all),
        tools: &[tool()],
        stream: true,
        max_tokens: None,
        on_retry: None,
    };
    let settings = settings(Some(ThinkingMode::Low));
    let mut kept = KeptEncodings::default();
    for _ in 0..2 {
        let body = encode(&request, &settings, &mut kept).expect("encodes");
        assert_eq!(String::from_utf8_lossy(&body), BODY_BEFORE);
    }
}
