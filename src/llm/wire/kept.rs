//! The encoded messages and tools of every wire, kept from one request to the next.
//!
//! Every request of a run repeats the whole conversation, and encoding it again — escaping
//! every string of every message — was the largest cost of the loop (docs/PERFORMANCE.md,
//! "The loop's cost"). A message equal to the one at its place in the previous request
//! keeps that request's bytes (an equality check instead of an encoding); any other is
//! encoded and kept in its place. The bytes are the same either way.

use serde_json::Value;
use serde_json::value::{RawValue, to_raw_value};

use crate::byte_copy::same_bytes;
use crate::llm::types::Images;
use crate::llm::{FunctionCall, Message, RequestMessages, ToolCall, ToolDef};

/// What the previous request sent, with its encodings.
#[derive(Default)]
pub(crate) struct KeptEncodings {
    /// Whether the kept messages were encoded with their images.
    images: bool,
    /// The messages as last sent; `None` for one not kept (it has images: large, and rare).
    sent: Vec<Option<Message>>,
    /// Their encodings, in the same order.
    encoded: Vec<Box<RawValue>>,
    /// The tools as last sent, with their encoding.
    tools: Option<(Vec<ToolDef>, Box<RawValue>)>,
    /// The last request's body, given back once sent, to write the next one into: a fresh
    /// buffer the size of the conversation is fresh pages from the kernel at every request.
    spare: Vec<u8>,
}

impl std::fmt::Debug for KeptEncodings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptEncodings")
            .field("messages", &self.sent.len())
            .field("tools", &self.tools.as_ref().map_or(0, |(t, _)| t.len()))
            .finish()
    }
}

impl KeptEncodings {
    /// Brings the kept encodings in line with `messages` (in the order they are sent):
    /// each message equal to the one kept at its place keeps its bytes; any other is
    /// encoded as `encode` says.
    pub(crate) fn keep_messages(
        &mut self,
        messages: &RequestMessages<'_>,
        encode: impl Fn(&Message, Images, &[Message]) -> serde_json::Result<Box<RawValue>>,
    ) -> serde_json::Result<()> {
        let images = messages.sends_images();
        if images != self.images {
            self.sent.clear();
            self.encoded.clear();
            self.images = images;
        }
        let mut count = 0;
        for (place, (message, sent_images, then)) in messages.iter_with_images().enumerate() {
            count = place + 1;
            // A message followed by others' images is encoded with them, every time.
            if let Some(Some(sent)) = self.sent.get(place)
                && then.is_empty()
                && same(sent, message)
            {
                continue;
            }
            let bytes = encode(message, sent_images, then)?;
            let plain = message.images.is_empty() && then.is_empty();
            let kept = plain.then(|| message.clone());
            if place < self.sent.len() {
                self.sent[place] = kept;
                self.encoded[place] = bytes;
            } else {
                self.sent.push(kept);
                self.encoded.push(bytes);
            }
        }
        self.sent.truncate(count);
        self.encoded.truncate(count);
        Ok(())
    }

    /// Brings the kept encoding of the tools in line with `tools` (none when empty), as the
    /// chat wire sends them.
    pub(crate) fn keep_tools(&mut self, tools: &[ToolDef]) -> serde_json::Result<()> {
        self.keep_tools_with(tools, to_raw_value)
    }

    /// The same, the tools encoded as `encode` says when they changed.
    pub(crate) fn keep_tools_with(
        &mut self,
        tools: &[ToolDef],
        encode: impl Fn(&[ToolDef]) -> serde_json::Result<Box<RawValue>>,
    ) -> serde_json::Result<()> {
        let same = match &self.tools {
            Some((kept, _)) => {
                kept.len() == tools.len() && kept.iter().zip(tools).all(|(a, b)| same_tool(a, b))
            }
            None => tools.is_empty(),
        };
        if !same {
            self.tools = match tools {
                [] => None,
                tools => Some((tools.to_vec(), encode(tools)?)),
            };
        }
        Ok(())
    }

    /// An empty buffer for the next body: the last one's memory when it was given back.
    pub(crate) fn body_buffer(&mut self) -> Vec<u8> {
        let mut buffer = std::mem::take(&mut self.spare);
        buffer.clear();
        buffer
    }

    /// Takes a sent body back for the next request, when nothing else holds it any more.
    pub(crate) fn give_back(&mut self, body: bytes::Bytes) {
        if let Ok(body) = body.try_into_mut() {
            self.spare = Vec::from(body);
        }
    }

    /// The messages' encodings, as last kept.
    pub(crate) fn messages(&self) -> &[Box<RawValue>] {
        &self.encoded
    }

    /// The tools' encoding, as last kept (`None`: no tools).
    pub(crate) fn tools(&self) -> Option<&RawValue> {
        self.tools.as_ref().map(|(_, bytes)| &**bytes)
    }
}

/// Whether `a` and `b` are the same message (`==`, the long texts compared by [`same_bytes`]:
/// musl's `memcmp` goes a byte at a time). Every field is named: a field added to a message
/// must be compared here to compile.
fn same(a: &Message, b: &Message) -> bool {
    let Message {
        role,
        content,
        images,
        name,
        tool_call_id,
        tool_calls,
        reasoning_content,
        provider_state,
    } = a;
    *role == b.role
        && same_bytes(content.as_bytes(), b.content.as_bytes())
        && *name == b.name
        && *tool_call_id == b.tool_call_id
        && tool_calls.len() == b.tool_calls.len()
        && tool_calls
            .iter()
            .zip(&b.tool_calls)
            .all(|(x, y)| same_call(x, y))
        && match (reasoning_content, &b.reasoning_content) {
            (Some(x), Some(y)) => same_bytes(x.as_bytes(), y.as_bytes()),
            (x, y) => x.is_none() && y.is_none(),
        }
        && *images == b.images
        && match (provider_state, &b.provider_state) {
            (Some(x), Some(y)) => x.wire == y.wire && same_values(&x.items, &y.items),
            (x, y) => x.is_none() && y.is_none(),
        }
}

fn same_tool(a: &ToolDef, b: &ToolDef) -> bool {
    let ToolDef {
        name,
        description,
        parameters,
    } = a;
    *name == b.name
        && same_bytes(description.as_bytes(), b.description.as_bytes())
        && same_value(parameters, &b.parameters)
}

fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

/// Whether two JSON values are the same, objects' keys in the same order: what encodes to
/// the same bytes (`==` would also match reordered keys, hashing each one to look it up).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same_value(vx, vy))
        }
        (Value::Array(x), Value::Array(y)) => same_values(x, y),
        (Value::String(x), Value::String(y)) => same_bytes(x.as_bytes(), y.as_bytes()),
        _ => a == b,
    }
}

fn same_call(a: &ToolCall, b: &ToolCall) -> bool {
    let ToolCall {
        id,
        kind,
        function: FunctionCall { name, arguments },
    } = a;
    *id == b.id
        && *kind == b.kind
        && *name == b.function.name
        && same_bytes(arguments.as_bytes(), b.function.arguments.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::ChatWireMessage;
    use crate::llm::{ImagePart, Message};

    fn encode(
        message: &Message,
        images: Images,
        _: &[Message],
    ) -> serde_json::Result<Box<RawValue>> {
        to_raw_value(&ChatWireMessage(message, images))
    }

    /// The kept encodings as one JSON array, beside the same messages encoded afresh.
    fn both(kept: &mut KeptEncodings, messages: RequestMessages<'_>) -> (String, String) {
        kept.keep_messages(&messages, encode).unwrap();
        let reused = serde_json::to_string(kept.messages()).unwrap();
        (reused, serde_json::to_string(&messages).unwrap())
    }

    #[test]
    fn reused_bytes_are_the_bytes_of_a_fresh_encoding() {
        let mut kept = KeptEncodings::default();
        let mut all = vec![Message::system("prompt \"quoted\""), Message::user("task")];
        let (a, b) = both(&mut kept, RequestMessages::new(&all));
        assert_eq!(a, b);
        // Growing: the first two are reused.
        all.push(Message::assistant("thinking\nabout it"));
        all.push(Message::tool_result("c1", "read_file", "line\t1"));
        let (a, b) = both(&mut kept, RequestMessages::new(&all));
        assert_eq!(a, b);
        // A message changed in place (the plan's system message) is encoded again.
        all[1].content.push_str(" — changed");
        let (a, b) = both(&mut kept, RequestMessages::new(&all));
        assert_eq!(a, b);
        assert!(a.contains("changed"));
        // Trimmed from the front: every place shifts.
        all.remove(1);
        let (a, b) = both(&mut kept, RequestMessages::new(&all));
        assert_eq!(a, b);
        // Shorter, with a second message and one moved to the end.
        let block = Message::system("memory block");
        let (a, b) = both(
            &mut kept,
            RequestMessages::with_last(&all, 0).with_second(Some(&block)),
        );
        assert_eq!(a, b);
        // An image, sent and then left out (a model that takes none): a different encoding.
        all[1]
            .images
            .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
        let (a, b) = both(&mut kept, RequestMessages::new(&all));
        assert_eq!(a, b);
        assert!(a.contains("image_url"));
        let (a, b) = both(&mut kept, RequestMessages::new(&all).with_images(false));
        assert_eq!(a, b);
        assert!(a.contains("omitted"));
        assert_eq!(kept.sent[1], None, "a message with images is not kept");
        // Empty.
        let (a, b) = both(&mut kept, RequestMessages::new(&[]));
        assert_eq!((a.as_str(), b.as_str()), ("[]", "[]"));
    }

    #[test]
    fn sameness_is_equality_field_by_field() {
        let mut base = Message::assistant("text");
        base.name = Some("n".into());
        base.tool_call_id = Some("c".into());
        base.reasoning_content = Some("why".into());
        base.tool_calls = vec![ToolCall::new("c1", "read_file", r#"{"path":"a"}"#)];
        let changes: Vec<fn(&mut Message)> = vec![
            |m| m.role = crate::llm::Role::User,
            |m| m.content.push('!'),
            |m| m.images.push(ImagePart::from_bytes("image/png", b"x")),
            |m| m.name = None,
            |m| m.tool_call_id = Some("d".into()),
            |m| m.tool_calls[0].id.push('x'),
            |m| m.tool_calls[0].kind.push('x'),
            |m| m.tool_calls[0].function.name.push('x'),
            |m| m.tool_calls[0].function.arguments.push(' '),
            |m| m.tool_calls.clear(),
            |m| m.reasoning_content = None,
            |m| m.reasoning_content = Some("why not".into()),
            |m| {
                m.provider_state = Some(Box::new(crate::llm::ProviderState {
                    wire: "chat".into(),
                    origin: None,
                    items: vec![],
                }))
            },
        ];
        assert!(same(&base, &base.clone()));
        for (i, change) in changes.iter().enumerate() {
            let mut other = base.clone();
            change(&mut other);
            assert_ne!(other, base, "change {i}");
            assert!(!same(&base, &other) && !same(&other, &base), "change {i}");
        }
    }

    #[test]
    fn tools_are_encoded_again_only_when_they_change() {
        let mut kept = KeptEncodings::default();
        let tool = |name: &str| ToolDef {
            name: name.into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        kept.keep_tools(&[]).unwrap();
        assert!(kept.tools().is_none());
        let mut tools = vec![tool("a"), tool("b")];
        kept.keep_tools(&tools).unwrap();
        let first = kept.tools().unwrap().get().as_ptr();
        kept.keep_tools(&tools).unwrap();
        assert_eq!(
            kept.tools().unwrap().get().as_ptr(),
            first,
            "kept, not encoded again"
        );
        tools[1].description = "changed".into();
        kept.keep_tools(&tools).unwrap();
        assert_eq!(
            kept.tools().unwrap().get(),
            serde_json::to_string(&tools).unwrap()
        );
        kept.keep_tools(&[]).unwrap();
        assert!(kept.tools().is_none());
    }

    #[test]
    fn values_are_the_same_only_with_their_keys_in_the_same_order() {
        let a = serde_json::json!({"type": "object", "properties": {"x": [1, "two", null]}});
        assert!(same_value(&a, &a.clone()));
        let reordered: Value =
            serde_json::from_str(r#"{"properties": {"x": [1, "two", null]}, "type": "object"}"#)
                .unwrap();
        assert_eq!(a, reordered);
        assert!(!same_value(&a, &reordered), "encodes differently");
        let changed = serde_json::json!({"type": "object", "properties": {"x": [1, "two", 3]}});
        assert!(!same_value(&a, &changed));
        assert!(!same_value(&serde_json::json!(1), &serde_json::json!(1.0)));
    }

    #[test]
    fn a_body_given_back_is_the_next_ones_buffer_unless_still_held() {
        let mut kept = KeptEncodings::default();
        let mut sent = Vec::with_capacity(64);
        sent.extend_from_slice(b"{\"model\":\"m\"}");
        let sent = bytes::Bytes::from(sent);
        let place = sent.as_ptr();
        kept.give_back(sent);
        let next = kept.body_buffer();
        assert!(next.is_empty());
        assert_eq!(next.as_ptr(), place, "the same memory, not a fresh buffer");
        assert!(next.capacity() >= 64);
        // A body something still holds (a retry, a connection) is left to it.
        let held = bytes::Bytes::from(vec![b'x'; 16]);
        let holder = held.clone();
        kept.give_back(held);
        let fresh = kept.body_buffer();
        assert_ne!(fresh.as_ptr(), holder.as_ptr());
    }
}
