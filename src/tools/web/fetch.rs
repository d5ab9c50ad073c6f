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
const MAX_MAX_CHARS: usize = 100_000;
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

/// The host of the call's URL, lower-case (`None` when it does not parse).
fn host_of(args: &Value) -> Option<String> {
    Url::parse(url_arg(args))
        .ok()?
        .host_str()
        .map(str::to_ascii_lowercase)
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
        "web_fetch"
    }

    fn description(&self) -> &str {
        "GET an http(s) URL: HTML comes back as Markdown (links kept), text and JSON as they are."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "max_chars": {"type": "integer", "minimum": 1, "maximum": MAX_MAX_CHARS, "description": "Default 20000."}
            },
            "required": ["url"]
        })
    }

    /// Network egress, trusted for a session host by host; hosts in `web.allow_hosts` never
    /// ask.
    fn classify(&self, args: &Value, _ctx: &ToolContext) -> Option<Classification> {
        let host = host_of(args).unwrap_or_default();
        if !host.is_empty() && host_listed(&self.settings.allow_hosts, &host) {
            return None;
        }
        Some(
            Classification::new(DangerClass::NetworkEgress, format!("fetches from {host}"))
                .scoped(format!("host:{host}")),
        )
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("web:{}", host_of(args).unwrap_or_default()))
    }

    fn summary(&self, args: &Value) -> String {
        url_arg(args).to_string()
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"host": host_of(args).unwrap_or_default()}))
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
        let url = Url::parse(parsed.url.trim())
            .map_err(|e| ToolError(format!("web_fetch: invalid URL {:?}: {e}", parsed.url)))?;
        let timeout = self.settings.timeout;
        let work = fetch(url, &self.settings);
        let page = tokio::select! {
            page = tokio::time::timeout(timeout, work) => page.map_err(|_| ToolError(format!(
                "web_fetch: {} timed out after {} s (web.timeout_seconds)",
                parsed.url.trim(), timeout.as_secs()
            )))??,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("web_fetch: cancelled")),
        };
        tokio::task::spawn_blocking(move || page.render(max))
            .await
            .map_err(|e| ToolError(format!("web_fetch: {e}")))?
    }
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

/// GETs `url`, following redirects itself so every hop passes the address guard, each
/// connection pinned to the addresses just checked.
async fn fetch(mut url: Url, settings: &WebSettings) -> Result<Page, ToolError> {
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
            url = url.join(location).map_err(|e| {
                ToolError(format!(
                    "web_fetch: {url} redirects to an invalid URL {location:?}: {e}"
                ))
            })?;
            continue;
        }
        return read_page(url, response).await;
    }
    Err(ToolError(format!(
        "web_fetch: more than {MAX_REDIRECTS} redirects; the last one went to {url}"
    )))
}

/// Reads the body up to [`MAX_DOWNLOAD_BYTES`]; the rest is never downloaded.
async fn read_page(url: Url, mut response: reqwest::Response) -> Result<Page, ToolError> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ToolError(format!("web_fetch: {url}: {}", error_chain(&e))))?
    {
        let room = MAX_DOWNLOAD_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page {
        url,
        status,
        content_type,
        body,
        cut,
    })
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
    /// The answer for the model: a short header, then the page as Markdown or text, cut at
    /// `max` characters.
    fn render(self, max: usize) -> Result<String, ToolError> {
        let kind = kind_of(&self.content_type, &self.body);
        if kind == Kind::Refused {
            return Err(ToolError(format!(
                "web_fetch: {} is {}, not HTML, text or JSON; it was not read",
                self.url, self.content_type
            )));
        }
        let raw = String::from_utf8_lossy(&self.body);
        let text = match kind {
            Kind::Html => html_to_markdown(&raw)?,
            _ => raw.into_owned(),
        };
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
fn html_to_markdown(html: &str) -> Result<String, ToolError> {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(SKIPPED_TAGS.to_vec())
        .build();
    converter
        .convert(html)
        .map_err(|e| ToolError(format!("web_fetch: the HTML could not be read: {e}")))
}

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
        let md = html_to_markdown(html).expect("converts");
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("[the docs](https://example.com/x)"), "{md}");
        assert!(md.contains("one") && md.contains("two"), "{md}");
        assert!(!md.contains("alert") && !md.contains("color:red"), "{md}");
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
        let ctx = ToolContext {
            cwd: std::env::temp_dir(),
            cancel: tokio_util::sync::CancellationToken::new(),
        };
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
