//! Who may talk to the server: requests must name a loopback host (so a web page on another
//! origin cannot reach the server by DNS rebinding), carry the instance token (header
//! `X-Odek-Token` or `Authorization: Bearer`) or this instance's browser cookie, and, when
//! they change state, come from the server's own origin if they say where they come from.
//!
//! The browser never holds the API token. Cookies are not scoped by port, so every other
//! web server on 127.0.0.1 that the browser visits would receive a cookie of this one: the
//! cookie set by `GET /?token=` is named after this instance's port (two instances do not
//! overwrite each other's) and holds a browser-session credential of its own — random,
//! valid only as this cookie (never as a header token), revoked by `POST /api/logout` and
//! forgotten when the process ends. Tokens and credentials are compared in constant time.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::credentials::{presented_tokens, token_matches};
use super::error::ApiError;

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
        if !app.is_signed_in(headers) {
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

impl AppState {
    /// True when the request carries the API token or a signed-in browser's cookie.
    pub fn is_signed_in(&self, headers: &HeaderMap) -> bool {
        presented_tokens(headers).any(|t| token_matches(t, &self.token))
            || self.browsers.is_signed_in(headers)
    }
}

/// `POST /api/logout`: revokes the browser's credential and clears its cookie.
pub async fn logout(State(app): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let revoked = app.browsers.revoke(&headers);
    let mut response = axum::Json(serde_json::json!({"signed_out": revoked})).into_response();
    let clear = format!(
        "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        app.browsers.cookie_name()
    );
    if let Ok(value) = axum::http::HeaderValue::from_str(&clear) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
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
    use crate::serve::credentials::new_token;
    use crate::serve::credentials::tests::headers;

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
