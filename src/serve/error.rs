//! JSON errors and JSON bodies: every failure of the API is `{"error": "..."}` with the
//! status that says what went wrong, and every body is decoded strictly (unknown fields,
//! wrong types and oversize bodies are refused with a message naming the problem).

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::runtime::RuntimeError;
use crate::session::SessionError;

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

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(serde_json::json!({"error": self.message})),
        )
            .into_response();
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
        match &e {
            SessionError::InvalidId { .. } => ApiError::bad_request(e.to_string()),
            SessionError::NotFound { id, .. } => ApiError::not_found(format!("no session {id}")),
            SessionError::Busy { .. } => ApiError::conflict(e.to_string()),
            _ => ApiError::internal(e.to_string()),
        }
    }
}

impl From<RuntimeError> for ApiError {
    fn from(e: RuntimeError) -> Self {
        match e {
            RuntimeError::Session(s) => s.into(),
            RuntimeError::TurnInProgress(_) => ApiError::conflict(e.to_string()),
            other => ApiError::internal(other.to_string()),
        }
    }
}

/// A JSON request body decoded strictly into `T` (which should deny unknown fields). The
/// body must be sent as `application/json` (so a cross-site HTML form cannot post it).
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
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
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is over the size limit",
                ),
                status => ApiError::new(status, rejection.body_text()),
            }
        })?;
        let mut decoder = serde_json::Deserializer::from_slice(&bytes);
        let invalid =
            |e: &dyn std::fmt::Display| ApiError::bad_request(format!("invalid JSON body: {e}"));
        let value = serde_path_to_error::deserialize(&mut decoder).map_err(|e| invalid(&e))?;
        decoder.end().map_err(|e| invalid(&e))?;
        Ok(JsonBody(value))
    }
}
