//! The web tools: `web_fetch` (one page as Markdown or text, through the address guard) and
//! `web_search` (a SearXNG instance's JSON API).
//!
//! # The address guard
//!
//! The model must not reach what the machine can reach only because it is on the inside:
//! the loopback interface, the private network, the cloud metadata service. Every address a
//! host resolves to is checked before the request — and again at every redirect, which odek
//! follows itself (at most [`MAX_REDIRECTS`]) — and the connection is pinned to the checked
//! addresses, so a DNS answer that changes between the check and the connection is never
//! used. No proxy is used (a proxy would resolve the name itself). Hosts listed in
//! `web.allow_private_hosts` are exempt.

mod fetch;
pub use fetch::html_to_markdown;
mod guard;
mod nesting;
mod search;

use std::time::Duration;

pub use fetch::WebFetchTool;
pub use guard::{AddressRule, Resolved, address_rule, resolve};
pub use search::WebSearchTool;
/// The schemas' limits, for the test that keeps them equal to the code's.
#[cfg(test)]
pub(crate) use {fetch::MAX_MAX_CHARS, search::MAX_RESULTS};

/// Most redirects one fetch follows.
pub const MAX_REDIRECTS: usize = 5;
/// Most bytes of a body read; the rest is never downloaded.
pub const MAX_DOWNLOAD_BYTES: usize = 5 * 1024 * 1024;

/// What `web_fetch` may reach and how long it may take (the `web` settings).
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// Hosts fetched without asking: exact names, or `*.example.com` for its subdomains.
    pub allow_hosts: Vec<String>,
    /// Hosts the address guard lets through to loopback or private addresses (same forms;
    /// an IP literal counts as its own host).
    pub allow_private_hosts: Vec<String>,
    /// The whole fetch: connecting, every redirect, the body.
    pub timeout: Duration,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            allow_hosts: Vec::new(),
            allow_private_hosts: Vec::new(),
            timeout: Duration::from_secs(30),
        }
    }
}

/// The SearXNG instance of `web_search` (the `web_search` settings).
#[derive(Debug, Clone)]
pub struct SearchSettings {
    /// Its address, e.g. `http://127.0.0.1:8888`.
    pub base_url: String,
    /// Results per search unless the call asks for fewer.
    pub max_results: usize,
    /// One search.
    pub timeout: Duration,
    /// SearXNG's `language` parameter (empty = the instance's default).
    pub language: String,
    /// SearXNG's `categories` parameter (empty = the instance's default).
    pub categories: String,
}

/// True when `host` is named by `pattern`: the same name (case aside), or for
/// `*.example.com` any subdomain of `example.com` (not `example.com` itself).
pub fn host_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (
        pattern.trim().to_ascii_lowercase(),
        host.to_ascii_lowercase(),
    );
    let host = host.trim_end_matches('.');
    match pattern.strip_prefix("*.") {
        Some(domain) => host
            .strip_suffix(domain)
            .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
        None => {
            let pattern = pattern.trim_start_matches('[').trim_end_matches(']');
            pattern.trim_end_matches('.') == host.trim_start_matches('[').trim_end_matches(']')
        }
    }
}

/// True when one of `patterns` names `host` on `port`: a pattern with a port
/// (`localhost:8080`, `[::1]:8080`) names that port only, one without names every port.
pub fn host_listed(patterns: &[String], host: &str, port: u16) -> bool {
    patterns.iter().any(|p| {
        let (name, wanted) = split_port(p.trim());
        wanted.is_none_or(|w| w == port) && host_matches(name, host)
    })
}

/// A pattern's host and port: `host:443`, `[::1]:443`; a bare IPv6 address has none.
fn split_port(pattern: &str) -> (&str, Option<u16>) {
    if let Some(rest) = pattern.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((host, tail)) => (host, tail.strip_prefix(':').and_then(|p| p.parse().ok())),
            None => (pattern, None),
        };
    }
    match pattern.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (pattern, None),
        },
        _ => (pattern, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_with_a_port_names_that_port_only() {
        let listed = |p: &str, host: &str, port| host_listed(&[p.to_string()], host, port);
        assert!(listed("localhost:8080", "localhost", 8080));
        assert!(!listed("localhost:8080", "localhost", 80));
        assert!(listed("localhost", "localhost", 9999));
        assert!(listed("[::1]:8080", "[::1]", 8080));
        assert!(!listed("[::1]:8080", "[::1]", 8081));
        assert!(listed("::1", "[::1]", 443));
        assert!(listed("*.example.com:443", "docs.example.com", 443));
        assert!(!listed("*.example.com:443", "docs.example.com", 8443));
    }

    #[test]
    fn exact_and_wildcard_hosts() {
        assert!(host_matches("example.com", "Example.COM"));
        assert!(host_matches("example.com", "example.com."));
        assert!(!host_matches("example.com", "www.example.com"));
        assert!(host_matches("*.example.com", "docs.example.com"));
        assert!(host_matches("*.example.com", "a.b.example.com"));
        assert!(!host_matches("*.example.com", "example.com"));
        assert!(!host_matches("*.example.com", "badexample.com"));
        assert!(host_matches("127.0.0.1", "127.0.0.1"));
        assert!(host_matches("[::1]", "::1"));
        assert!(host_matches("::1", "[::1]"));
    }
}
