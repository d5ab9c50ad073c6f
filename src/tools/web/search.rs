//! `web_search`: a search through a SearXNG instance's JSON API (`web_search.base_url`).
//! The tool exists only when an instance is configured; configuring it (globally, never from
//! a project) is the consent to send it queries, so searches are not asked about.

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::SearchSettings;
use crate::tools::{Tool, ToolContext, ToolError, decode_args};

/// The most results one search returns.
pub(crate) const MAX_RESULTS: usize = 20;
/// Longest snippet, in characters.
const SNIPPET_CHARS: usize = 300;
/// Largest answer read from the instance.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Searches the web.
pub struct WebSearchTool {
    settings: Arc<SearchSettings>,
}

impl WebSearchTool {
    /// A `web_search` through this instance.
    pub fn new(settings: Arc<SearchSettings>) -> Self {
        WebSearchTool { settings }
    }
}

#[derive(Deserialize)]
struct Args {
    query: String,
    #[serde(default)]
    max_results: Option<usize>,
}

/// SearXNG's answer (only what odek reads).
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

#[async_trait]
impl Tool for WebSearchTool {
    fn name(&self) -> &str {
        "web_search"
    }

    /// Content from outside: a turn that ran it is tainted.
    fn description(&self) -> &str {
        "Search the web. Returns title, URL and snippet per result; read a page with web_fetch."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "query":{"type":"string"},
                "max_results":{"type":"integer","minimum":1,"maximum":20}
              },
              "required":["query"]
            }"#,
        )
    }

    fn summary(&self, args: &Value) -> String {
        let query = args.get("query").and_then(Value::as_str).unwrap_or("");
        format!("{:?}", crate::text::truncate(query, 80))
    }

    fn event_summary(&self, _args: &Value) -> Option<Value> {
        let host = Url::parse(&self.settings.base_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        Some(json!({"host": host}))
    }

    /// Room for every result asked for (a snippet, a title and a URL each).
    fn output_limit(&self, args: &Value) -> usize {
        let asked = args
            .get("max_results")
            .and_then(Value::as_u64)
            .map_or(self.settings.max_results, |n| n as usize);
        asked.clamp(1, MAX_RESULTS) * 1024
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::new("web_search: query is empty"));
        }
        let limit = args
            .max_results
            .unwrap_or(self.settings.max_results)
            .clamp(1, MAX_RESULTS);
        let search = self.search(query);
        let hits = tokio::select! {
            hits = tokio::time::timeout(self.settings.timeout, search) => hits.map_err(|_| ToolError(format!(
                "web_search: no answer from {} within {} s (web_search.timeout_seconds)",
                self.settings.base_url, self.settings.timeout.as_secs()
            )))??,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("web_search: cancelled")),
        };
        Ok(format_hits(&hits, limit))
    }
}

impl WebSearchTool {
    async fn search(&self, query: &str) -> Result<Vec<Hit>, ToolError> {
        let base = self.settings.base_url.trim_end_matches('/');
        let mut url = Url::parse(&format!("{base}/search")).map_err(|e| {
            ToolError(format!(
                "web_search: web_search.base_url {base:?} is not a URL: {e}"
            ))
        })?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("q", query).append_pair("format", "json");
            if !self.settings.language.is_empty() {
                q.append_pair("language", &self.settings.language);
            }
            if !self.settings.categories.is_empty() {
                q.append_pair("categories", &self.settings.categories);
            }
        }
        let client = crate::llm::http::client_builder()
            .build()
            .map_err(|e| ToolError(format!("web_search: {e}")))?;
        let response = client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| ToolError(format!("web_search: {base}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            let hint = if status == reqwest::StatusCode::FORBIDDEN {
                "; SearXNG answers 403 when its JSON format is off: add json to search.formats in its settings.yml"
            } else {
                ""
            };
            return Err(ToolError(format!(
                "web_search: {base} answered {status}{hint}"
            )));
        }
        let (body, cut) = super::fetch::read_capped(response, MAX_ANSWER_BYTES)
            .await
            .map_err(|e| ToolError(format!("web_search: {base}: {e}")))?;
        if cut {
            return Err(ToolError(format!(
                "web_search: {base} answered more than {} MiB; that is not a SearXNG answer",
                MAX_ANSWER_BYTES / (1024 * 1024)
            )));
        }
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| {
            ToolError(format!(
                "web_search: {base} did not answer SearXNG's JSON: {e}"
            ))
        })?;
        Ok(answer.results)
    }
}

/// The hits as numbered entries: title, URL, snippet.
fn format_hits(hits: &[Hit], limit: usize) -> String {
    if hits.is_empty() {
        return "no results".to_string();
    }
    hits.iter()
        .take(limit)
        .enumerate()
        .map(|(i, h)| {
            let snippet = crate::text::truncate(h.content.trim(), SNIPPET_CHARS);
            let mut entry = format!("{}. {}\n   {}", i + 1, h.title.trim(), h.url.trim());
            if !snippet.is_empty() {
                entry.push_str(&format!("\n   {snippet}"));
            }
            entry
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_numbered_with_url_and_snippet() {
        let hits = vec![
            Hit {
                title: "Rust".into(),
                url: "https://rust-lang.org".into(),
                content: "A language.".into(),
            },
            Hit {
                title: "Crab".into(),
                url: "https://example.com/crab".into(),
                content: String::new(),
            },
        ];
        assert_eq!(
            format_hits(&hits, 5),
            "1. Rust\n   https://rust-lang.org\n   A language.\n2. Crab\n   https://example.com/crab"
        );
        assert_eq!(
            format_hits(&hits, 1),
            "1. Rust\n   https://rust-lang.org\n   A language."
        );
        assert_eq!(format_hits(&[], 3), "no results");
    }
}
