//! Who may talk to the server: requests must name a loopback host (so a web page on another
//! origin cannot reach the server by DNS rebinding), carry the instance token (header
//! `X-Odek-Token`, `Authorization: Bearer`, or the HttpOnly cookie set by `GET /?token=`),
//! and, when they change state, come from the server's own origin if they say where they
//! come from. Tokens are compared in constant time.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::AppState;
use super::error::ApiError;

/// The instance token's header.
pub const TOKEN_HEADER: &str = "x-odek-token";
/// The instance token's cookie.
pub const TOKEN_COOKIE: &str = "odek_token";

/// A new instance token: 32 random bytes as 64 lowercase hex characters.
pub fn new_token() -> String {
    crate::random::hex_id::<32>()
}

/// Constant-time equality of a presented token and the instance token.
pub fn token_matches(presented: &str, token: &str) -> bool {
    presented.len() == token.len() && bool::from(presented.as_bytes().ct_eq(token.as_bytes()))
}

/// The middleware in front of every route: loopback `Host` (403), then the token on
/// `/api/*` (401), then a same-origin `Origin` on state-changing requests (403).
pub async fn guard(State(app): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let Some(host) = loopback_host(headers) else {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden: the Host header must name this machine (127.0.0.1, localhost or [::1])",
        )
        .into_response();
    };
    if req.uri().path().starts_with("/api/") {
        if !presented_tokens(headers).any(|t| token_matches(t, &app.token)) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong token: send the instance token printed by odek serve (X-Odek-Token header, Bearer, or open the token URL)",
            )
            .into_response();
        }
        if changes_state(req.method()) && !same_origin(headers, host) {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden: cross-origin request refused",
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// The `Host` header when it names a loopback address (with any port).
fn loopback_host(headers: &HeaderMap) -> Option<&str> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next()?,
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    let loopback = name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then_some(host)
}

/// Every token the request presents, in header, bearer and cookie form.
pub fn presented_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    let header_token = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok());
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookies = headers
        .get_all(header::COOKIE)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == TOKEN_COOKIE)
        .map(|(_, value)| value);
    header_token.into_iter().chain(bearer).chain(cookies)
}

fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// True without an `Origin` header (not a browser's cross-site request), or when it is this
/// server's own origin.
fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    match headers.get(header::ORIGIN).map(|v| v.to_str()) {
        None => true,
        Some(Ok(origin)) => origin
            .strip_prefix("http://")
            .is_some_and(|rest| rest.eq_ignore_ascii_case(host)),
        Some(Err(_)) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn only_loopback_hosts_pass() {
        for ok in [
            "127.0.0.1:8080",
            "localhost:1",
            "[::1]:9",
            "127.0.0.1",
            "LOCALHOST",
        ] {
            assert!(loopback_host(&headers(&[("host", ok)])).is_some(), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "10.0.0.1:80",
            "127.0.0.1.evil.com",
            "[::2]:1",
        ] {
            assert!(loopback_host(&headers(&[("host", bad)])).is_none(), "{bad}");
        }
        assert!(loopback_host(&HeaderMap::new()).is_none());
    }

    #[test]
    fn tokens_come_from_header_bearer_or_cookie() {
        let h = headers(&[
            ("x-odek-token", "a"),
            ("authorization", "Bearer b"),
            ("cookie", "x=1; odek_token=c; y=2"),
        ]);
        assert_eq!(presented_tokens(&h).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert!(token_matches("abc", "abc"));
        assert!(!token_matches("abd", "abc"));
        assert!(!token_matches("ab", "abc"));
    }

    #[test]
    fn origin_must_be_this_server_when_sent() {
        let host = "127.0.0.1:8080";
        assert!(same_origin(&HeaderMap::new(), host));
        assert!(same_origin(
            &headers(&[("origin", "http://127.0.0.1:8080")]),
            host
        ));
        assert!(!same_origin(
            &headers(&[("origin", "http://evil.example")]),
            host
        ));
        assert!(!same_origin(&headers(&[("origin", "null")]), host));
        assert_eq!(new_token().len(), 64);
    }
}
