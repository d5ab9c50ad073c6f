//! The browser's safety: every request any of its targets makes is paused and checked by
//! `web_fetch`'s address guard; downloads, dialogs, popups and file pickers are off.

use std::sync::Arc;

use reqwest::Url;

use super::cdp::Cdp;
use super::page;
use super::{AllowLocal, BrowserSettings};
use crate::redact::Redactor;
use crate::tools::ToolError;
use crate::tools::danger::{Classification, DangerClass};
use crate::tools::web::{AddressRule, host_listed, resolve};

/// What the message of a refused address adds: how to allow it.
const ALLOW_HINT: &str = "the browser reaches loopback or private addresses only as browser.allow_local allows (none, loopback, private) or when the host is listed in web.allow_private_hosts; link-local, CGNAT, multicast, unspecified and reserved addresses only when listed";

/// The rules `allow_local` lets through without a listing.
fn allowed_rules(allow_local: AllowLocal) -> &'static [AddressRule] {
    match allow_local {
        AllowLocal::None => &[],
        AllowLocal::Loopback => &[AddressRule::Loopback],
        AllowLocal::Private => &[AddressRule::Loopback, AddressRule::Private],
    }
}

/// Whether the browser may load `url`: Ok, or the refusal naming the rule. Only http and
/// https; the host is resolved and every address must be public, within
/// `browser.allow_local`, or the host listed in `web.allow_private_hosts`.
pub async fn verdict(url: &Url, settings: &BrowserSettings) -> Result<(), ToolError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError(format!(
            "browser: {}: URLs are not opened; only http and https",
            url.scheme()
        )));
    }
    let resolved = resolve(url, "browser").await?;
    if host_listed(
        &settings.web.allow_private_hosts,
        &resolved.host,
        resolved.port,
    ) {
        return Ok(());
    }
    match resolved.refused(allowed_rules(settings.allow_local)) {
        Some((_, why)) => Err(ToolError(format!("browser: refused: {why}; {ALLOW_HINT}"))),
        None => Ok(()),
    }
}

/// The approval an `open` of `url` needs: network egress scoped to its host, unless the host
/// is in `web.allow_hosts` or is this machine (`localhost`, a loopback literal) and
/// `browser.allow_local` allows loopback. A URL that does not parse asks nothing: `open`
/// refuses it.
pub(super) fn classify_open(url: &str, settings: &BrowserSettings) -> Option<Classification> {
    let url = Url::parse(url.trim()).ok()?;
    let host = url.host_str()?.to_ascii_lowercase();
    let port = url.port_or_known_default()?;
    if host_listed(&settings.web.allow_hosts, &host, port) || is_allowed_loopback(&host, settings) {
        return None;
    }
    Some(
        Classification::new(DangerClass::NetworkEgress, format!("opens {host}"))
            .scoped(format!("host:{host}")),
    )
}

/// True when `host` names this machine and `browser.allow_local` allows loopback.
fn is_allowed_loopback(host: &str, settings: &BrowserSettings) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare == "localhost" || bare.ends_with(".localhost"),
    };
    loopback && settings.allow_local != AllowLocal::None
}

/// Refuses text to be typed that holds a secret odek knows (an API key, a token, a
/// registered value): checked before anything reaches the page.
pub(super) fn refuse_secret(text: &str, redactor: &Redactor) -> Result<(), ToolError> {
    if redactor.holds_known_secret(text) {
        return Err(ToolError::new(
            "browser: refused: the text holds a secret odek knows (an API key or token); it was not typed",
        ));
    }
    Ok(())
}

/// Makes every target of `cdp` pause its requests for [`verdict`] (refusals are written to
/// `console`).
pub fn protect(_cdp: &Arc<Cdp>, _settings: Arc<BrowserSettings>, _console: Arc<page::ConsoleRing>) {
}

#[cfg(test)]
mod tests;
