//! The web UI (`ui/` in the repository, embedded in the binary): the page at `/` for a
//! signed-in browser, its stylesheet and its ES modules. Every answer carries a strict
//! Content-Security-Policy: no inline script or style, nothing from another origin.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use rust_embed::Embed;

use super::AppState;
use super::auth::token_matches;
use super::error::ApiError;

/// The files the browser gets; tests and Node packages under `ui/` stay out.
#[derive(Embed)]
#[folder = "ui/"]
#[include = "index.html"]
#[include = "style.css"]
#[include = "favicon.svg"]
#[include = "js/*.js"]
#[include = "vendor/*.js"]
#[include = "vendor/*.txt"]
struct Assets;

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
    match asset_response("index.html") {
        Some(response) => response,
        None => ApiError::not_found("the web UI is missing from this build").into_response(),
    }
}

/// `GET /style.css`.
pub async fn stylesheet() -> Response {
    asset_or_404("style.css")
}

/// `GET /favicon.svg`.
pub async fn icon() -> Response {
    asset_or_404("favicon.svg")
}

/// `GET /js/{file}`.
pub async fn script(Path(file): Path<String>) -> Response {
    asset_or_404(&format!("js/{file}"))
}

/// `GET /vendor/{file}`: the Markdown renderer and sanitizer the page imports (marked,
/// DOMPurify, copied from the pinned npm packages by `make ui-vendor`) and their licences.
pub async fn vendor(Path(file): Path<String>) -> Response {
    asset_or_404(&format!("vendor/{file}"))
}

fn asset_or_404(path: &str) -> Response {
    asset_response(path)
        .unwrap_or_else(|| ApiError::not_found(format!("no such file: /{path}")).into_response())
}

/// The embedded file at `path` with its type and the page's security headers.
fn asset_response(path: &str) -> Option<Response> {
    let file = Assets::get(path)?;
    let mut response = (StatusCode::OK, file.data.into_owned()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
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
    fn the_page_its_stylesheet_and_modules_are_embedded_and_nothing_else() {
        let names: Vec<String> = Assets::iter().map(|n| n.to_string()).collect();
        for needed in [
            "index.html",
            "style.css",
            "js/main.js",
            "js/plan.js",
            "js/emoji.js",
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
        let page = Assets::get("index.html").expect("embedded");
        let html = std::str::from_utf8(&page.data).expect("utf-8");
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
