//! The HTTP client of every wire format: `POST {base_url}` + the format's endpoint
//! (`/chat/completions`, `/messages`), buffered or streamed, with retries, timeouts and model
//! discovery. What differs between formats is in `wire/`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::error::{is_billing_answer, transport_error};
use super::profiles::{
    context_window_from_listing, is_llama_cpp_listing, profile_for, served_context_from_props,
};
use super::response::MAX_BODY_BYTES;
use super::retry::{RetryDecision, RetryNotice, RetryPolicy, parse_retry_after, retry_reason};
use super::wire::{Format, KeptEncodings, ThinkingMode, WireSettings};
use super::{
    ChatModel, ChatRequest, ChatResponse, Delta, DeltaSink, LlmError, Message, WindowSize,
};

/// Default for [`HttpModelConfig::request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Default for [`HttpModelConfig::stream_idle_timeout`].
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default for [`HttpModelConfig::max_attempts`] (1 + 3 retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;
/// Default for [`HttpModelConfig::backoff_base`].
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(1);

/// Error bodies are shortened to this many characters.
const ERROR_BODY_CHARS: usize = 500;
/// At most this much of an error body is read.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// `GET /models` limits.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_DISCOVERY_BYTES: usize = 1024 * 1024;
/// Appended to billing/quota errors so the user knows retrying is pointless.
const BILLING_HINT: &str =
    " — billing/quota error, not retried (check your provider balance or plan)";

/// Everything [`HttpModel`] needs to talk to one endpoint.
#[derive(Clone)]
pub struct HttpModelConfig {
    /// Endpoint root, e.g. `https://api.openai.com/v1` (a trailing `/` is ignored).
    pub base_url: String,
    /// The wire format spoken there.
    pub format: Format,
    /// The key, sent as the format sends it (a bearer token, `x-api-key`); `None` (or
    /// empty) sends none.
    pub api_key: Option<String>,
    /// More headers sent with every request (a provider's `headers`).
    pub headers: Vec<(String, String)>,
    /// Model name sent in every request.
    pub model: String,
    /// Sampling temperature; `None` omits the field.
    pub temperature: Option<f64>,
    /// `enabled`, `disabled`, `low`, `medium` or `high`; `None` sends no thinking fields.
    pub thinking: Option<String>,
    /// Whole buffered call; for streams, the time until response headers.
    pub request_timeout: Duration,
    /// Longest silence between any bytes of a stream.
    pub stream_idle_timeout: Duration,
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// First retry wait; doubles each retry (capped at 30 s) plus up to 25 % jitter.
    pub backoff_base: Duration,
}

impl HttpModelConfig {
    /// Defaults for `model` at `base_url`: no key, no temperature, and the request timeout
    /// and thinking mode of the model's profile (see `profiles`) when it has them.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let model = model.into();
        let profile = profile_for(&model);
        HttpModelConfig {
            base_url: base_url.into(),
            format: Format::Chat,
            api_key: None,
            headers: Vec::new(),
            temperature: None,
            thinking: profile.and_then(|p| p.default_thinking).map(str::to_string),
            request_timeout: profile
                .and_then(|p| p.request_timeout)
                .unwrap_or(DEFAULT_REQUEST_TIMEOUT),
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff_base: DEFAULT_BACKOFF_BASE,
            model,
        }
    }
}

impl fmt::Debug for HttpModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpModelConfig")
            .field("base_url", &self.base_url)
            .field("format", &self.format)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("thinking", &self.thinking)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("backoff_base", &self.backoff_base)
            .finish()
    }
}

/// A [`ChatModel`] speaking one wire format over HTTP.
#[derive(Debug)]
pub struct HttpModel {
    http: reqwest::Client,
    /// Parsed once: each request clones it instead of parsing the text again.
    completions_url: reqwest::Url,
    models_url: String,
    /// llama-server's `/props` (at the server's root, beside `/v1`).
    props_url: String,
    config: HttpModelConfig,
    thinking: Option<ThinkingMode>,
    discovered_context_window: OnceCell<Option<WindowSize>>,
    /// The last request's encoded messages, reused by the next where they are the same
    /// (concurrent conversations on one client stay correct: they only reuse less).
    kept: std::sync::Mutex<KeptEncodings>,
}

impl HttpModel {
    /// A client for `config`. Fails on an unknown thinking mode or when no HTTP client can
    /// be built (TLS initialisation).
    pub fn new(config: HttpModelConfig) -> Result<HttpModel, LlmError> {
        let thinking = match config.thinking.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(ThinkingMode::parse(text).ok_or_else(|| {
                LlmError::Config(format!(
                    "unknown thinking mode {text:?} (expected enabled, disabled, low, medium or high)"
                ))
            })?),
        };
        let base = config.base_url.trim().trim_end_matches('/').to_string();
        validate_endpoint(&base, config.api_key.as_deref(), &config.headers)?;
        let http = super::http::client_builder()
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build HTTP client: {e}")))?;
        let completions_url =
            reqwest::Url::parse(&format!("{base}{}", config.format.endpoint()))
                .map_err(|e| LlmError::Config(format!("invalid base URL {base:?}: {e}")))?;
        Ok(HttpModel {
            http,
            completions_url,
            models_url: format!("{base}/models"),
            props_url: format!("{}/props", base.strip_suffix("/v1").unwrap_or(&base)),
            config,
            thinking,
            discovered_context_window: OnceCell::new(),
            kept: std::sync::Mutex::default(),
        })
    }

    /// The configuration the client was built from.
    pub fn config(&self) -> &HttpModelConfig {
        &self.config
    }

    fn encode_request(&self, request: &ChatRequest<'_>) -> Result<bytes::Bytes, LlmError> {
        let settings = WireSettings {
            model: &self.config.model,
            temperature: self.config.temperature,
            thinking: self.thinking,
        };
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let body = self.config.format.encode(request, &settings, &mut kept)?;
        Ok(bytes::Bytes::from(body))
    }

    /// A request with the key and the configured headers.
    fn authorised(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = self
            .config
            .headers
            .iter()
            .fold(builder, |b, (name, value)| b.header(name, value));
        self.config.format.authorise(builder, self.bearer())
    }

    fn bearer(&self) -> Option<&str> {
        self.config
            .api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
    }

    async fn send(&self, body: &bytes::Bytes, stream: bool) -> Result<reqwest::Response, LlmError> {
        let mut builder = self.authorised(
            self.http
                .post(self.completions_url.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone()),
        );
        if stream {
            builder = builder.header(ACCEPT, "text/event-stream");
        }
        let response = builder
            .send()
            .await
            .map_err(|e| transport_error(&e, self.config.request_timeout))?;
        reject_failure_status(response).await
    }

    async fn attempt_buffered(&self, body: &bytes::Bytes) -> Result<ChatResponse, LlmError> {
        let timeout = self.config.request_timeout;
        let call = async {
            let response = self.send(body, false).await?;
            let bytes = read_body_capped(response, MAX_BODY_BYTES, timeout).await?;
            self.config.format.parse_body(&bytes)
        };
        tokio::time::timeout(timeout, call)
            .await
            .unwrap_or(Err(LlmError::Timeout(timeout)))
    }

    async fn attempt_streaming(
        &self,
        body: &bytes::Bytes,
        sink: Option<DeltaSink<'_>>,
        delivered: &AtomicBool,
        billed: &std::sync::Mutex<super::Usage>,
    ) -> Result<ChatResponse, LlmError> {
        let timeout = self.config.request_timeout;
        let response = tokio::time::timeout(timeout, self.send(body, true))
            .await
            .unwrap_or(Err(LlmError::Timeout(timeout)))?;
        if is_event_stream(response.headers()) {
            let idle = self.config.stream_idle_timeout;
            return self
                .config
                .format
                .read_stream(response, idle, sink, delivered, billed)
                .await;
        }
        tracing::debug!("streaming requested but the answer is not text/event-stream");
        let bytes =
            tokio::time::timeout(timeout, read_body_capped(response, MAX_BODY_BYTES, timeout))
                .await
                .unwrap_or(Err(LlmError::Timeout(timeout)))?;
        let parsed = self.config.format.parse_body(&bytes)?;
        hand_whole_text_to_sink(&parsed.message, sink, delivered);
        Ok(parsed)
    }

    /// Sends `body` until an attempt answers or the retry policy gives up.
    async fn send_with_retries(
        &self,
        request: &ChatRequest<'_>,
        body: &bytes::Bytes,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let policy = RetryPolicy {
            max_attempts: self.config.max_attempts.max(1),
            backoff_base: self.config.backoff_base,
        };
        let delivered = AtomicBool::new(false);
        // What broken attempts were billed before they broke (a stream cut after Anthropic's
        // `message_start` has counted its input): added to the answer's usage.
        let billed = std::sync::Mutex::new(super::Usage::default());
        let mut attempt = 1;
        loop {
            let result = if request.stream {
                self.attempt_streaming(body, on_delta, &delivered, &billed)
                    .await
            } else {
                self.attempt_buffered(body).await
            };
            let error = match result {
                Ok(mut response) => {
                    let billed = billed.lock().map(|u| *u).unwrap_or_default();
                    response.usage.add(&billed);
                    return Ok(response);
                }
                Err(error) => error,
            };
            match policy.decide(&error, attempt, crate::random::unit()) {
                RetryDecision::GiveUp => return Err(error),
                RetryDecision::Exhausted => {
                    return Err(LlmError::RetryExhausted {
                        attempts: attempt,
                        last: Box::new(error),
                    });
                }
                RetryDecision::Retry {
                    wait,
                    from_retry_after,
                } => {
                    attempt += 1;
                    // Text of the broken attempt is on its way to the user: start it over.
                    let discards_partial_answer = delivered.swap(false, Ordering::SeqCst);
                    if let (true, Some(sink)) = (discards_partial_answer, on_delta) {
                        sink(Delta::Restart);
                    }
                    self.notify_retry(
                        request,
                        RetryNotice {
                            attempt,
                            max_attempts: policy.max_attempts,
                            wait,
                            reason: retry_reason(&error),
                            from_retry_after,
                            discards_partial_answer,
                        },
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    fn notify_retry(&self, request: &ChatRequest<'_>, notice: RetryNotice) {
        tracing::debug!(
            "retrying in {:?} (attempt {}/{}): {}",
            notice.wait,
            notice.attempt,
            notice.max_attempts,
            notice.reason
        );
        if let Some(callback) = request.on_retry {
            callback(&notice);
        }
    }

    /// The context window the server tells: its `GET /models` entry, and for llama-server,
    /// whose listing gives only what the model was trained with, the size it was started
    /// with from `/props`.
    async fn discover_context_window(&self) -> Option<WindowSize> {
        let listing = self.get_json(&self.models_url).await?;
        let listed = context_window_from_listing(&listing, &self.config.model);
        if !listed.is_some_and(|l| l.served) && is_llama_cpp_listing(&listing) {
            let props = self.get_json(&self.props_url).await;
            if let Some(tokens) = props.as_ref().and_then(served_context_from_props) {
                return Some(WindowSize {
                    tokens,
                    source: format!(
                        "n_ctx on {}: the context llama-server was started with",
                        self.props_url
                    ),
                });
            }
        }
        let listed = listed?;
        let note = if listed.served {
            ""
        } else {
            ": what the model was trained with; the server may serve less"
        };
        Some(WindowSize {
            tokens: listed.tokens,
            source: format!("{} on {}{note}", listed.field, self.models_url),
        })
    }

    /// A small JSON document from the server (discovery), `None` on any failure.
    async fn get_json(&self, url: &str) -> Option<Value> {
        let builder = self.authorised(self.http.get(url));
        let fetch = async {
            let response = builder.send().await.ok()?.error_for_status().ok()?;
            read_body_capped(response, MAX_DISCOVERY_BYTES, DISCOVERY_TIMEOUT)
                .await
                .ok()
        };
        let body = tokio::time::timeout(DISCOVERY_TIMEOUT, fetch)
            .await
            .ok()??;
        let json = serde_json::from_slice(&body).ok();
        tracing::debug!(found = json.is_some(), "discovery: {url}");
        json
    }
}

#[async_trait]
impl ChatModel for HttpModel {
    fn model_name(&self) -> &str {
        &self.config.model
    }

    async fn listed_models(&self) -> Option<Vec<String>> {
        let listing = self.get_json(&self.models_url).await?;
        Some(super::profiles::listed_model_names(&listing))
    }

    async fn complete(
        &self,
        request: &ChatRequest<'_>,
        on_delta: Option<DeltaSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let body = self.encode_request(request)?;
        let answer = self.send_with_retries(request, &body, on_delta).await;
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .give_back(body);
        answer
    }

    async fn context_window(&self) -> Option<WindowSize> {
        let discovered = self
            .discovered_context_window
            .get_or_init(|| self.discover_context_window())
            .await;
        discovered.clone().or_else(|| {
            let profile = profile_for(&self.config.model)?;
            Some(WindowSize {
                tokens: profile.context_window?,
                source: format!("odek's model table ({})", profile.label),
            })
        })
    }
}

/// Rejects what could never work, before any request: a base URL that is not http(s), and a
/// key or a header that cannot be sent as one.
fn validate_endpoint(
    base: &str,
    api_key: Option<&str>,
    headers: &[(String, String)],
) -> Result<(), LlmError> {
    let url = reqwest::Url::parse(base)
        .map_err(|e| LlmError::Config(format!("invalid base URL {base:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LlmError::Config(format!(
            "invalid base URL {base:?}: expected http:// or https://"
        )));
    }
    let key = api_key.map(str::trim).unwrap_or("");
    if reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
        return Err(LlmError::Config(
            "the API key contains characters that cannot be sent in a header".into(),
        ));
    }
    for (name, value) in headers {
        let bad_name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err();
        if bad_name || reqwest::header::HeaderValue::from_str(value).is_err() {
            return Err(LlmError::Config(format!(
                "the header {name:?} cannot be sent: its name or value holds characters a header cannot"
            )));
        }
    }
    Ok(())
}

/// Turns a non-success answer into [`LlmError::Status`] (body shortened, billing hint added,
/// `Retry-After` parsed); passes successes through.
async fn reject_failure_status(response: reqwest::Response) -> Result<reqwest::Response, LlmError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    let raw = read_body_capped(response, MAX_ERROR_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let mut body = crate::text::truncate(raw.trim(), ERROR_BODY_CHARS).into_owned();
    if is_billing_answer(status.as_u16(), &raw) {
        body.push_str(BILLING_HINT);
    }
    Err(LlmError::Status {
        status: status.as_u16(),
        reason: status.canonical_reason().unwrap_or("").to_string(),
        body,
        retry_after,
    })
}

/// Reads a whole body, failing once it passes `cap` bytes. `timeout` names the limit in the
/// error when the transport times out.
async fn read_body_capped(
    mut response: reqwest::Response,
    cap: usize,
    timeout: Duration,
) -> Result<Vec<u8>, LlmError> {
    let too_large = || LlmError::Protocol("response exceeds maximum size".into());
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| transport_error(&e, timeout))?
    {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    match headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) {
        Some(kind) => kind
            .trim()
            .to_ascii_lowercase()
            .starts_with("text/event-stream"),
        // Nothing declared: trust that the server honoured `stream: true`.
        None => true,
    }
}

/// A buffered answer to a streaming request still shows up on the terminal.
fn hand_whole_text_to_sink(message: &Message, sink: Option<DeltaSink<'_>>, delivered: &AtomicBool) {
    let Some(sink) = sink else { return };
    if let Some(reasoning) = message
        .reasoning_content
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        delivered.store(true, Ordering::SeqCst);
        sink(Delta::Reasoning(reasoning));
    }
    if !message.content.is_empty() {
        delivered.store(true, Ordering::SeqCst);
        sink(Delta::Content(&message.content));
    }
}

#[cfg(test)]
mod tests;
