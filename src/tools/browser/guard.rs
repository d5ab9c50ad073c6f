//! The browser's safety: every request any of its targets makes is paused and checked by
//! `web_fetch`'s address guard; downloads and popups are off (dialogs and file pickers: `page`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use reqwest::Url;
use serde_json::{Value, json};

use super::cdp::{Cdp, CdpEvent};
use super::console::ConsoleRing;
use super::{AllowLocal, BrowserSettings};
use crate::redact::Redactor;
use crate::tools::ToolError;
use crate::tools::danger::{Classification, DangerClass};
use crate::tools::web::{AddressRule, host_listed, resolve};

/// What the message of a refused address adds: how to allow it.
const ALLOW_HINT: &str = "; the browser reaches loopback or private addresses only as browser.allow_local allows (none, loopback, private) or when the host is listed in web.allow_private_hosts; link-local, CGNAT, multicast, unspecified and reserved addresses only when listed";

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
        Some((_, why)) => Err(ToolError(format!("browser: refused: {why}{ALLOW_HINT}"))),
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

/// What `Fetch.enable` pauses: every request, before it is sent.
fn fetch_patterns() -> Value {
    json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})
}

/// Attach to every target a target opens (iframes in other processes, workers, popups),
/// each held before it runs until it is protected.
fn auto_attach() -> Value {
    json!({"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true})
}

/// WebSocket handshakes do not pause in `Fetch` and `Network.setBlockedURLs` does not block
/// them (Chromium 156): every document and worker gets a `WebSocket` that opens only to the
/// page's own host and port (which the guard let through).
const WEBSOCKET_STUB: &str = "(()=>{const W=self.WebSocket;if(!W||W.odek)return;const F=function(u,p){const h=new URL(u,location.href).host;if(h!==location.host)throw new DOMException('odek refused a WebSocket to '+h+': only the page\\'s own host','SecurityError');return p===undefined?new W(u):new W(u,p)};F.prototype=W.prototype;W.prototype.constructor=F;F.odek=1;for(const k of['CONNECTING','OPEN','CLOSING','CLOSED'])F[k]=W[k];self.WebSocket=F})()";

/// The guard of one browser: its settings, where refusals are written, and the verdicts
/// so far by scheme, host and port.
struct Guard {
    settings: Arc<BrowserSettings>,
    console: Arc<ConsoleRing>,
    verdicts: Mutex<HashMap<String, Option<String>>>,
    /// The sessions of popups being closed: their every request fails.
    popups: Mutex<HashSet<String>>,
}

/// Makes every target of `cdp` pause its requests for [`verdict`] (refusals are written to
/// `console`): downloads denied, every target attached as it is created and protected
/// before it runs (one that cannot be is closed), popups closed. Awaited right after the
/// launch, before the page is created; the page's own session then gets [`protect_page`].
pub async fn protect(
    cdp: &Arc<Cdp>,
    settings: Arc<BrowserSettings>,
    console: Arc<ConsoleRing>,
) -> Result<(), ToolError> {
    let guard = Arc::new(Guard {
        settings,
        console,
        verdicts: Mutex::new(HashMap::new()),
        popups: Mutex::new(HashSet::new()),
    });
    cdp.on_event(Arc::new(move |cdp: &Arc<Cdp>, event: CdpEvent| {
        if matches!(
            event.method.as_str(),
            "Target.attachedToTarget" | "Fetch.requestPaused"
        ) {
            tokio::spawn(Box::pin(Arc::clone(&guard).handle(Arc::clone(cdp), event)));
        }
    }));
    cdp.call(
        None,
        "Browser.setDownloadBehavior",
        json!({"behavior": "deny"}),
    )
    .await?;
    cdp.call(None, "Target.setAutoAttach", auto_attach())
        .await?;
    Ok(())
}

/// Protects a page target's `session`: its requests pause for the guard, its documents get
/// the WebSocket stub, the targets it opens are attached. Awaited before the page's first
/// navigation.
pub async fn protect_page(cdp: &Cdp, session: &str) -> Result<(), ToolError> {
    protect_target(cdp, session, "page").await
}

/// Protects one target (of CDP type `kind`), then lets it run.
async fn protect_target(cdp: &Cdp, session: &str, kind: &str) -> Result<(), ToolError> {
    let session = Some(session);
    cdp.call(session, "Fetch.enable", fetch_patterns()).await?;
    // The stub is one more layer, not the guard: a target without pages or a JS runtime
    // (a worklet) goes on without it.
    let _ = if matches!(kind, "page" | "iframe") {
        let stub = json!({"source": WEBSOCKET_STUB, "runImmediately": true});
        cdp.call(session, "Page.addScriptToEvaluateOnNewDocument", stub)
            .await
    } else {
        let stub = json!({"expression": WEBSOCKET_STUB});
        cdp.call(session, "Runtime.evaluate", stub).await
    };
    cdp.call(session, "Target.setAutoAttach", auto_attach())
        .await?;
    cdp.call(session, "Runtime.runIfWaitingForDebugger", json!({}))
        .await?;
    Ok(())
}

impl Guard {
    /// One event: a target attached, or a request paused.
    async fn handle(self: Arc<Self>, cdp: Arc<Cdp>, event: CdpEvent) {
        let params = &event.params;
        if event.method == "Fetch.requestPaused" {
            let (Some(session), Some(id), Some(url)) = (
                event.session.as_deref(),
                params.get("requestId").and_then(Value::as_str),
                params.pointer("/request/url").and_then(Value::as_str),
            ) else {
                return;
            };
            self.paused(&cdp, session, id, url).await;
        } else {
            self.attached(&cdp, params).await;
        }
    }

    /// A request paused: let it go on, or fail it and say so on the console (a popup's
    /// fail in silence).
    async fn paused(&self, cdp: &Cdp, session: &str, id: &str, url: &str) {
        let popup = lock(&self.popups).contains(session);
        let refusal = if popup {
            Some(String::new())
        } else {
            self.refusal(url).await
        };
        let (method, params) = match refusal {
            None => ("Fetch.continueRequest", json!({"requestId": id})),
            Some(why) => {
                if !popup {
                    self.console.push(format!("odek refused {url}: {why}"));
                }
                let failed = json!({"requestId": id, "errorReason": "BlockedByClient"});
                ("Fetch.failRequest", failed)
            }
        };
        let _ = cdp.call(Some(session), method, params).await;
    }

    /// Why `url` may not be loaded (none: it may), the verdict kept per scheme, host and
    /// port for the browser's life. `data:`, `blob:` and `about:` reach no network.
    async fn refusal(&self, url: &str) -> Option<String> {
        let parsed = match Url::parse(url) {
            Ok(parsed) => parsed,
            Err(e) => return Some(format!("not a URL ({e})")),
        };
        if matches!(parsed.scheme(), "data" | "blob" | "about") {
            return None;
        }
        let key = format!(
            "{}://{}:{}",
            parsed.scheme(),
            parsed.host_str().unwrap_or(""),
            parsed.port_or_known_default().unwrap_or(0)
        );
        if let Some(known) = lock(&self.verdicts).get(&key) {
            return known.clone();
        }
        let why = verdict(&parsed, &self.settings).await.err().map(|e| {
            let text = e.0.strip_prefix("browser: ").unwrap_or(&e.0);
            let text = text.strip_prefix("refused: ").unwrap_or(text);
            text.split(ALLOW_HINT).next().unwrap_or(text).to_string()
        });
        lock(&self.verdicts).insert(key, why.clone());
        why
    }

    /// A target attached: a popup is closed; any other is protected, or closed when it
    /// cannot be (fail closed). A page attached without waiting is the page itself (odek
    /// attached it: [`protect_page`] protects it; protecting one session twice at once can
    /// lose a paused navigation) or was there before [`protect`].
    async fn attached(&self, cdp: &Cdp, params: &Value) {
        let info = &params["targetInfo"];
        let (Some(session), Some(target)) = (
            params.get("sessionId").and_then(Value::as_str),
            info.get("targetId").and_then(Value::as_str),
        ) else {
            return;
        };
        let kind = info.get("type").and_then(Value::as_str).unwrap_or("");
        let waiting = params.get("waitingForDebugger") == Some(&Value::Bool(true));
        let popup = kind == "page" && info.get("openerId").is_some();
        if kind == "page" && !waiting && !popup {
            return;
        }
        let closed = json!({"targetId": target});
        if popup {
            // A popup's opener waits until the popup runs: it runs with every request
            // failed, then is closed.
            lock(&self.popups).insert(session.to_string());
            self.console.push("odek closed a popup the page opened");
            if cdp
                .call(Some(session), "Fetch.enable", fetch_patterns())
                .await
                .is_ok()
            {
                let run = json!({});
                let _ = cdp
                    .call(Some(session), "Runtime.runIfWaitingForDebugger", run)
                    .await;
            }
        } else if protect_target(cdp, session, kind).await.is_ok() {
            return;
        }
        let _ = cdp.call(None, "Target.closeTarget", closed).await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests;
