//! JSON errors and JSON bodies: every failure of the API is `{"error": "..."}` with the
//! status that says what went wrong, and every body is decoded strictly (unknown fields,
//! wrong types and oversize bodies are refused with a message naming the problem).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::runtime::{RuntimeError, SupervisorError};
use crate::session::SessionError;

/// Largest management body (rename, approvals).
pub(crate) const BODY_LIMIT: usize = 1024 * 1024;
/// Largest `POST /api/prompt` body.
pub(crate) const PROMPT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// A failed request: its status, the message of its JSON body and, for 429, when to retry.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// The `error` text.
    pub message: String,
    /// Seconds for `Retry-After` (429 only).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 409.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, message)
    }

    /// 429 with `Retry-After`.
    pub fn too_many(retry_after: u64) -> Self {
        ApiError {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!("too many requests: retry in {retry_after} s"),
            retry_after: Some(retry_after),
        }
    }

    /// 503: shutdown has begun.
    pub fn shutting_down() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down",
        )
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// The status of `error`'s kind: 400 for a wrong request, 404 for what does not exist,
    /// 409 for a clash; otherwise a 500 whose body says `public` (no paths of the machine)
    /// while the server's log keeps the whole error.
    pub fn of_kind(error: &dyn crate::error::Classified, public: &str) -> Self {
        use crate::error::ErrorKind;
        match error.kind() {
            ErrorKind::Usage | ErrorKind::CommandLine => Self::bad_request(error.to_string()),
            ErrorKind::NotFound => Self::not_found(error.to_string()),
            ErrorKind::Conflict => Self::conflict(error.to_string()),
            ErrorKind::Config
            | ErrorKind::Io
            | ErrorKind::Remote
            | ErrorKind::Budget
            | ErrorKind::Interrupted
            | ErrorKind::Internal => Self::internal_logged(public, &error),
        }
    }

    /// 500 whose body names the problem (`public`, no paths of the machine) while the
    /// server's log keeps the whole error.
    pub fn internal_logged(public: impl Into<String>, detail: &dyn std::fmt::Display) -> Self {
        let public = public.into();
        eprintln!("odek serve: error: {public} ({detail})");
        Self::internal(public)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = crate::protocol::api::ErrorBody {
            error: self.message,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        let public = e.message_without_paths();
        match &e {
            SessionError::InvalidId { .. } => ApiError::bad_request(public),
            SessionError::NotFound { .. } => ApiError::not_found(public),
            SessionError::Busy { .. } => ApiError::conflict(public),
            SessionError::NoSuchTurn { .. } => ApiError::bad_request(public),
            _ => ApiError::internal_logged(public, &e),
        }
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Session(s) => s.into(),
            RuntimeError::TurnInProgress(_) => ApiError::conflict(e.to_string()),
            RuntimeError::MissingApiKey { ref base_url, .. } => ApiError::internal_logged(
                format!("no API key for {base_url} in the server's configuration"),
                &e,
            ),
            other => ApiError::internal(other.to_string()),
        }
    }
}

impl From<SupervisorError> for ApiError {
    fn from(e: SupervisorError) -> Self {
        match e {
            SupervisorError::ShuttingDown => ApiError::shutting_down(),
            SupervisorError::Runtime(e) => e.into(),
            SupervisorError::NoRun(id) => ApiError::not_found(format!("no run {id}")),
            SupervisorError::NoApproval(id) => {
                ApiError::not_found(format!("no approval {id} in this run"))
            }
            SupervisorError::NoQuestion(id) => {
                ApiError::not_found(format!("no question {id} in this run"))
            }
            e @ (SupervisorError::ApprovalClosed { .. }
            | SupervisorError::QuestionClosed { .. }) => ApiError::conflict(e.to_string()),
        }
    }
}

/// A model switch's refusal: 400 for a model this server cannot ask (an unknown provider, no
/// key, a replayed run), else as any runtime error.
pub(super) fn model_refused(e: RuntimeError) -> ApiError {
    match e {
        RuntimeError::Provider { .. }
        | RuntimeError::MissingApiKey { .. }
        | RuntimeError::ModelFixed { .. } => ApiError::bad_request(e.message_without_paths()),
        other => other.into(),
    }
}

/// A JSON request body of at most `LIMIT` bytes, decoded strictly into `T` (which should deny
/// unknown fields). The body must be sent as `application/json` (so a cross-site HTML form
/// cannot post it).
pub struct JsonBody<T, const LIMIT: usize = { BODY_LIMIT }>(pub T);

/// Most bytes of a too-large body read on and thrown away before its 413 goes out.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;
/// Longest time spent on that.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

impl<S: Send + Sync, T: DeserializeOwned, const LIMIT: usize> FromRequest<S>
    for JsonBody<T, LIMIT>
{
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
        if !is_json {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON (Content-Type: application/json)",
            ));
        }
        let bytes = read_limited(req.into_body(), LIMIT).await?;
        decode_json(&bytes).map(JsonBody)
    }
}

/// A body decoded strictly into `T`; the error names the field that broke.
pub(super) fn decode_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut decoder = serde_json::Deserializer::from_slice(bytes);
    let invalid =
        |e: &dyn std::fmt::Display| ApiError::bad_request(format!("invalid JSON body: {e}"));
    let value = serde_path_to_error::deserialize(&mut decoder).map_err(|e| invalid(&e))?;
    decoder.end().map_err(|e| invalid(&e))?;
    Ok(value)
}

/// The body, if it holds at most `limit` bytes. A larger one is a 413, but only once the
/// rest of it has been read and thrown away (up to [`DRAIN_LIMIT`] within [`DRAIN_TIME`]):
/// a server that answers while the client is still sending and then closes the connection
/// makes the client see a reset connection instead of the answer.
async fn read_limited(body: axum::body::Body, limit: usize) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut kept = Vec::new();
    let deadline = tokio::time::Instant::now() + BODY_TOTAL_TIME;
    loop {
        let next = tokio::time::timeout_at(
            deadline.min(tokio::time::Instant::now() + BODY_IDLE_TIME),
            stream.next(),
        );
        let Ok(chunk) = next.await else {
            return Err(body_too_slow());
        };
        let Some(chunk) = chunk else {
            break;
        };
        let chunk =
            chunk.map_err(|e| ApiError::bad_request(format!("cannot read the body: {e}")))?;
        if kept.len() + chunk.len() > limit {
            let mut drained = kept.len() + chunk.len();
            drop(kept);
            let _ = tokio::time::timeout(DRAIN_TIME, async {
                while drained < DRAIN_LIMIT {
                    match stream.next().await {
                        Some(Ok(more)) => drained += more.len(),
                        _ => break,
                    }
                }
            })
            .await;
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is over the size limit",
            ));
        }
        kept.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(kept))
}

/// Longest wait for the next byte of a request body (after the token was checked).
pub const BODY_IDLE_TIME: std::time::Duration = std::time::Duration::from_secs(10);
/// Longest time a whole request body may take (8 MiB at 70 KB/s).
pub const BODY_TOTAL_TIME: std::time::Duration = std::time::Duration::from_secs(120);

fn body_too_slow() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        format!(
            "the request body did not arrive in time ({} s without a byte, {} s in all at most)",
            BODY_IDLE_TIME.as_secs(),
            BODY_TOTAL_TIME.as_secs()
        ),
    )
}

/// Every error answer is JSON: one the framework or an extractor wrote as plain text (a
/// path segment that is not UTF-8, a malformed query) becomes `{"error": "<its text>"}`,
/// its status and other headers kept. The web UI's sign-in page (HTML) stays a page.
pub async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json_or_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if is_json_or_page || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        text
    };
    let mut answer = ApiError::new(status, message).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}
