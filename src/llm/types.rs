//! Wire types shared by the model client, the engine and the session store.
//!
//! The shapes follow the OpenAI chat-completions protocol, which is also the session file
//! format, so a transcript on disk is exactly what was (or will be) sent.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions and engine-maintained context (plan, digest, hints).
    System,
    /// The human (or the task).
    User,
    /// The model.
    Assistant,
    /// A tool result answering one tool call.
    Tool,
}

impl Role {
    /// The protocol name of the role.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One chat message. It serialises as the protocol's message: `content` is a string, or —
/// when the message carries images — an array of parts, its text first then one
/// `image_url` part per image; both read back the same way.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Author of the message.
    pub role: Role,
    /// Text; providers send `null` beside tool calls, which reads as empty.
    pub content: String,
    /// Images sent with the text (user messages and tool results, when the model takes
    /// images; a request sends only the newest tool results' images).
    pub images: Vec<ImagePart>,
    /// Tool name on tool results.
    pub name: Option<String>,
    /// The call a tool result answers.
    pub tool_call_id: Option<String>,
    /// Tool calls requested by an assistant message.
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text from thinking models, echoed back on later requests.
    pub reasoning_content: Option<String>,
    /// What the wire that produced this message needs back verbatim (thinking blocks with
    /// their signatures, encrypted reasoning): kept in the session, never redacted, never
    /// shown, and never sent over another wire.
    /// Boxed: most messages have none, and a message stays small to copy.
    pub provider_state: Option<Box<ProviderState>>,
}

/// A wire's opaque items of one assistant message, kept as they were received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderState {
    /// The wire they belong to (`anthropic`, `responses`).
    pub wire: String,
    /// The items, verbatim.
    pub items: Vec<Value>,
    /// The provider whose answer they came from, when a fallback model gave it (see
    /// `fallback`): another provider's state is never sent, even on the same wire. `None`:
    /// the session's own provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

impl ProviderState {
    /// The items when they belong to `wire`.
    pub fn items_for<'a>(state: Option<&'a ProviderState>, wire: &str) -> &'a [Value] {
        match state {
            Some(s) if s.wire == wire => &s.items,
            _ => &[],
        }
    }
}

/// An image of a message: an `image_url` part, a `data:` URL (`data:image/png;base64,…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// The image as a `data:` URL.
    pub url: String,
}

impl ImagePart {
    /// The image of `bytes` of the media type `mime` (`image/png`, …).
    pub fn from_bytes(mime: &str, bytes: &[u8]) -> ImagePart {
        use base64::Engine as _;
        ImagePart {
            url: format!(
                "data:{mime};base64,{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            ),
        }
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize_with(s, Images::Sent, true)
    }
}

/// Whether a message's images go in a request, or a note of how many were left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Images {
    /// They are sent.
    Sent,
    /// The model takes no images.
    NotTaken,
    /// A tool result's, older than the newest tool result with images: only those are sent.
    Older,
}

impl Images {
    /// `text` as a request carries it: with the note of `count` images left out, unless
    /// they are sent (or there are none).
    pub(crate) fn text(self, text: &str, count: usize) -> std::borrow::Cow<'_, str> {
        let note = match self {
            Images::Sent => return text.into(),
            _ if count == 0 => return text.into(),
            Images::NotTaken => {
                format!("[{count} image(s) omitted: this model does not take images]")
            }
            Images::Older => format!("[{count} image(s) omitted: only the newest are sent]"),
        };
        match text {
            "" => note.into(),
            _ => format!("{text}\n\n{note}").into(),
        }
    }
}

/// The text said before a tool result's images in the user message after the results (the
/// wires that take images in user messages only: Chat Completions, Responses).
pub(crate) fn tool_images_text(message: &Message) -> String {
    let id = message.tool_call_id.as_deref().unwrap_or("");
    format!("[image from tool call {id}]")
}

/// The parts of the user message that carries `results`' images: for each result with
/// images, its [`tool_images_text`], then its images.
pub(crate) fn tool_images_parts(
    results: &[Message],
) -> impl Iterator<Item = (String, &[ImagePart])> {
    let with_images = results.iter().filter(|m| !m.images.is_empty());
    with_images.map(|m| (tool_images_text(m), m.images.as_slice()))
}

/// The range of `all` whose tool results' images a request sends: the newest run of tool
/// results (one batch) with any image; the images of older tool results are left out.
pub fn newest_tool_images(all: &[Message]) -> std::ops::Range<usize> {
    let is_tool = |m: &Message| m.role == Role::Tool;
    let Some(end) = all.iter().rposition(|m| is_tool(m) && !m.images.is_empty()) else {
        return 0..0;
    };
    let start = all[..end]
        .iter()
        .rposition(|m| !is_tool(m))
        .map_or(0, |i| i + 1);
    let past = all[end..]
        .iter()
        .position(|m| !is_tool(m))
        .map_or(all.len(), |i| end + i);
    start..past
}

impl Message {
    /// Serialises the message; unless `images` are sent, each image is left out and its
    /// text says how many were (a session that holds images, continued with a model that
    /// takes none); `opaque` keeps the provider state (a session), which no chat request
    /// carries. A request's tool result sends its text only: its images follow it in a user
    /// message ([`ChatWireMessage`]).
    fn serialize_with<S: serde::Serializer>(
        &self,
        s: S,
        images: Images,
        opaque: bool,
    ) -> Result<S::Ok, S::Error> {
        let tool_in_request = !opaque && self.role == Role::Tool;
        // A request on the Chat Completions wire sends each call's extras back inside it.
        let call_extras = self
            .provider_state
            .as_deref()
            .filter(|_| !opaque)
            .map(|state| ProviderState::items_for(Some(state), "chat"))
            .filter(|items| !items.is_empty());
        let opaque = self.provider_state.as_ref().filter(|_| opaque);
        use serde::ser::SerializeStruct;
        let fields = 2
            + usize::from(self.name.is_some())
            + usize::from(self.tool_call_id.is_some())
            + usize::from(!self.tool_calls.is_empty())
            + usize::from(self.reasoning_content.is_some())
            + usize::from(opaque.is_some());
        let mut out = s.serialize_struct("Message", fields)?;
        out.serialize_field("role", &self.role)?;
        if self.images.is_empty() || (images == Images::Sent && tool_in_request) {
            out.serialize_field("content", &self.content)?;
        } else if images == Images::Sent {
            out.serialize_field("content", &ContentParts(&self.content, &self.images))?;
        } else {
            let text = images.text(&self.content, self.images.len());
            out.serialize_field("content", &text)?;
        }
        if let Some(name) = &self.name {
            out.serialize_field("name", name)?;
        }
        if let Some(id) = &self.tool_call_id {
            out.serialize_field("tool_call_id", id)?;
        }
        match call_extras {
            Some(extras) => {
                out.serialize_field("tool_calls", &CallsWithExtras(&self.tool_calls, extras))?
            }
            None if !self.tool_calls.is_empty() => {
                out.serialize_field("tool_calls", &self.tool_calls)?
            }
            None => {}
        }
        if let Some(reasoning) = &self.reasoning_content {
            out.serialize_field("reasoning_content", reasoning)?;
        }
        if let Some(state) = opaque {
            out.serialize_field("provider_state", state)?;
        }
        out.end()
    }
}

/// Tool calls with the fields the provider added to them (`{"call": index, "fields": {…}}`
/// items of the chat wire's provider state), as it sent them.
struct CallsWithExtras<'a>(&'a [ToolCall], &'a [Value]);

impl Serialize for CallsWithExtras<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (i, call) in self.0.iter().enumerate() {
            let extras = self
                .1
                .iter()
                .find(|item| item.get("call").and_then(Value::as_u64) == Some(i as u64))
                .and_then(|item| item.get("fields"))
                .and_then(Value::as_object);
            let Some(extras) = extras else {
                seq.serialize_element(call)?;
                continue;
            };
            let mut value = serde_json::to_value(call).map_err(S::Error::custom)?;
            if let Some(object) = value.as_object_mut() {
                for (k, v) in extras {
                    object.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            seq.serialize_element(&value)?;
        }
        seq.end()
    }
}

/// The `content` parts of a message with images: its text (when any), then the images.
struct ContentParts<'a>(&'a str, &'a [ImagePart]);

/// One `content` part.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: &'a ImagePart },
}

impl Part<'_> {
    /// `text` (when any), then `images`, as parts of `seq`.
    fn push<S: serde::ser::SerializeSeq>(
        seq: &mut S,
        text: &str,
        images: &[ImagePart],
    ) -> Result<(), S::Error> {
        if !text.is_empty() {
            seq.serialize_element(&Part::Text { text })?;
        }
        for image in images {
            seq.serialize_element(&Part::ImageUrl { image_url: image })?;
        }
        Ok(())
    }
}

impl Serialize for ContentParts<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        Part::push(&mut seq, self.0, self.1)?;
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            role: Role,
            #[serde(default)]
            content: Option<WireContent>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default)]
            tool_call_id: Option<String>,
            #[serde(default, deserialize_with = "null_as_default")]
            tool_calls: Vec<ToolCall>,
            #[serde(default)]
            reasoning_content: Option<String>,
            #[serde(default)]
            provider_state: Option<Box<ProviderState>>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum WireContent {
            Text(String),
            Parts(Vec<WirePart>),
        }
        #[derive(Deserialize)]
        struct WirePart {
            #[serde(rename = "type", default)]
            kind: String,
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            image_url: Option<ImagePart>,
        }
        let wire = Wire::deserialize(d)?;
        let (content, images) = match wire.content {
            None => (String::new(), Vec::new()),
            Some(WireContent::Text(text)) => (text, Vec::new()),
            Some(WireContent::Parts(parts)) => {
                let mut texts = Vec::new();
                let mut images = Vec::new();
                for part in parts {
                    match (part.kind.as_str(), part.text, part.image_url) {
                        ("text", Some(text), _) => texts.push(text),
                        ("image_url", _, Some(image)) => images.push(image),
                        _ => {}
                    }
                }
                (texts.join("\n"), images)
            }
        };
        Ok(Message {
            role: wire.role,
            content,
            images,
            name: wire.name,
            tool_call_id: wire.tool_call_id,
            tool_calls: wire.tool_calls,
            reasoning_content: wire.reasoning_content,
            provider_state: wire.provider_state,
        })
    }
}

impl Message {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            images: Vec::new(),
            name: None,
            tool_call_id: None,
            tool_calls: Vec::new(),
            reasoning_content: None,
            provider_state: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        let mut m = Self::new(Role::Tool, content);
        m.tool_call_id = Some(call_id.into());
        m.name = Some(name.into());
        m
    }

    /// True for an assistant message that requests tools.
    pub fn has_tool_calls(&self) -> bool {
        self.role == Role::Assistant && !self.tool_calls.is_empty()
    }
}

/// One tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id (the engine assigns `call_<iter>_<n>` when missing).
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// Which function and with what arguments.
    pub function: FunctionCall,
}

impl ToolCall {
    /// A function call with the given id, name and raw JSON arguments.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: function_kind(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

fn function_kind() -> String {
    "function".to_string()
}

/// Function name and its arguments as a raw JSON string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// Raw JSON text. Some servers send an object instead of a string; it is re-serialised.
    #[serde(default, deserialize_with = "string_or_json")]
    pub arguments: String,
}

/// A tool as advertised to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

impl Serialize for ToolDef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        #[derive(Serialize)]
        struct Wire<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            function: Function<'a>,
        }
        Wire {
            kind: "function",
            function: Function {
                name: &self.name,
                description: &self.description,
                parameters: &self.parameters,
            },
        }
        .serialize(s)
    }
}

/// The messages of a request: a transcript as it is, or with one of its messages sent last
/// (the engine sends the plan message last so that, between two plan changes, every
/// request extends the previous one byte for byte and providers' prompt caches keep
/// hitting). Serialises as a JSON array without copying a message.
#[derive(Clone, Copy, Debug)]
pub struct RequestMessages<'a> {
    all: &'a [Message],
    last: Option<usize>,
    second: Option<&'a Message>,
    images: bool,
}

impl<'a> RequestMessages<'a> {
    /// `all`, in order.
    pub fn new(all: &'a [Message]) -> Self {
        RequestMessages {
            all,
            last: None,
            second: None,
            images: true,
        }
    }

    /// The same with `second` sent right after the first message (the memory block, which
    /// the transcript does not keep); `None` changes nothing.
    pub fn with_second(mut self, second: Option<&'a Message>) -> Self {
        self.second = second;
        self
    }

    /// The same with the messages' images sent (`true`, the default) or left out, each
    /// message saying how many it had (a model that takes no images).
    pub fn with_images(mut self, images: bool) -> Self {
        self.images = images;
        self
    }

    /// `all` with `all[index]` moved to the end (as is when `index` is out of range).
    pub fn with_last(all: &'a [Message], index: usize) -> Self {
        RequestMessages {
            all,
            last: (index < all.len()).then_some(index),
            second: None,
            images: true,
        }
    }

    /// The messages in the order they are sent.
    pub fn iter(&self) -> impl Iterator<Item = &'a Message> + 'a {
        let (all, last, second) = (self.all, self.last, self.second);
        let in_order = all
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != last)
            .map(|(_, m)| m);
        let split = usize::from(!all.is_empty() && Some(0) != last);
        in_order
            .clone()
            .take(split)
            .chain(second)
            .chain(in_order.skip(split))
            .chain(last.map(|i| &all[i]))
    }

    /// Whether the messages' images are sent (see [`Self::with_images`]).
    pub fn sends_images(&self) -> bool {
        self.images
    }

    /// The messages in the order they are sent, each with whether its images go (not when
    /// the model takes none, nor a tool result's older than the newest with images) and the
    /// tool results whose images follow it: the newest run of results with images, after
    /// its last (empty for every other message). A wire that takes images in tool results
    /// sends them in place and ignores the run.
    pub(crate) fn iter_with_images(
        &self,
    ) -> impl Iterator<Item = (&'a Message, Images, &'a [Message])> + 'a {
        let all = self.all;
        let run = &all[newest_tool_images(all)];
        let newest = run.as_ptr_range();
        let last = run.last().map(std::ptr::from_ref);
        let (sent, after) = match self.images {
            true => (Images::Sent, run),
            false => (Images::NotTaken, &[][..]),
        };
        self.iter().map(move |m| {
            let at = std::ptr::from_ref(m);
            let older = m.role == Role::Tool && !m.images.is_empty() && !newest.contains(&at);
            let images = if older && sent == Images::Sent {
                Images::Older
            } else {
                sent
            };
            let then = if Some(at) == last { after } else { &[] };
            (m, images, then)
        })
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.all.len() + usize::from(self.second.is_some())
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The messages in the order they are sent, copied.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }
}

impl<'a> From<&'a [Message]> for RequestMessages<'a> {
    fn from(all: &'a [Message]) -> Self {
        RequestMessages::new(all)
    }
}

impl<'a> From<&'a Vec<Message>> for RequestMessages<'a> {
    fn from(all: &'a Vec<Message>) -> Self {
        RequestMessages::new(all)
    }
}

/// A message as a chat request carries it: without its provider state, and with its images
/// or a note of how many were left out. A tool result sends its text only: Chat
/// Completions takes images in user messages only, so the images of the newest results go
/// in a user message after the last of them ([`ToolImagesMessage`]).
pub(crate) struct ChatWireMessage<'a>(pub &'a Message, pub Images);

impl Serialize for ChatWireMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_with(s, self.1, false)
    }
}

/// The user message after a run of tool results that carries their images, each after
/// the text naming its call.
pub(crate) struct ToolImagesMessage<'a>(pub &'a [Message]);

impl Serialize for ToolImagesMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        struct Parts<'a>(&'a [Message]);
        impl Serialize for Parts<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(None)?;
                for (text, images) in tool_images_parts(self.0) {
                    Part::push(&mut seq, &text, images)?;
                }
                seq.end()
            }
        }
        let mut out = s.serialize_struct("Message", 2)?;
        out.serialize_field("role", &Role::User)?;
        out.serialize_field("content", &Parts(self.0))?;
        out.end()
    }
}

impl Serialize for RequestMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        for (m, images, then) in self.iter_with_images() {
            seq.serialize_element(&ChatWireMessage(m, images))?;
            if !then.is_empty() {
                seq.serialize_element(&ToolImagesMessage(then))?;
            }
        }
        seq.end()
    }
}

/// One request to the model. Model name, endpoint and thinking settings belong to the client.
#[derive(Clone, Copy)]
pub struct ChatRequest<'a> {
    /// The conversation so far, in the order it is sent.
    pub messages: RequestMessages<'a>,
    /// Tools in a stable order (prompt caches depend on it). Empty = no tools field.
    pub tools: &'a [ToolDef],
    /// Whether to stream; the client may still fall back to a buffered answer.
    pub stream: bool,
    /// Cap on generated tokens (`None` = server default).
    pub max_tokens: Option<u32>,
    /// Told about each retry before the client waits (e.g. to print `retrying in 2s
    /// (attempt 2/4): 503 …`); per request, so concurrent turns each hear their own.
    pub on_retry: Option<&'a (dyn Fn(&super::RetryNotice) + Sync)>,
}

impl std::fmt::Debug for ChatRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatRequest")
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.len())
            .field("stream", &self.stream)
            .field("max_tokens", &self.max_tokens)
            .field("on_retry", &self.on_retry.is_some())
            .finish()
    }
}

/// Token accounting for one call (or a running total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// Completion tokens the model spent reasoning (in `output_tokens`), when the provider
    /// says (OpenAI's `reasoning_tokens`).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds another call's usage to this total.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant message (content, reasoning, tool calls).
    pub message: Message,
    /// Tokens used by this call.
    pub usage: Usage,
    /// Why generation stopped, when the server said.
    pub finish_reason: Option<String>,
}

/// A piece of a streamed answer, handed to the terminal as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Answer text.
    Content(&'a str),
    /// Reasoning text of a thinking model.
    Reasoning(&'a str),
    /// The answer broke off and is asked for again: everything streamed so far for this call
    /// is discarded, and the next deltas start the answer over.
    Restart,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn string_or_json<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Null => String::new(),
        Value::String(s) => s,
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_content_and_object_arguments_are_tolerated() {
        let m: Message = serde_json::from_str(
            r#"{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"shell","arguments":{"command":"ls"}}}]}"#,
        )
        .expect("parses");
        assert_eq!(m.content, "");
        assert_eq!(m.tool_calls[0].id, "");
        assert_eq!(m.tool_calls[0].kind, "function");
        assert_eq!(m.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
    }

    #[test]
    fn a_message_with_images_goes_as_parts_and_reads_back_the_same() {
        let mut m = Message::user("what is in it?");
        m.images
            .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
        let wire = serde_json::to_string(&m).expect("serialises");
        assert_eq!(
            wire,
            r#"{"role":"user","content":[{"type":"text","text":"what is in it?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw=="}}]}"#
        );
        let back: Message = serde_json::from_str(&wire).expect("parses");
        assert_eq!(back, m);
        // Only images: no empty text part.
        m.content.clear();
        let wire = serde_json::to_value(&m).expect("serialises");
        assert_eq!(wire["content"].as_array().map(Vec::len), Some(1));
        // Parts from elsewhere: texts joined, unknown parts skipped.
        let other: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{}},{"type":"text","text":"b"}]}"#,
        )
        .expect("parses");
        assert_eq!((other.content.as_str(), other.images.len()), ("a\nb", 0));
        assert!(serde_json::from_str::<Message>(r#"{"role":"user","content":7}"#).is_err());
    }

    #[test]
    fn a_request_for_a_model_without_images_says_how_many_were_left_out() {
        let mut with = Message::user("what is in it?");
        with.images
            .push(ImagePart::from_bytes("image/png", b"\x89PNG"));
        let mut only = Message::user("");
        only.images = vec![with.images[0].clone(), with.images[0].clone()];
        let all = [Message::system("s"), with, only];
        let sent =
            serde_json::to_value(RequestMessages::new(&all).with_images(false)).expect("json");
        assert_eq!(
            sent[0],
            serde_json::json!({"role": "system", "content": "s"})
        );
        assert_eq!(
            sent[1]["content"],
            "what is in it?\n\n[1 image(s) omitted: this model does not take images]"
        );
        assert_eq!(
            sent[2]["content"],
            "[2 image(s) omitted: this model does not take images]"
        );
        let kept = serde_json::to_value(RequestMessages::new(&all)).expect("json");
        assert_eq!(kept[1]["content"][1]["type"], "image_url");
    }

    #[test]
    fn optional_fields_are_omitted_on_the_wire() {
        let s = serde_json::to_string(&Message::user("hi")).expect("serialises");
        assert_eq!(s, r#"{"role":"user","content":"hi"}"#);
        let t = serde_json::to_string(&Message::tool_result("c1", "shell", "ok")).expect("ok");
        assert_eq!(
            t,
            r#"{"role":"tool","content":"ok","name":"shell","tool_call_id":"c1"}"#
        );
    }

    #[test]
    fn tool_defs_serialise_as_functions() {
        let d = ToolDef {
            name: "x".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type":"object"}),
        };
        assert_eq!(
            serde_json::to_value(&d).expect("ok"),
            serde_json::json!({"type":"function","function":{"name":"x","description":"d","parameters":{"type":"object"}}})
        );
    }
}
