//! Retry policy of the HTTP client: which failures deserve another attempt and how long to
//! wait before it.
//!
//! Retried: 429 (unless it is a billing/quota refusal), 500, 502, 503, 504, connection errors,
//! timeouts, idle streams and broken answers (a stream that stops before its end, a body that
//! is not JSON, no choices) — also after text was streamed: the client then tells the sink to
//! discard it ([`super::Delta::Restart`]). Never retried: other statuses (400, 401, 403, 404,
//! 402…) and answers too large to read. The wait is exponential (`base·2^(n-1)`, capped at
//! 30 s, plus up to 25 % jitter) unless the server sent a positive `Retry-After`, which is
//! used instead (capped at 60 s).

use std::time::{Duration, SystemTime};

use super::{LlmError, NetworkKind};

/// Longest exponential wait, before jitter.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Longest wait a server may ask for with `Retry-After`.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Jitter adds up to this fraction of the wait.
const JITTER_FRACTION: f64 = 0.25;

/// Told to the `on_retry` callback before the client sleeps and tries again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    /// Total attempts allowed.
    pub max_attempts: u32,
    /// How long the client waits before that attempt.
    pub wait: Duration,
    /// What went wrong, e.g. `503 Service Unavailable`.
    pub reason: String,
    /// True when `wait` came from the server's `Retry-After` header.
    pub from_retry_after: bool,
    /// True when text of the failed attempt had been streamed and is now discarded.
    pub discards_partial_answer: bool,
}

/// What the client does after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryDecision {
    /// Sleep `wait`, then try again.
    Retry {
        wait: Duration,
        from_retry_after: bool,
    },
    /// Give up with the error as it is.
    GiveUp,
    /// Give up: the error was retryable but no attempts are left.
    Exhausted,
}

/// Attempt bookkeeping of one `complete` call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    pub max_attempts: u32,
    pub backoff_base: Duration,
}

impl RetryPolicy {
    /// Decides what follows failed attempt number `attempt` (1-based); `jitter_unit` is a
    /// random number in `[0, 1)`.
    pub(crate) fn decide(&self, error: &LlmError, attempt: u32, jitter_unit: f64) -> RetryDecision {
        if !is_retryable(error) {
            return RetryDecision::GiveUp;
        }
        if attempt >= self.max_attempts {
            return if self.max_attempts > 1 {
                RetryDecision::Exhausted
            } else {
                RetryDecision::GiveUp
            };
        }
        match server_retry_after(error) {
            Some(wait) => RetryDecision::Retry {
                wait,
                from_retry_after: true,
            },
            None => RetryDecision::Retry {
                wait: backoff_delay(self.backoff_base, attempt, jitter_unit),
                from_retry_after: false,
            },
        }
    }
}

/// The wait before retry number `retry` (1 for the first retry): `base·2^(retry-1)` capped at
/// [`MAX_BACKOFF`], plus `jitter_unit` (clamped to `[0, 1]`) times 25 % of that.
pub(crate) fn backoff_delay(base: Duration, retry: u32, jitter_unit: f64) -> Duration {
    let doublings = retry.saturating_sub(1).min(31);
    let exponential = base.saturating_mul(1u32 << doublings).min(MAX_BACKOFF);
    let jitter = exponential.mul_f64(JITTER_FRACTION * jitter_unit.clamp(0.0, 1.0));
    exponential + jitter
}

/// True for failures another attempt may fix.
pub(crate) fn is_retryable(error: &LlmError) -> bool {
    match error {
        LlmError::Status { status, .. } => match status {
            429 => !error.is_billing(),
            // Some servers answer an overflow with a 500: the same request cannot fit later.
            // 529 is Anthropic's "overloaded".
            500 | 502 | 503 | 504 | 529 => !error.is_context_length(),
            _ => false,
        },
        // A certificate the client does not trust stays untrusted: say so at once.
        LlmError::Network { kind, .. } => *kind != NetworkKind::Certificate,
        LlmError::Timeout(_) | LlmError::StreamIdle(_) | LlmError::BrokenAnswer(_) => true,
        LlmError::Protocol(_)
        | LlmError::RetryExhausted { .. }
        | LlmError::Replay(_)
        | LlmError::Config(_) => false,
    }
}

fn server_retry_after(error: &LlmError) -> Option<Duration> {
    match error {
        LlmError::Status {
            retry_after: Some(wait),
            ..
        } if !wait.is_zero() => Some((*wait).min(MAX_RETRY_AFTER)),
        _ => None,
    }
}

/// Parses a `Retry-After` value: delay seconds or an HTTP-date. Returns `None` for zero,
/// past dates and garbage; caps the result at [`MAX_RETRY_AFTER`].
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = if let Ok(seconds) = value.parse::<u64>() {
        Duration::from_secs(seconds)
    } else if let Ok(seconds) = value.parse::<f64>() {
        Duration::try_from_secs_f64(seconds).ok()?
    } else {
        httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .ok()?
    };
    (!wait.is_zero()).then(|| wait.min(MAX_RETRY_AFTER))
}

/// A short reason for the retry notice, e.g. `503 Service Unavailable` or
/// `connection error: connection refused`.
pub(crate) fn retry_reason(error: &LlmError) -> String {
    match error {
        LlmError::Status { status, reason, .. } => format!("{status} {reason}").trim().to_string(),
        other => {
            let text = other.to_string();
            text.strip_prefix("llm: ").unwrap_or(&text).to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(kind: NetworkKind, message: &str) -> LlmError {
        LlmError::Network {
            kind,
            message: message.into(),
        }
    }

    fn status(code: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
        LlmError::Status {
            status: code,
            reason: "Reason".into(),
            body: body.into(),
            retry_after,
        }
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn an_untrusted_certificate_is_not_retried_other_network_errors_are() {
        let cert = network(
            NetworkKind::Certificate,
            "invalid peer certificate: UnknownIssuer",
        );
        assert!(!is_retryable(&cert));
        assert_eq!(cert.error_class(), "tls_certificate");
        assert!(is_retryable(&network(
            NetworkKind::Closed,
            "connection reset by peer"
        )));
        assert!(is_retryable(&network(
            NetworkKind::Closed,
            "tls handshake eof"
        )));
    }

    #[test]
    fn backoff_doubles_caps_and_jitters() {
        assert_eq!(backoff_delay(SECOND, 1, 0.0), SECOND);
        assert_eq!(backoff_delay(SECOND, 2, 0.0), 2 * SECOND);
        assert_eq!(backoff_delay(SECOND, 3, 0.0), 4 * SECOND);
        assert_eq!(backoff_delay(SECOND, 6, 0.0), MAX_BACKOFF);
        assert_eq!(backoff_delay(SECOND, 100, 0.0), MAX_BACKOFF);
        assert_eq!(backoff_delay(SECOND, 2, 1.0), Duration::from_millis(2500));
        assert_eq!(backoff_delay(SECOND, 2, 7.0), Duration::from_millis(2500));
        assert_eq!(backoff_delay(SECOND, 0, 0.0), SECOND);
        let jittered = backoff_delay(SECOND, 1, crate::random::unit());
        assert!(jittered >= SECOND && jittered <= Duration::from_millis(1250));
    }

    #[test]
    fn what_is_retried() {
        for code in [429, 500, 502, 503, 504] {
            assert!(is_retryable(&status(code, "", None)), "{code}");
        }
        for code in [400, 401, 402, 403, 404, 422] {
            assert!(!is_retryable(&status(code, "", None)), "{code}");
        }
        assert!(!is_retryable(&status(429, "insufficient_quota", None)));
        let overflow = r#"{"error":"the input length exceeds the context length"}"#;
        assert!(
            !is_retryable(&status(500, overflow, None)),
            "an overflow answered with a 500 cannot fit on a retry"
        );
        assert!(is_retryable(&network(
            NetworkKind::Closed,
            "connection reset"
        )));
        assert!(is_retryable(&LlmError::Timeout(SECOND)));
        assert!(is_retryable(&LlmError::StreamIdle(SECOND)));
        assert!(!is_retryable(&LlmError::Protocol("bad".into())));
        assert!(is_retryable(&LlmError::BrokenAnswer("no choices".into())));
    }

    #[test]
    fn decisions() {
        let policy = RetryPolicy {
            max_attempts: 3,
            backoff_base: SECOND,
        };
        let busy = status(503, "", None);
        assert_eq!(
            policy.decide(&busy, 1, 0.0),
            RetryDecision::Retry {
                wait: SECOND,
                from_retry_after: false
            }
        );
        assert_eq!(policy.decide(&busy, 3, 0.0), RetryDecision::Exhausted);
        let broken = LlmError::BrokenAnswer("the stream ended before the answer did".into());
        assert!(
            matches!(policy.decide(&broken, 1, 0.0), RetryDecision::Retry { .. }),
            "a broken answer is retried, streamed text or not"
        );
        let told = status(429, "", Some(Duration::from_secs(90)));
        assert_eq!(
            policy.decide(&told, 2, 0.0),
            RetryDecision::Retry {
                wait: MAX_RETRY_AFTER,
                from_retry_after: true
            }
        );
        let zero = status(429, "", Some(Duration::ZERO));
        assert!(matches!(
            policy.decide(&zero, 1, 0.0),
            RetryDecision::Retry {
                from_retry_after: false,
                ..
            }
        ));
        let single = RetryPolicy {
            max_attempts: 1,
            backoff_base: SECOND,
        };
        assert_eq!(single.decide(&busy, 1, 0.0), RetryDecision::GiveUp);
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(2 * SECOND));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_retry_after("0", now), None);
        assert_eq!(parse_retry_after("600", now), Some(MAX_RETRY_AFTER));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(5));
        assert_eq!(parse_retry_after(&later, now), Some(5 * SECOND));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(5));
        assert_eq!(parse_retry_after(&earlier, now), None);
    }

    #[test]
    fn reasons() {
        let mut e = status(503, "", None);
        if let LlmError::Status { reason, .. } = &mut e {
            *reason = "Service Unavailable".into();
        }
        assert_eq!(retry_reason(&e), "503 Service Unavailable");
        assert_eq!(
            retry_reason(&network(NetworkKind::Refused, "connection refused")),
            "connection error: connection refused"
        );
    }
}
