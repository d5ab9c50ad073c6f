//! The credentials the server accepts: the instance token (header `X-Odek-Token` or
//! `Authorization: Bearer`) and the browser-session credentials held by this instance's
//! cookie (see `auth.rs` for who may talk to the server). Tokens and credentials are compared
//! in constant time.

use std::sync::{Mutex, PoisonError};

use axum::http::{HeaderMap, header};
use subtle::ConstantTimeEq;

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
    pub(super) fn revoke(&self, headers: &HeaderMap) -> bool {
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

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// A header map of `pairs` (the guard's tests in `auth.rs` use it too).
    pub(in crate::serve) fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).expect("header"));
        }
        h
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
