//! One sample per server, each written in that server's documented error shape.

use super::*;

fn sample(status: u16, body: &str) -> Overflow {
    recognise(status, body).unwrap_or_else(|| panic!("not recognised: {body}"))
}

fn sizes(o: &Overflow) -> (Option<u64>, Option<u64>) {
    (o.requested, o.limit)
}

#[test]
fn openai_by_its_code() {
    let o = sample(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    );
    assert_eq!(o.server, "OpenAI-style (OpenAI, vLLM, DeepSeek)");
    assert_eq!(o.words, "context_length_exceeded");
    assert_eq!(sizes(&o), (Some(130_412), Some(128_000)));
}

#[test]
fn llama_cpp_by_its_type_and_fields() {
    let o = sample(
        400,
        r#"{"error":{"code":400,"message":"request (25595 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":25595,"n_ctx":8192}}"#,
    );
    assert_eq!(
        (o.server, o.words),
        ("llama.cpp", "exceed_context_size_error")
    );
    assert_eq!(sizes(&o), (Some(25_595), Some(8192)));
    assert_eq!(
        o.to_string(),
        "llama.cpp wording \"exceed_context_size_error\": 25595 tokens sent, 8192 available"
    );
}

#[test]
fn llama_cpp_of_older_builds_by_its_message() {
    let o = sample(
        400,
        r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing the context size or enable context shift","type":"invalid_request_error"}}"#,
    );
    assert_eq!(o.server, "llama.cpp");
    assert_eq!(sizes(&o), (None, None));
}

#[test]
fn vllm_both_generations() {
    let old = sample(
        400,
        r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
    );
    assert_eq!(old.words, "maximum context length");
    assert_eq!(sizes(&old), (Some(4096), Some(4096)), "the messages' share");
    let new = sample(
        400,
        r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.","type":"BadRequestError","param":null,"code":400}}"#,
    );
    assert_eq!(sizes(&new), (Some(5000), Some(4096)));
}

#[test]
fn ollama_as_a_client_error_and_as_a_500() {
    let compat = sample(
        400,
        r#"{"error":{"message":"the input length exceeds the context length","type":"invalid_request_error","param":null,"code":null}}"#,
    );
    assert_eq!(compat.server, "Ollama");
    let native = sample(
        500,
        r#"{"error":"the input length exceeds the context length"}"#,
    );
    assert_eq!(native.server, "Ollama");
}

#[test]
fn litellm_wrapping_llama_cpp() {
    let o = sample(
        400,
        r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - request (25595 tokens) exceeds the available context size (8192 tokens), try increasing it\nmodel=local-qwen. context_window_fallbacks=None. fallbacks=None.\n\nSet 'context_window_fallback' - https://docs.litellm.ai/docs/routing#fallbacks. Received Model Group=local-qwen\nAvailable Model Group Fallbacks=None","type":null,"param":null,"code":"400"}}"#,
    );
    assert_eq!(
        (o.server, o.words),
        ("LiteLLM", "contextwindowexceedederror")
    );
    assert_eq!(sizes(&o), (Some(25_595), Some(8192)));
}

#[test]
fn deepseek() {
    let o = sample(
        400,
        r#"{"error":{"message":"This model's maximum context length is 131072 tokens. However, you requested 140321 tokens (140321 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
    );
    assert_eq!(o.server, "OpenAI-style (OpenAI, vLLM, DeepSeek)");
    assert_eq!(sizes(&o), (Some(140_321), Some(131_072)));
}

#[test]
fn mistral() {
    let o = sample(
        400,
        r#"{"object":"error","message":"Prompt contains 40123 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_message_error","param":null,"code":null}"#,
    );
    assert_eq!(o.server, "Mistral");
    assert_eq!(sizes(&o), (Some(40_123), Some(32_768)));
}

#[test]
fn openrouter() {
    let o = sample(
        400,
        r#"{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 150000 tokens (146000 of text input, 4000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400,"metadata":{"provider_name":null}}}"#,
    );
    assert_eq!(o.server, "OpenRouter");
    assert_eq!(
        sizes(&o),
        (Some(146_000), Some(131_072)),
        "the input's share"
    );
}

#[test]
fn anthropic_natively_and_through_a_compatible_gateway() {
    let o = sample(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208000 tokens > 200000 maximum"}}"#,
    );
    assert_eq!(o.server, "Anthropic");
    assert_eq!(sizes(&o), (Some(208_000), Some(200_000)));
}

#[test]
fn a_gateway_that_rewraps_the_body_as_a_string() {
    let o = sample(
        400,
        r#"{"detail":"{\"error\":{\"code\":400,\"message\":\"request (9000 tokens) exceeds the available context size (4096 tokens), try increasing it\",\"type\":\"exceed_context_size_error\"}}"}"#,
    );
    assert_eq!(o.server, "llama.cpp");
    assert_eq!(sizes(&o), (Some(9000), Some(4096)));
}

#[test]
fn the_go_originals_phrases_still_count() {
    let o = sample(
        413,
        r#"{"error":{"message":"Input is too long for this model"}}"#,
    );
    assert_eq!((o.server, o.words), ("generic", "input is too long"));
    let plain = sample(400, "This model's Maximum Context Length is 8192");
    assert_eq!(plain.limit, Some(8192));
}

#[test]
fn what_is_not_an_overflow() {
    assert_eq!(
        recognise(400, r#"{"error":{"message":"invalid tool schema"}}"#),
        None
    );
    assert_eq!(
        recognise(
            429,
            "Request too large on tokens per min (TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced; context length"
        ),
        None,
        "a 429 is a rate limit"
    );
    assert_eq!(
        recognise(500, "context length"),
        None,
        "generic words on a 5xx"
    );
    assert_eq!(recognise(200, "context length"), None);
    assert_eq!(recognise(503, "upstream unavailable"), None);
}

/// A validation error that echoes the request back (odek's own survival notes say "context
/// window") is read by its message, not by what it echoes.
#[test]
fn words_echoed_from_the_request_are_not_an_overflow() {
    let echo = r#"{"error":{"message":"invalid value for 'tool_choice'","type":"invalid_request_error"},"input":{"messages":[{"role":"system","content":"[Context trimmed to survive: the conversation history exceeded the model's context window.]"}]}}"#;
    assert_eq!(recognise(400, echo), None);
    let pydantic = r#"{"detail":[{"loc":["body","messages",1],"msg":"field required","input":"the context window"}]}"#;
    assert_eq!(recognise(422, pydantic), None);
}

#[test]
fn every_size_pattern_compiles() {
    assert_eq!(LIMIT_PATTERNS.len(), 5);
    assert_eq!(REQUESTED_PATTERNS.len(), 8);
}
