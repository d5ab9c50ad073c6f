//! `web_fetch`: one page over http(s), HTML as Markdown, text and JSON as they are.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::guard::checked_addresses;
use super::{MAX_DOWNLOAD_BYTES, MAX_REDIRECTS, WebSettings, host_listed};
use crate::tools::danger::{Classification, DangerClass};
use crate::tools::{Tool, ToolContext, ToolError, decode_args};

/// `max_chars` unless the call says.
const DEFAULT_MAX_CHARS: usize = 20_000;
/// The largest `max_chars`.
pub(crate) const MAX_MAX_CHARS: usize = 100_000;
/// Characters of an error page quoted back.
const ERROR_PAGE_CHARS: usize = 2_000;
/// Tags whose content never reaches the model.
const SKIPPED_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
];

/// Fetches a page.
pub struct WebFetchTool {
    settings: Arc<WebSettings>,
}

impl WebFetchTool {
    /// A `web_fetch` with these settings.
    pub fn new(settings: Arc<WebSettings>) -> Self {
        WebFetchTool { settings }
    }
}

#[derive(Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    max_chars: Option<usize>,
}

fn url_arg(args: &Value) -> &str {
    args.get("url").and_then(Value::as_str).unwrap_or("")
}

/// The URL of a call as it will be fetched — the approval and the fetch read it through this
/// one function, so they can never see different hosts. Only http(s), with a host and
/// without a user name or password (they would be sent as credentials and shown in
/// prompts and results).
fn parse_url(text: &str) -> Result<Url, ToolError> {
    let url = Url::parse(text.trim())
        .map_err(|e| ToolError(format!("web_fetch: invalid URL {text:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError(format!(
            "web_fetch: {} is not an http or https URL",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ToolError(format!("web_fetch: {text:?} has no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ToolError::new(
            "web_fetch: URLs with a user name or password are not fetched",
        ));
    }
    Ok(url)
}

/// The host of the call's URL, lower-case, and its port (`None` when the URL would be
/// refused).
fn host_of(args: &Value) -> Option<(String, u16)> {
    let url = parse_url(url_arg(args)).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    Some((host, url.port_or_known_default()?))
}

fn max_chars(args: &Value) -> usize {
    args.get("max_chars")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_MAX_CHARS, |n| n as usize)
        .clamp(1, MAX_MAX_CHARS)
}

#[async_trait]
impl Tool for WebFetchTool {
    fn name(&self) -> &str {
        crate::tools::catalog::WEB_FETCH.name
    }

    fn description(&self) -> &str {
        "GET an http(s) URL: HTML comes back as Markdown (links kept), text and JSON as they are."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "url":{"type":"string"},
                "max_chars":{"type":"integer","minimum":1,"maximum":100000,"description":"Default 20000."}
              },
              "required":["url"]
            }"#,
        )
    }

    /// Network egress, trusted for a session host by host; hosts in `web.allow_hosts` never
    /// ask.
    /// A URL that does not parse is not asked about: the call refuses it without a request.
    fn classify(&self, args: &Value, _ctx: &ToolContext) -> Option<Classification> {
        let (host, port) = host_of(args)?;
        if host_listed(&self.settings.allow_hosts, &host, port) {
            return None;
        }
        Some(
            Classification::new(DangerClass::NetworkEgress, format!("fetches from {host}"))
                .scoped(format!("host:{host}")),
        )
    }

    /// Content from outside: a turn that ran it is tainted.
    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!(
            "web:{}",
            host_of(args).map(|(host, _)| host).unwrap_or_default()
        ))
    }

    fn summary(&self, args: &Value) -> String {
        url_arg(args).to_string()
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"host": host_of(args).map(|(host, _)| host).unwrap_or_default()}))
    }

    /// The tool cuts the page at `max_chars` itself.
    fn output_limit(&self, args: &Value) -> usize {
        max_chars(args) * 4 + 1024
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let parsed: Args = decode_args(self.name(), args)?;
        let max = parsed
            .max_chars
            .unwrap_or(DEFAULT_MAX_CHARS)
            .clamp(1, MAX_MAX_CHARS);
        let url = parse_url(&parsed.url)?;
        let timeout = self.settings.timeout;
        let shown = url.to_string();
        let started = std::time::Instant::now();
        let work = async {
            let page = match fetch(url, &self.settings).await? {
                Fetched::Page(page) => page,
                Fetched::Elsewhere { from, to } => return Ok(elsewhere(&from, &to)),
            };
            let redactor = ctx.redactor.clone();
            let deadline = started + timeout;
            tokio::task::spawn_blocking(move || page.render(max, &redactor, deadline))
                .await
                .map_err(|e| ToolError(format!("web_fetch: {e}")))?
        };
        tokio::select! {
            done = tokio::time::timeout(timeout, work) => done.map_err(|_| ToolError(format!(
                "web_fetch: {shown} timed out after {} s (web.timeout_seconds)",
                timeout.as_secs()
            )))?,
            () = ctx.cancel.cancelled() => Err(ToolError::new("web_fetch: cancelled")),
        }
    }
}

/// What a fetch came to: the page, or a redirect to another host, which is not followed
/// (the approval was for the host the model named; fetching the other one is a call of
/// its own, asked about on its own).
enum Fetched {
    Page(Page),
    Elsewhere { from: Url, to: Url },
}

/// The answer for a redirect that was not followed.
fn elsewhere(from: &Url, to: &Url) -> String {
    format!(
        "URL: {from}\nRedirect: {to}\n\n[the page redirects to another host; call web_fetch with that URL to follow it]"
    )
}

/// True when a redirect from `from` to `to` stays with the host the model named: the same
/// host (another scheme or port is fine), its `www.` twin, or a host that never asks.
fn same_site(from: &Url, to: &Url, settings: &WebSettings) -> bool {
    let host = |u: &Url| u.host_str().unwrap_or_default().to_ascii_lowercase();
    let (a, b) = (host(from), host(to));
    let bare = |h: &str| h.strip_prefix("www.").unwrap_or(h).to_string();
    let port = to.port_or_known_default().unwrap_or(0);
    a == b || bare(&a) == bare(&b) || host_listed(&settings.allow_hosts, &b, port)
}

/// What a fetch brought back.
struct Page {
    url: Url,
    status: reqwest::StatusCode,
    content_type: String,
    body: Vec<u8>,
    /// The body was longer than [`MAX_DOWNLOAD_BYTES`].
    cut: bool,
}

/// GETs `url`, following redirects itself (same site only, see [`same_site`]) so every hop
/// passes the address guard, each connection pinned to the addresses just checked.
async fn fetch(mut url: Url, settings: &WebSettings) -> Result<Fetched, ToolError> {
    for _ in 0..=MAX_REDIRECTS {
        let addrs = checked_addresses(&url, settings).await?;
        let host = url.host_str().unwrap_or_default().to_string();
        let mut builder = crate::llm::http::client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_err()
        {
            builder = builder.resolve_to_addrs(&host, &addrs);
        }
        let client = builder
            .build()
            .map_err(|e| ToolError(format!("web_fetch: {e}")))?;
        let response = client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| ToolError(format!("web_fetch: {url}: {}", error_chain(&e))))?;
        if response.status().is_redirection()
            && let Some(location) = response.headers().get(reqwest::header::LOCATION)
        {
            let location = location.to_str().unwrap_or_default();
            let next = url.join(location).map_err(|e| {
                ToolError(format!(
                    "web_fetch: {url} redirects to an invalid URL {location:?}: {e}"
                ))
            })?;
            // A user name or password is refused at every hop, as in the first URL: it is
            // neither sent nor shown.
            if !next.username().is_empty() || next.password().is_some() {
                return Err(ToolError(format!(
                    "web_fetch: {url} redirects to a URL with a user name or password; it is not followed"
                )));
            }
            if !same_site(&url, &next, settings) {
                return Ok(Fetched::Elsewhere {
                    from: url,
                    to: next,
                });
            }
            url = next;
            continue;
        }
        return read_page(url, response).await.map(Fetched::Page);
    }
    Err(ToolError(format!(
        "web_fetch: more than {MAX_REDIRECTS} redirects; the last one went to {url}"
    )))
}

/// Reads the body up to [`MAX_DOWNLOAD_BYTES`]; the rest is never downloaded. A body whose
/// declared type is refused is not read at all.
async fn read_page(url: Url, response: reqwest::Response) -> Result<Page, ToolError> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let declared_refused = !content_type.is_empty() && kind_of(&content_type, b"") == Kind::Refused;
    let (body, cut) = if declared_refused {
        (Vec::new(), false)
    } else {
        read_capped(response, MAX_DOWNLOAD_BYTES)
            .await
            .map_err(|e| ToolError(format!("web_fetch: {url}: {}", error_chain(&e))))?
    };
    Ok(Page {
        url,
        status,
        content_type,
        body,
        cut,
    })
}

/// At most `cap` bytes of a response's body, and whether there was more (the rest is not
/// downloaded: the connection is dropped).
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// What kind of body a content type names.
#[derive(Debug, PartialEq)]
enum Kind {
    Html,
    Text,
    Refused,
}

fn kind_of(content_type: &str, body: &[u8]) -> Kind {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "" if !crate::tools::paths::looks_binary(body) => {
            let start = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
            if start.trim_start().starts_with("<!doctype html") || start.contains("<html") {
                Kind::Html
            } else {
                Kind::Text
            }
        }
        m if m.starts_with("text/")
            || m.ends_with("+json")
            || m.ends_with("+xml")
            || matches!(
                m,
                "application/json"
                    | "application/xml"
                    | "application/javascript"
                    | "application/x-ndjson"
            ) =>
        {
            Kind::Text
        }
        _ => Kind::Refused,
    }
}

impl Page {
    /// The answer for the model: a short header, then the page as Markdown or text,
    /// redacted, then cut at `max` characters.
    /// The page as the model reads it; the conversion gives up at `deadline` (the tool has
    /// answered by then), so a page made to be slow costs no CPU after its call.
    fn render(
        self,
        max: usize,
        redactor: &crate::redact::Redactor,
        deadline: std::time::Instant,
    ) -> Result<String, ToolError> {
        let kind = kind_of(&self.content_type, &self.body);
        if kind == Kind::Refused {
            let what = if self.content_type.is_empty() {
                "binary data"
            } else {
                &self.content_type
            };
            return Err(ToolError(format!(
                "web_fetch: {} is {what}, not HTML, text or JSON; refused",
                self.url
            )));
        }
        let raw = String::from_utf8_lossy(&self.body);
        let text = match kind {
            Kind::Html => html_to_markdown(&raw, deadline)?,
            _ => raw.into_owned(),
        };
        let text = redactor.redact(&text);
        if !self.status.is_success() {
            let quoted = crate::text::truncate(text.trim(), ERROR_PAGE_CHARS);
            return Err(ToolError(format!(
                "web_fetch: {} answered {}\n{quoted}",
                self.url, self.status
            )));
        }
        let total = text.chars().count();
        let mut out = format!("URL: {}\nContent-Type: {}\n\n", self.url, self.content_type);
        match text.char_indices().nth(max) {
            Some((at, _)) => {
                out.push_str(&text[..at]);
                out.push_str(&format!(
                    "\n\n[cut at {max} of {total} characters; call again with a larger max_chars (at most {MAX_MAX_CHARS}) for more]"
                ));
            }
            None => out.push_str(&text),
        }
        if self.cut {
            out.push_str(&format!(
                "\n\n[the page is larger than {} MiB; only its start was downloaded]",
                MAX_DOWNLOAD_BYTES / (1024 * 1024)
            ));
        }
        Ok(out)
    }
}

/// HTML as Markdown: links and headings kept; scripts, styles and embedded objects dropped.
/// Elements nested deeper than [`super::nesting::MAX_DEPTH`] are unwrapped before parsing
/// (the parser's scope checks walk every open element) and the parsed tree is capped again
/// (the converter recurses once per level). The page is parsed in pieces and the work stops
/// at `deadline`.
pub fn html_to_markdown(html: &str, deadline: std::time::Instant) -> Result<String, ToolError> {
    use html5ever::tendril::TendrilSink as _;
    const PIECE_BYTES: usize = 64 * 1024;
    let late = || {
        (std::time::Instant::now() > deadline).then(|| {
            ToolError::new("web_fetch: the page took longer to convert than the tool's time")
        })
    };
    let flat = super::nesting::flatten_deep(html);
    let mut parser = html5ever::parse_document(
        markup5ever_rcdom::RcDom::default(),
        html5ever::ParseOpts::default(),
    );
    let mut rest: &str = &flat;
    while !rest.is_empty() {
        if let Some(e) = late() {
            return Err(e);
        }
        let mut cut = rest.len().min(PIECE_BYTES);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, after) = rest.split_at(cut);
        parser.process(piece.into());
        rest = after;
    }
    let tree = parser.finish().document;
    super::nesting::cap_tree(&tree, super::nesting::MAX_DEPTH + TREE_MARGIN);
    if let Some(e) = late() {
        return Err(e);
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build();
    Ok(converter.tree_to_markdown(&tree))
}

/// Levels the parser adds above the page's own elements (`html`, `body`, `tbody`, …).
const TREE_MARGIN: usize = 16;

/// An error with its causes (reqwest's own message is often just "error sending request").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_without_scripts_or_styles() {
        let html = r#"<html><head><title>T</title><style>p{color:red}</style></head>
            <body><h1>Title</h1><p>Read <a href="https://example.com/x">the docs</a>.</p>
            <script>alert("no")</script><ul><li>one</li><li>two</li></ul></body></html>"#;
        let md = html_to_markdown(html, later()).expect("converts");
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("[the docs](https://example.com/x)"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(!md.contains("alert") && !md.contains("color:red"), "{md}");
    }

    /// Thousands of nested elements (a page made to crash the converter) are converted
    /// on a thread with the stack of a blocking task, their text kept.
    #[test]
    fn a_page_of_deeply_nested_elements_converts_without_exhausting_the_stack() {
        for depth in [2_000, 10_000, 50_000] {
            let html = format!(
                "<html><body>{}deep text{}</body></html>",
                "<div>".repeat(depth),
                "</div>".repeat(depth)
            );
            let md = std::thread::Builder::new()
                .stack_size(2 * 1024 * 1024)
                .spawn(move || html_to_markdown(&html, later()))
                .expect("thread")
                .join()
                .expect("no overflow")
                .expect("converts");
            assert!(md.contains("deep text"), "{depth}: {md}");
        }
    }

    fn later() -> std::time::Instant {
        std::time::Instant::now() + std::time::Duration::from_secs(3600)
    }

    /// The conversion stops at its deadline instead of running on after the tool answered.
    #[test]
    fn a_conversion_past_its_deadline_stops() {
        let html = "<p>para</p>".repeat(200_000);
        let past = std::time::Instant::now();
        let e = html_to_markdown(&html, past).expect_err("stopped");
        assert!(e.0.contains("took longer to convert"), "{e:?}");
    }

    #[test]
    fn the_approval_and_the_fetch_read_one_url() {
        let tool = WebFetchTool::new(Arc::new(WebSettings::default()));
        let ctx = ToolContext::in_dir(&std::env::temp_dir());
        // Unicode spaces around the URL are trimmed for both: the host asked about is the
        // host fetched.
        let spaced = json!({"url": "\u{a0}https://evil.example/x\u{2003}"});
        let asked = tool.classify(&spaced, &ctx).expect("asks");
        assert_eq!(asked.scope.as_deref(), Some("host:evil.example"));
        assert_eq!(
            parse_url("\u{a0}https://evil.example/x").map(|u| u.host_str().map(str::to_string)),
            Ok(Some("evil.example".to_string()))
        );
        // What the fetch refuses is never asked about, and no host is ever scoped empty.
        for bad in [
            "http://user:pw@example.com/",
            "ftp://example.com/",
            "https://",
            "not a url",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
            assert!(tool.classify(&json!({"url": bad}), &ctx).is_none(), "{bad}");
        }
        assert!(
            parse_url("http://user:pw@example.com/")
                .is_err_and(|e| e.0.contains("user name or password"))
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(kind_of("text/html; charset=utf-8", b""), Kind::Html);
        assert_eq!(kind_of("application/json", b""), Kind::Text);
        assert_eq!(kind_of("application/problem+json", b""), Kind::Text);
        assert_eq!(kind_of("text/plain", b""), Kind::Text);
        assert_eq!(kind_of("image/png", b""), Kind::Refused);
        assert_eq!(kind_of("application/pdf", b""), Kind::Refused);
        assert_eq!(kind_of("", b"<!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(kind_of("", b"plain words"), Kind::Text);
        assert_eq!(kind_of("", b"\0\x01"), Kind::Refused);
    }

    #[test]
    fn hosts_in_allow_hosts_never_ask_and_others_are_trusted_by_host() {
        let tool = WebFetchTool::new(Arc::new(WebSettings {
            allow_hosts: vec!["docs.rs".into(), "*.python.org".into()],
            ..WebSettings::default()
        }));
        let ctx = ToolContext::in_dir(&std::env::temp_dir());
        for url in ["https://docs.rs/x", "https://docs.python.org/3/"] {
            assert!(tool.classify(&json!({"url": url}), &ctx).is_none(), "{url}");
        }
        let asked = tool
            .classify(&json!({"url": "https://Example.com/a"}), &ctx)
            .expect("asks");
        assert_eq!(asked.class, DangerClass::NetworkEgress);
        assert_eq!(asked.scope.as_deref(), Some("host:example.com"));
        assert_eq!(
            tool.untrusted_source(&json!({"url": "https://example.com/a"}))
                .as_deref(),
            Some("web:example.com")
        );
    }
}
