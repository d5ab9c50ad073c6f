//! OpenAI's Chat Completions: the request body. Answers are parsed by `response.rs` and
//! streams folded by `sse::StreamAccumulator`, which the replay model shares.

use serde::Serialize;
use serde_json::value::{RawValue, to_raw_value};
use serde_json::{Value, json};

use super::kept::KeptEncodings;
use super::{ThinkingMode, WireSettings};
use crate::llm::ChatRequest;
use crate::llm::types::{ChatWireMessage, ToolImagesMessage};

/// The JSON body of `/chat/completions`.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: Flat<'a>,
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
    // The last of the newest tool results with images is kept as an array of two
    // messages: it, and the user message with their images (see `Flat`).
    kept.keep_messages(&request.messages, |message, images, then| {
        let wire = ChatWireMessage(message, images);
        match then {
            [] => to_raw_value(&wire),
            _ => to_raw_value(&(&wire, ToolImagesMessage(then))),
        }
    })?;
    kept.keep_tools(request.tools)?;
    let mut out = kept.body_buffer();
    let body = RequestBody {
        model: settings.model,
        messages: Flat(kept.messages()),
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
        .0
        .iter()
        .map(|m| m.get().len() + 1)
        .sum::<usize>()
        + body.tools.map_or(0, |t| t.get().len())
        + 512;
    out.reserve(size);
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

/// The kept messages as the body's one array: an encoding that is an array (a tool result
/// and the user message with its images) gives its elements.
struct Flat<'a>(&'a [Box<RawValue>]);

impl Serialize for Flat<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for raw in self.0 {
            if !raw.get().starts_with('[') {
                seq.serialize_element(raw)?;
                continue;
            }
            let parts: Vec<&RawValue> =
                serde_json::from_str(raw.get()).map_err(S::Error::custom)?;
            for part in parts {
                seq.serialize_element(part)?;
            }
        }
        seq.end()
    }
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

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::llm::{ImagePart, Message, RequestMessages, ToolCall};

    fn encoded(messages: RequestMessages<'_>, kept: &mut KeptEncodings) -> Value {
        let request = ChatRequest {
            messages,
            tools: &[],
            stream: false,
            max_tokens: None,
            on_retry: None,
        };
        let settings = WireSettings {
            model: "m",
            temperature: None,
            thinking: None,
        };
        let body = encode(&request, &settings, kept).expect("encodes");
        let fresh = encode(&request, &settings, &mut KeptEncodings::default()).expect("encodes");
        assert_eq!(body, fresh, "the kept encodings are the fresh ones");
        serde_json::from_slice(&body).expect("json")
    }

    fn screenshot(id: &str, bytes: &[u8]) -> Message {
        let mut result = Message::tool_result(id, "browser", "screenshot of http://x/");
        result
            .images
            .push(ImagePart::from_bytes("image/jpeg", bytes));
        result
    }

    #[test]
    fn a_tool_results_image_follows_it_in_a_user_message_and_only_the_newest_goes() {
        let mut call = Message::assistant("");
        call.tool_calls = vec![ToolCall::new("c1", "browser", r#"{"action":"screenshot"}"#)];
        let mut all = vec![Message::user("look"), call, screenshot("c1", b"one")];
        let mut kept = KeptEncodings::default();
        let body = encoded(RequestMessages::new(&all), &mut kept);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert_eq!(
            messages[2],
            serde_json::json!({"role": "tool", "content": "screenshot of http://x/",
                "name": "browser", "tool_call_id": "c1"})
        );
        assert_eq!(
            messages[3],
            serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": "[image from tool call c1]"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,b25l"}}]})
        );
        // A second screenshot: the first one's image is left out with a note.
        let mut again = Message::assistant("");
        again.tool_calls = vec![ToolCall::new("c2", "browser", r#"{"action":"screenshot"}"#)];
        all.extend([again, screenshot("c2", b"two")]);
        let body = encoded(RequestMessages::new(&all), &mut kept);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 6, "{messages:?}");
        assert_eq!(
            messages[2]["content"],
            "screenshot of http://x/\n\n[1 image(s) omitted: only the newest are sent]"
        );
        assert_eq!(messages[4]["role"], "tool");
        assert_eq!(
            messages[5]["content"][1]["image_url"]["url"],
            "data:image/jpeg;base64,dHdv"
        );
        // A model without images: each says how many it had, and no user message follows.
        let body = encoded(RequestMessages::new(&all).with_images(false), &mut kept);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 5);
        assert_eq!(
            messages[4]["content"],
            "screenshot of http://x/\n\n[1 image(s) omitted: this model does not take images]"
        );
        // A batch of three results, two with images: the results together, then the images.
        let mut batch = Message::assistant("");
        batch.tool_calls = ["c3", "c4", "c5"]
            .map(|id| ToolCall::new(id, "browser", "{}"))
            .to_vec();
        let plain = Message::tool_result("c4", "browser", "clicked");
        all.extend([batch, screenshot("c3", b"3"), plain, screenshot("c5", b"5")]);
        let body = encoded(RequestMessages::new(&all), &mut kept);
        let messages = body["messages"].as_array().expect("messages");
        let roles: Vec<&str> = messages[5..]
            .iter()
            .map(|m| m["role"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(roles, ["assistant", "tool", "tool", "tool", "user"]);
        let parts: Vec<&str> = messages[9]["content"]
            .as_array()
            .expect("parts")
            .iter()
            .map(|p| {
                p["text"]
                    .as_str()
                    .or(p["image_url"]["url"].as_str())
                    .unwrap_or("")
            })
            .collect();
        assert_eq!(
            parts,
            [
                "[image from tool call c3]",
                "data:image/jpeg;base64,Mw==",
                "[image from tool call c5]",
                "data:image/jpeg;base64,NQ=="
            ]
        );
        assert_eq!(body.to_string().matches("data:image").count(), 2);
        // Dropped again (a trim): the one before is the newest again, kept bytes or not.
        all.truncate(5);
        let body = encoded(RequestMessages::new(&all), &mut kept);
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(6));
        // The session keeps both images as parts of the tool messages.
        let saved = serde_json::to_string(&all).expect("json");
        let back: Vec<Message> = serde_json::from_str(&saved).expect("parses");
        assert_eq!(back, all);
    }
}
