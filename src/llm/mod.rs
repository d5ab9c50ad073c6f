//! The model endpoint: wire types, the `ChatModel` trait, the OpenAI-compatible HTTP client,
//! and a replay model that plays recorded responses.
//!
//! A leaf module: it knows nothing about tools, plans or sessions.

mod client;
mod error;
mod fallback;
mod groups;
pub mod http;
mod overflow;
pub mod pricing;
mod profiles;
mod replay;
mod response;
mod retry;
mod sse;
mod types;
mod wire;

pub use client::{
    DEFAULT_BACKOFF_BASE, DEFAULT_MAX_ATTEMPTS, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT, HttpModel, HttpModelConfig,
};
pub use error::{LlmError, NetworkKind};
pub use fallback::{FallbackChain, FallbackLink, FallbackNotice};
pub use groups::{HeadRule, message_groups};
pub use overflow::Overflow;
pub use profiles::{MODEL_PROFILES, ModelProfile, profile_for};
pub use replay::{RecordingModel, ReplayModel};
pub use retry::RetryNotice;
pub use sse::StreamAccumulator;
pub use types::{
    ChatRequest, ChatResponse, Delta, FunctionCall, ImagePart, Message, ProviderState,
    RequestMessages, Role, ToolCall, ToolDef, Usage, newest_tool_images,
};
#[cfg(any(fuzzing, test))]
pub use wire::fuzz_answer;
pub use wire::{FORMAT_NAMES, Format, ThinkingMode};

use async_trait::async_trait;

/// Callback that receives streamed text as it arrives.
pub type DeltaSink<'a> = &'a (dyn Fn(Delta<'_>) + Send + Sync);

/// Anything that answers chat requests: the HTTP client, the replay model, test doubles.
///
/// Dropping the future returned by `complete` cancels the call (the engine does this on
/// Ctrl-C), so implementations need no cancellation token of their own.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The model name sent to the server (and shown to the user).
    fn model_name(&self) -> &str;

    /// Sends one request. When `on_delta` is given and the request streams, content and
    /// reasoning text are handed to it as they arrive.
    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError>;

    /// The context window, asked of the server (`GET /models`, llama-server's `/props`) or
    /// taken from the model profile table; `None` when unknown.
    async fn context_window(&self) -> Option<WindowSize> {
        None
    }

    /// The models the endpoint lists (`GET /models`); `None` when it does not answer.
    async fn listed_models(&self) -> Option<Vec<String>> {
        None
    }
}

/// A context window and where its size came from (shown with `-v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowSize {
    /// Tokens.
    pub tokens: u64,
    /// Where the figure came from, for people (`n_ctx on http://…/props: …`).
    pub source: String,
}
