//! A browser screenshot reaches the model as an image part (issue 65): the real binary, a
//! real headless Chromium, a page served on loopback. On Chat Completions the tool message
//! keeps its text and a user message after it carries the image; on Anthropic's Messages
//! the image is a block of the `tool_result`; on Responses a user item follows the
//! function's output. Only the newest screenshot is sent; a model without images gets the
//! refusal and no image.

use base64::Engine as _;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, ResponseTemplate, matchers};

use crate::support::*;

/// What every JPEG starts with.
const JPEG_MAGIC: &[u8] = b"\xff\xd8\xff";

/// A page on loopback worth a look.
async fn site() -> MockServer {
    let page = "<title>Shot</title><h1 style=\"color:#c00\">Look at me</h1>";
    let site = MockServer::start().await;
    Mock::given(matchers::path("/"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"))
        .mount(&site)
        .await;
    site
}

/// The model's script: open the page, then `screenshots` screenshots, then "done".
fn script(url: &str, screenshots: usize) -> Vec<Reply> {
    let mut replies = vec![tools(&[("browser", json!({"action": "open", "url": url}))])];
    for _ in 0..screenshots {
        replies.push(tools(&[("browser", json!({"action": "screenshot"}))]));
    }
    replies.push(text("done"));
    replies
}

/// Runs `odek run` with the browser on, `images` as said, and `env`.
async fn run(sb: &Sandbox, server: &ScriptedServer, images: bool, env: &[(&str, &str)]) {
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .env("ODEK_IMAGES", if images { "true" } else { "false" })
        .envs(env.iter().copied())
        .args(["run", "look at the page"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

/// Every string under `value` that is an image's `data:` URL (or a base64 source's data).
fn image_urls(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if s.starts_with("data:image/") => found.push(s.clone()),
            Value::Object(map) if map.get("type") == Some(&json!("base64")) => {
                let (kind, data) = (&map["media_type"], map["data"].as_str().unwrap_or(""));
                found.push(format!(
                    "data:{};base64,{data}",
                    kind.as_str().unwrap_or("")
                ));
            }
            Value::Object(map) => stack.extend(map.values()),
            Value::Array(list) => stack.extend(list),
            _ => {}
        }
    }
    found
}

/// The bytes of a `data:image/jpeg;base64,` URL, checked to be a JPEG.
fn jpeg(url: &str) -> Vec<u8> {
    let data = url
        .strip_prefix("data:image/jpeg;base64,")
        .unwrap_or_else(|| panic!("not a JPEG data URL: {}", &url[..url.len().min(40)]));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64");
    assert!(bytes.starts_with(JPEG_MAGIC), "a JPEG");
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_goes_to_a_chat_model_as_an_image_part_after_its_tool_message() {
    let site = site().await;
    let server = ScriptedServer::start(script(&site.uri(), 2)).await;
    let sb = Sandbox::new();
    run(&sb, &server, true, &[]).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "open, two screenshots, the answer");
    assert!(image_urls(&requests[1]).is_empty(), "no image before");
    // After the first screenshot: the tool message's text, then the image as the user's.
    let after = messages(&requests[2]);
    let at = after
        .iter()
        .rposition(|m| m["role"] == "tool")
        .expect("a result");
    let id = after[at]["tool_call_id"].as_str().expect("an id");
    assert!(after[at]["content"].is_string(), "{}", after[at]);
    let shown = &after[at + 1];
    assert_eq!(shown["role"], "user");
    assert_eq!(
        shown["content"][0],
        json!({"type": "text", "text": format!("[image from tool call {id}]")})
    );
    let url = shown["content"][1]["image_url"]["url"]
        .as_str()
        .expect("an image_url part");
    assert!(url.starts_with("data:image/jpeg;base64,"));
    let first = jpeg(url);
    assert!(first.len() > 1_000, "a picture: {} bytes", first.len());
    eprintln!(
        "screenshot: {} bytes of JPEG, {} in base64",
        first.len(),
        url.len()
    );
    // After the second: one image, the newest; the first is a note.
    let last = &requests[3];
    assert_eq!(image_urls(last).len(), 1, "only the newest is sent");
    let notes = tool_results(last)
        .iter()
        .filter(|r| r.ends_with("[1 image(s) omitted: only the newest are sent]"))
        .count();
    assert_eq!(notes, 1);
    // The session keeps both, as parts of the tool messages.
    let saved: Value = serde_json::from_str(&read(only_session_path(&sb))).expect("json");
    assert_eq!(image_urls(&saved["messages"]).len(), 2, "both kept");
    // Continued: the newest still goes, once; with images off, none, each result noted.
    for (images, sent, note) in [
        ("true", 1, "only the newest are sent]"),
        ("false", 0, "this model does not take images]"),
    ] {
        // The session goes on with the server it started with.
        server.push(vec![text("still there")]);
        let mut cmd = sb.odek(&server.base_url());
        cmd.env("ODEK_IMAGES", images)
            .args(["continue", "and now?"]);
        let out = output(cmd).await;
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let request = &server.requests().pop().expect("a request");
        assert_eq!(image_urls(request).len(), sent, "images {images}");
        let noted = tool_results(request)
            .iter()
            .filter(|r| r.ends_with(note))
            .count();
        assert_eq!(noted, 2 - sent, "images {images}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_images_a_screenshot_is_refused_and_no_image_is_sent() {
    let site = site().await;
    let server = ScriptedServer::start(script(&site.uri(), 1)).await;
    let sb = Sandbox::new();
    run(&sb, &server, false, &[]).await;
    let requests = server.requests();
    let last = requests.last().expect("a request");
    let results = tool_results(last);
    let refusal = unwrap_untrusted(results.last().expect("a result"));
    assert!(
        refusal.contains("this model does not take images"),
        "{refusal}"
    );
    assert!(refusal.contains("snapshot"), "{refusal}");
    assert!(requests.iter().all(|r| image_urls(r).is_empty()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_screenshot_goes_in_the_tool_result_on_anthropic_and_after_the_output_on_responses() {
    let site = site().await;
    // Anthropic's Messages: the tool_result's content is [text, image].
    let server = ScriptedServer::start_anthropic(script(&site.uri(), 1)).await;
    let sb = Sandbox::new();
    let env = [
        (
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-test-key-0123456789abcdef",
        ),
        ("ODEK_MODEL", "claude-test"),
        ("ODEK_PROVIDER", "anthropic"),
    ];
    run(&sb, &server, true, &env).await;
    let last = server.requests().pop().expect("a request");
    let result = last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .rfind(|b| b["type"] == "tool_result")
        .cloned()
        .expect("a tool_result");
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(result["content"][1]["type"], "image");
    assert_eq!(result["content"][1]["source"]["media_type"], "image/jpeg");
    jpeg(&image_urls(&result)[0]);
    // Responses: a user item with an input_image after the function_call_output.
    let server = ScriptedServer::start_responses(script(&site.uri(), 1)).await;
    let sb = Sandbox::new();
    let env = [
        ("OPENAI_API_KEY", "sk-openai-0123456789abcdef"),
        ("ODEK_MODEL", "gpt-5-mini"),
        ("ODEK_PROVIDER", "openai"),
    ];
    run(&sb, &server, true, &env).await;
    let last = server.requests().pop().expect("a request");
    let input = last["input"].as_array().expect("input");
    let at = input
        .iter()
        .rposition(|i| i["type"] == "function_call_output")
        .expect("an output");
    assert!(input[at]["output"].is_string());
    assert_eq!(input[at + 1]["role"], "user");
    let image = &input[at + 1]["content"][1];
    assert_eq!(image["type"], "input_image");
    jpeg(image["image_url"].as_str().expect("a url"));
}
