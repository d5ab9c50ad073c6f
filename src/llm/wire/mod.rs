//! The wire formats one provider-neutral conversation is sent over: OpenAI's Chat
//! Completions (`chat`), Anthropic's Messages (`anthropic`) and OpenAI's Responses
//! (`responses`). Each format is a module of its
//! own with its request encoder, its answer parser and its stream fold; the HTTP client
//! (`client.rs`) does the rest — retries, timeouts, discovery — the same for all of them.

mod anthropic;
mod chat;
mod kept;
mod responses;
mod settings;

pub(crate) use kept::KeptEncodings;
pub use settings::ThinkingMode;
pub(crate) use settings::WireSettings;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::sse::read_event_stream;
use super::{ChatRequest, ChatResponse, DeltaSink, LlmError};

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// OpenAI's Chat Completions, `POST {base}/chat/completions` (DeepSeek, vLLM,
    /// llama.cpp, Ollama, OpenRouter, gateways).
    #[default]
    Chat,
    /// Anthropic's Messages, `POST {base}/messages` (Claude; llama-server and LiteLLM
    /// serve it too).
    Anthropic,
    /// OpenAI's Responses, `POST {base}/responses` (OpenAI's reasoning models;
    /// llama-server serves it too).
    Responses,
}

/// Every format's configured name, for messages.
pub const FORMAT_NAMES: &[&str] = &["chat", "anthropic", "responses"];

impl Format {
    /// The format of a configured name (`chat`, `anthropic`); `None` for anything else.
    pub fn parse(text: &str) -> Option<Format> {
        match text.trim().to_ascii_lowercase().as_str() {
            "chat" => Some(Format::Chat),
            "anthropic" => Some(Format::Anthropic),
            "responses" => Some(Format::Responses),
            _ => None,
        }
    }

    /// The configured name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Chat => "chat",
            Format::Anthropic => "anthropic",
            Format::Responses => "responses",
        }
    }

    /// The path of the generation endpoint, below the base URL.
    pub(crate) fn endpoint(self) -> &'static str {
        match self {
            Format::Chat => "/chat/completions",
            Format::Anthropic => "/messages",
            Format::Responses => "/responses",
        }
    }

    /// The request body of `request`, reusing the encodings `kept` from the request before
    /// where they are the same, and keeping this one's.
    pub(crate) fn encode(
        self,
        request: &ChatRequest<'_>,
        settings: &WireSettings<'_>,
        kept: &mut KeptEncodings,
    ) -> Result<Vec<u8>, LlmError> {
        let body = match self {
            Format::Chat => chat::encode(request, settings, kept),
            Format::Anthropic => anthropic::encode(request, settings, kept),
            Format::Responses => responses::encode(request, settings, kept),
        };
        body.map_err(|e| LlmError::Protocol(format!("cannot encode request: {e}")))
    }

    /// A buffered answer's body.
    pub(crate) fn parse_body(self, body: &[u8]) -> Result<ChatResponse, LlmError> {
        match self {
            Format::Chat => super::response::parse_completion_body(body),
            Format::Anthropic => anthropic::parse_body(body),
            Format::Responses => responses::parse_body(body),
        }
    }

    /// A streamed answer, read to its end.
    pub(crate) async fn read_stream(
        self,
        response: reqwest::Response,
        idle: Duration,
        sink: Option<DeltaSink<'_>>,
        delivered: &AtomicBool,
        billed: &std::sync::Mutex<super::Usage>,
    ) -> Result<ChatResponse, LlmError> {
        match self {
            Format::Chat => {
                let fold = super::sse::StreamAccumulator::new();
                read_event_stream(response, idle, fold, sink, delivered, billed).await
            }
            Format::Anthropic => {
                let fold = anthropic::StreamFold::default();
                read_event_stream(response, idle, fold, sink, delivered, billed).await
            }
            Format::Responses => {
                let fold = responses::StreamFold::default();
                read_event_stream(response, idle, fold, sink, delivered, billed).await
            }
        }
    }

    /// The request with this format's credentials: a bearer token, or Anthropic's
    /// `x-api-key` and `anthropic-version`.
    pub(crate) fn authorise(
        self,
        builder: reqwest::RequestBuilder,
        key: Option<&str>,
    ) -> reqwest::RequestBuilder {
        match self {
            Format::Chat | Format::Responses => match key {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            },
            Format::Anthropic => anthropic::authorise(builder, key),
        }
    }

    /// Fuzzing entry: `pieces` as a streamed answer of this format.
    #[cfg(any(fuzzing, test))]
    pub(crate) fn fuzz_stream(self, pieces: Vec<Vec<u8>>) {
        let _ = match self {
            Format::Chat => {
                super::sse::read_event_pieces(pieces, super::sse::StreamAccumulator::new())
            }
            Format::Anthropic => {
                super::sse::read_event_pieces(pieces, anthropic::StreamFold::default())
            }
            Format::Responses => {
                super::sse::read_event_pieces(pieces, responses::StreamFold::default())
            }
        };
    }
}

/// Fuzzing entry: `data` as a whole answer of every format.
#[cfg(any(fuzzing, test))]
pub(crate) fn fuzz_bodies(data: &[u8]) {
    let _ = Format::Chat.parse_body(data);
    let _ = Format::Anthropic.parse_body(data);
    let _ = Format::Responses.parse_body(data);
}

/// Fuzzing entry: `data` as a model's answer of every wire format, whole (a JSON body) and
/// streamed (server-sent events, cut in two at the place the first byte names), parsed as
/// the client does.
#[cfg(any(fuzzing, test))]
pub fn fuzz_answer(data: &[u8]) {
    fuzz_bodies(data);
    let cut = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    for format in [Format::Chat, Format::Anthropic, Format::Responses] {
        format.fuzz_stream(vec![data[..cut].to_vec(), data[cut..].to_vec()]);
    }
}
