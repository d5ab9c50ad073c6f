//! The web UI (`ui/` in the repository, gzipped into the binary by `build.rs`): the page at
//! `/` for a signed-in browser, its stylesheet, its ES modules and the vendored renderer.
//! Sent gzipped to a client that takes it (every browser), inflated for one that does not.
//! Every answer carries a strict Content-Security-Policy: no inline script or style,
//! nothing from another origin.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use std::io::Read;

use super::AppState;
use super::credentials::token_matches;
use super::error::ApiError;

/// The files the browser gets, gzipped (`build.rs`: the page, its stylesheet and icon,
/// `js/*.js`, `vendor/*.js|txt`; tests and Node packages under `ui/` stay out).
static ASSETS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/ui_assets.rs"));

/// The gzipped bytes of the embedded file at `path`.
fn gzipped(path: &str) -> Option<&'static [u8]> {
    ASSETS.iter().find(|(p, _)| *p == path).map(|(_, gz)| *gz)
}

/// The embedded file at `path`, inflated.
pub fn asset_text(path: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gzipped(path)?)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// True when the request says it takes gzip.
fn takes_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.trim().split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// The Content-Security-Policy of every page and asset: nothing inline, nothing from
/// elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `GET /` and `GET /?token=…`: a valid token signs the browser in — an HttpOnly,
/// SameSite=Strict cookie named after this instance's port, holding a browser-session
/// credential rather than the token — and redirects to `/` (so the token leaves the
/// address bar); the page itself needs the cookie (or the token header).
pub async fn index(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if let Some(token) = params.get("token") {
        if !token_matches(token, &app.token) {
            return sign_in_page(
                StatusCode::UNAUTHORIZED,
                "That token is not this server's. Open the URL odek serve printed.",
            );
        }
        let mut response = Redirect::to("/").into_response();
        let cookie = app.browsers.set_cookie(&app.browsers.issue());
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, v);
        }
        return response;
    }
    if !app.is_signed_in(&headers) {
        return sign_in_page(
            StatusCode::UNAUTHORIZED,
            "Open the token URL odek serve printed to sign in.",
        );
    }
    match asset_response("index.html", &headers) {
        Some(response) => response,
        None => ApiError::not_found("the web UI is missing from this build").into_response(),
    }
}

/// `GET /style.css`.
pub async fn stylesheet(headers: HeaderMap) -> Response {
    asset_or_404("style.css", &headers)
}

/// `GET /favicon.svg`.
pub async fn icon(headers: HeaderMap) -> Response {
    asset_or_404("favicon.svg", &headers)
}

/// `GET /js/{file}`.
pub async fn script(Path(file): Path<String>, headers: HeaderMap) -> Response {
    asset_or_404(&format!("js/{file}"), &headers)
}

/// `GET /vendor/{file}`: the Markdown renderer and sanitizer the page imports (marked,
/// DOMPurify, copied from the pinned npm packages by `make ui-vendor`) and their licences.
pub async fn vendor(Path(file): Path<String>, headers: HeaderMap) -> Response {
    asset_or_404(&format!("vendor/{file}"), &headers)
}

fn asset_or_404(path: &str, headers: &HeaderMap) -> Response {
    asset_response(path, headers)
        .unwrap_or_else(|| ApiError::not_found(format!("no such file: /{path}")).into_response())
}

/// The embedded file at `path` with its type and the page's security headers.
fn asset_response(path: &str, request: &HeaderMap) -> Option<Response> {
    let gz = gzipped(path)?;
    let mut response = if takes_gzip(request) {
        let mut r = (StatusCode::OK, gz).into_response();
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else {
        (StatusCode::OK, asset_text(path)?).into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    secure(&mut response);
    Some(response)
}

/// The media type of an embedded file, by its extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The short page shown to a browser that has not signed in.
fn sign_in_page(status: StatusCode, text: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>odek</title><link rel=\"icon\" href=\"/favicon.svg\" type=\"image/svg+xml\"><p>{text}</p></html>"
    );
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure(&mut response);
    response
}

/// CSP, no referrer, no sniffing, no framing.
fn secure(response: &mut Response) {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_sent_only_to_clients_that_take_it() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(v).expect("value"),
            );
            takes_gzip(&h)
        };
        assert!(with("gzip, deflate, br, zstd"));
        assert!(with("br;q=1.0, gzip;q=0.8"));
        assert!(with("*"));
        assert!(!with("gzip;q=0"));
        assert!(!with("br"));
        assert!(!takes_gzip(&HeaderMap::new()));
        let plain = asset_text("style.css").expect("embedded");
        assert!(
            std::str::from_utf8(&plain)
                .expect("utf-8")
                .contains(":root")
        );
        assert!(gzipped("style.css").expect("gz").len() < plain.len());
    }

    #[test]
    fn the_page_its_stylesheet_and_modules_are_embedded_and_nothing_else() {
        let names: Vec<String> = ASSETS.iter().map(|(n, _)| n.to_string()).collect();
        for needed in [
            "index.html",
            "style.css",
            "js/main.js",
            "js/plan.js",
            "js/emoji.js",
            "js/markdown.js",
            "vendor/marked.js",
            "vendor/purify.js",
            "vendor/marked.LICENSE.txt",
        ] {
            assert!(
                names.iter().any(|n| n == needed),
                "{needed} missing: {names:?}"
            );
        }
        assert!(
            names.iter().all(|n| !n.contains("test")
                && !n.contains("node_modules")
                && !n.ends_with(".json")),
            "{names:?}"
        );
    }

    #[test]
    fn the_page_has_no_inline_script_or_style() {
        let page = asset_text("index.html").expect("embedded");
        let html = std::str::from_utf8(&page).expect("utf-8");
        assert!(!html.contains("<style"), "inline style element");
        assert!(!html.contains(" style="), "inline style attribute");
        let handler = regex::Regex::new(r"\son[a-z]+\s*=").expect("regex");
        assert!(!handler.is_match(html), "inline event handler");
        for script in html.split("<script").skip(1) {
            let tag = script.split('>').next().unwrap_or_default();
            assert!(tag.contains("src="), "inline script: <script{tag}>");
        }
    }
}
