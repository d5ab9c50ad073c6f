//! Errors of the model client.

use std::time::Duration;

use crate::error::{Classified, ErrorKind};

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The server answered with a non-success HTTP status.
    #[error("llm: {status} {reason} (status {status}): {body}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// Canonical reason phrase.
        reason: String,
        /// Response body, shortened.
        body: String,
        /// `Retry-After`, when the server sent one.
        retry_after: Option<Duration>,
    },
    /// The connection failed (refused, reset, DNS, TLS); what kind of failure is decided
    /// where it happened, from the typed causes.
    #[error("llm: connection error: {message}")]
    Network {
        /// What failed.
        kind: NetworkKind,
        /// The whole cause chain.
        message: String,
    },
    /// No complete answer within the request timeout.
    #[error("llm: request timed out after {}s", .0.as_secs())]
    Timeout(Duration),
    /// A stream went silent for longer than the idle timeout.
    #[error("llm: stream idle for over {}s without an event", .0.as_secs())]
    StreamIdle(Duration),
    /// The answer could not be used (too large, an error the server embedded in it).
    #[error("llm: {0}")]
    Protocol(String),
    /// The answer broke: a stream that stopped before its end, a body or chunk that is not
    /// JSON, an answer without choices. Transient, so retried.
    #[error("llm: broken answer: {0}")]
    BrokenAnswer(String),
    /// Every attempt failed with a retryable error.
    #[error("llm: retry exhausted ({attempts} attempts): {last}")]
    RetryExhausted {
        /// How many attempts were made.
        attempts: u32,
        /// The last error.
        last: Box<LlmError>,
    },
    /// A replay recording could not be read or ran out.
    #[error("replay: {0}")]
    Replay(String),
    /// The client was configured with a value it cannot use (e.g. an unknown thinking mode).
    #[error("llm: invalid configuration: {0}")]
    Config(String),
}

/// What kind of connection failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkKind {
    /// Nothing listens at the address.
    Refused,
    /// The host name did not resolve.
    Dns,
    /// The server's TLS certificate is not trusted (retrying cannot help).
    Certificate,
    /// Reset, closed, or anything else.
    Closed,
}

impl NetworkKind {
    /// The kind of a transport failure, from its typed causes: an I/O error's kind, a
    /// rustls error anywhere in the chain (an I/O error may wrap it), the resolver's error.
    pub fn of(error: &(dyn std::error::Error + 'static)) -> NetworkKind {
        let mut cause = Some(error);
        while let Some(e) = cause {
            if let Some(kind) = Self::of_one(e) {
                return kind;
            }
            cause = e.source();
        }
        NetworkKind::Closed
    }

    /// The kind one error of the chain tells, looking inside I/O errors: they wrap their
    /// cause (often another I/O error around a rustls error) without listing it as their
    /// source.
    fn of_one(e: &(dyn std::error::Error + 'static)) -> Option<NetworkKind> {
        if is_tls_error(e) {
            return Some(NetworkKind::Certificate);
        }
        if is_resolver_error(e) {
            return Some(NetworkKind::Dns);
        }
        let io = e.downcast_ref::<std::io::Error>()?;
        if io.kind() == std::io::ErrorKind::ConnectionRefused {
            return Some(NetworkKind::Refused);
        }
        io.get_ref().and_then(|inner| Self::of_one(inner))
    }
}

fn is_tls_error(e: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        e.downcast_ref::<rustls::Error>(),
        Some(
            rustls::Error::InvalidCertificate(_)
                | rustls::Error::NoCertificatesPresented
                | rustls::Error::UnsupportedNameType
        )
    )
}

/// The resolver's failure as hyper's connector reports it: its error type is private, and
/// its text is the fixed name of the failure's kind, `dns error` (never a message built
/// from the server's or the OS's words).
fn is_resolver_error(e: &(dyn std::error::Error + 'static)) -> bool {
    e.to_string() == "dns error"
}

/// Fragments of a 429 body that mean "out of money", not "slow down".
const BILLING_MARKERS: &[&str] = &["insufficient_quota", "billing", "quota"];

/// True when a status and body say the account is out of credit or over its plan's quota.
pub(crate) fn is_billing_answer(status: u16, body: &str) -> bool {
    match status {
        402 => true,
        429 => {
            let body = body.to_ascii_lowercase();
            BILLING_MARKERS.iter().any(|m| body.contains(m))
        }
        _ => false,
    }
}

impl LlmError {
    /// The innermost error (unwraps `RetryExhausted`).
    pub fn root(&self) -> &LlmError {
        match self {
            LlmError::RetryExhausted { last, .. } => last.root(),
            other => other,
        }
    }

    /// HTTP status of the failure, when there was one.
    pub fn http_status(&self) -> Option<u16> {
        match self.root() {
            LlmError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The context overflow the provider reported, in whichever server's words
    /// ([`super::overflow`]), with the sizes it named.
    pub fn context_overflow(&self) -> Option<super::Overflow> {
        match self.root() {
            LlmError::Status { status, body, .. } => super::overflow::recognise(*status, body),
            _ => None,
        }
    }

    /// True when the provider said the request exceeds the model's context window.
    pub fn is_context_length(&self) -> bool {
        self.context_overflow().is_some()
    }

    /// True for billing/quota refusals (402, or a 429 that names quota or billing): retrying
    /// cannot help, the user must check their balance or plan.
    pub fn is_billing(&self) -> bool {
        match self.root() {
            LlmError::Status { status, body, .. } => is_billing_answer(*status, body),
            _ => false,
        }
    }

    /// True for 401/403: the key is wrong or lacks access.
    pub fn is_auth(&self) -> bool {
        matches!(self.http_status(), Some(401 | 403))
    }

    /// The `error_class` vocabulary of the event stream.
    pub fn error_class(&self) -> &'static str {
        match self.root() {
            LlmError::Status { status, .. } => match status {
                401 | 403 => "provider_auth",
                429 => "rate_limited",
                500.. => "provider_unavailable",
                _ => "provider_request",
            },
            LlmError::Network { kind, .. } => match kind {
                NetworkKind::Refused => "connection_refused",
                NetworkKind::Dns => "dns_failure",
                NetworkKind::Certificate => "tls_certificate",
                NetworkKind::Closed => "connection_closed",
            },
            LlmError::Timeout(_) => "network_timeout",
            LlmError::StreamIdle(_) => "stream_idle_timeout",
            LlmError::Protocol(_) | LlmError::BrokenAnswer(_) => "invalid_json",
            LlmError::Replay(_) | LlmError::Config(_) => "provider_config",
            LlmError::RetryExhausted { .. } => "error",
        }
    }
}

impl Classified for LlmError {
    /// A refused key, a wrong endpoint or setting is the configuration's; everything else
    /// happened at the other end of the connection.
    fn kind(&self) -> ErrorKind {
        match self.root() {
            LlmError::Status {
                status: 401 | 403 | 404,
                ..
            }
            | LlmError::Replay(_)
            | LlmError::Config(_) => ErrorKind::Config,
            _ => ErrorKind::Remote,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self.root() {
            LlmError::Status {
                status: 401 | 403, ..
            } => Some(
                "the server refused the API key: check ODEK_API_KEY (or DEEPSEEK_API_KEY / OPENAI_API_KEY) and that it matches --base-url",
            ),
            LlmError::Status { status: 404, .. } => Some(
                "the endpoint or model was not found: check --base-url (it usually ends in /v1) and --model",
            ),
            LlmError::Network {
                kind: NetworkKind::Refused,
                ..
            } => Some(
                "nothing is listening at the base URL: is the model server running? (see `odek config` for the endpoint in use)",
            ),
            LlmError::Network {
                kind: NetworkKind::Certificate,
                ..
            } => Some(
                "the server's TLS certificate is not trusted: if a private CA signed it, add the CA to the system's trust store or point SSL_CERT_FILE at it",
            ),
            _ => None,
        }
    }
}

/// Maps a transport failure: timeouts to [`LlmError::Timeout`], everything else to
/// [`LlmError::Network`] with the whole cause chain (e.g. `… Connection refused`).
pub(crate) fn transport_error(error: &reqwest::Error, timeout: Duration) -> LlmError {
    if error.is_timeout() {
        return LlmError::Timeout(timeout);
    }
    if error.is_builder() {
        return LlmError::Config(format!("cannot build the request: {error}"));
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    LlmError::Network {
        kind: NetworkKind::of(error),
        message: text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, body: &str) -> LlmError {
        LlmError::Status {
            status: code,
            reason: "x".into(),
            body: body.into(),
            retry_after: None,
        }
    }

    #[test]
    fn context_length_is_recognised_through_retries() {
        let e = LlmError::RetryExhausted {
            attempts: 2,
            last: Box::new(status(400, "This model's Maximum Context Length is 8192")),
        };
        assert!(e.is_context_length());
        assert!(!status(500, "context length").is_context_length());
        assert!(status(500, "the input length exceeds the context length").is_context_length());
        assert!(!status(400, "bad request").is_context_length());
    }

    fn network(kind: NetworkKind) -> LlmError {
        LlmError::Network {
            kind,
            message: "x".into(),
        }
    }

    #[test]
    fn network_kinds_come_from_the_typed_causes() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(NetworkKind::of(&refused), NetworkKind::Refused);
        // As tokio-rustls and hyper hand it on: an I/O error around an I/O error around it.
        let tls = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
        ));
        assert_eq!(NetworkKind::of(&tls), NetworkKind::Certificate);
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(NetworkKind::of(&reset), NetworkKind::Closed);
        assert_eq!(network(NetworkKind::Dns).error_class(), "dns_failure");
        assert!(
            network(NetworkKind::Refused)
                .hint()
                .is_some_and(|h| h.contains("nothing is listening"))
        );
        assert!(
            network(NetworkKind::Certificate)
                .hint()
                .is_some_and(|h| h.contains("certificate"))
        );
        assert!(
            status(401, "")
                .hint()
                .is_some_and(|h| h.contains("API key"))
        );
        assert!(
            status(404, "")
                .hint()
                .is_some_and(|h| h.contains("--base-url"))
        );
        assert_eq!(status(500, "").hint(), None);
    }

    #[test]
    fn classes() {
        assert_eq!(status(401, "").error_class(), "provider_auth");
        assert_eq!(status(429, "").error_class(), "rate_limited");
        assert_eq!(status(503, "").error_class(), "provider_unavailable");
        assert!(status(403, "").is_auth());
        assert_eq!(
            LlmError::Config("x".into()).error_class(),
            "provider_config"
        );
    }

    #[test]
    fn billing_answers() {
        assert!(status(402, "").is_billing());
        assert!(status(429, r#"{"error":{"code":"insufficient_quota"}}"#).is_billing());
        assert!(status(429, "You exceeded your current Quota").is_billing());
        assert!(!status(429, "rate limit reached, slow down").is_billing());
        assert!(!status(503, "billing").is_billing());
    }
}
