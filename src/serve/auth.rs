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

use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::AppState;
use super::error::ApiError;

/// The instance token's header.
pub const TOKEN_HEADER: &str = "x-odek-token";
/// Browser sessions one instance keeps; signing in once more forgets the oldest.
const MAX_BROWSER_SESSIONS: usize = 32;

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

/// The API tokens the request presents, as header and bearer.
pub fn presented_tokens(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    let header_token = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok());
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    header_token.into_iter().chain(bearer)
}

/// The values of the cookies named `name`.
fn cookies<'a>(headers: &'a HeaderMap, name: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .get_all(header::COOKIE)
        .into_iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// The browsers signed in to this instance: their cookie's name and the credentials given
/// out, oldest first.
pub struct BrowserSessions {
    cookie: String,
    issued: Mutex<Vec<String>>,
}

impl BrowserSessions {
    /// None yet, for the instance listening on `port`.
    pub fn new(port: u16) -> Self {
        BrowserSessions {
            cookie: format!("odek_session_{port}"),
            issued: Mutex::new(Vec::new()),
        }
    }

    /// The cookie's name.
    pub fn cookie_name(&self) -> &str {
        &self.cookie
    }

    /// A new credential (32 random bytes as hex), the oldest forgotten past the cap.
    pub fn issue(&self) -> String {
        let credential = crate::random::hex_id::<32>();
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        if issued.len() >= MAX_BROWSER_SESSIONS {
            issued.remove(0);
        }
        issued.push(credential.clone());
        credential
    }

    /// True when the request's cookie holds a credential given out and not revoked.
    pub fn is_signed_in(&self, headers: &HeaderMap) -> bool {
        let issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        cookies(headers, &self.cookie).any(|presented| {
            // Every credential is compared, each in constant time.
            issued
                .iter()
                .fold(false, |found, c| found | token_matches(presented, c))
        })
    }

    /// Forgets the request's credentials; true when one was known.
    fn revoke(&self, headers: &HeaderMap) -> bool {
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        let before = issued.len();
        let presented: Vec<&str> = cookies(headers, &self.cookie).collect();
        issued.retain(|c| !presented.iter().any(|p| token_matches(p, c)));
        issued.len() < before
    }

    /// The `Set-Cookie` value that signs a browser in with `credential`.
    pub fn set_cookie(&self, credential: &str) -> String {
        format!(
            "{}={credential}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie
        )
    }
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
    fn tokens_come_from_header_or_bearer_and_never_from_a_cookie() {
        let h = headers(&[
            ("x-odek-token", "a"),
            ("authorization", "Bearer b"),
            ("cookie", "x=1; odek_token=c; y=2"),
        ]);
        assert_eq!(presented_tokens(&h).collect::<Vec<_>>(), ["a", "b"]);
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

    #[test]
    fn a_browser_credential_works_only_as_its_own_instances_cookie_until_revoked() {
        let sessions = BrowserSessions::new(8080);
        let credential = sessions.issue();
        let own = format!("a=1; odek_session_8080={credential}");
        assert!(sessions.is_signed_in(&headers(&[("cookie", &own)])));
        let other_port = format!("odek_session_8081={credential}");
        assert!(!sessions.is_signed_in(&headers(&[("cookie", &other_port)])));
        assert!(!sessions.is_signed_in(&headers(&[("x-odek-token", &credential)])));
        assert!(sessions.revoke(&headers(&[("cookie", &own)])));
        assert!(!sessions.is_signed_in(&headers(&[("cookie", &own)])));
        let first = sessions.issue();
        for _ in 0..MAX_BROWSER_SESSIONS {
            sessions.issue();
        }
        let first_cookie = format!("odek_session_8080={first}");
        assert!(!sessions.is_signed_in(&headers(&[("cookie", &first_cookie)])));
    }
}
