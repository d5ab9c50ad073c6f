//! The page and its actions. What reads the page runs in `snapshot.js`, evaluated in an
//! isolated world ("odek"): the page's own scripts cannot see or rewrite the refs, nor
//! change the DOM functions the walk calls; the world is made again after a navigation.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::BrowserSettings;
use super::cdp::{Cdp, CdpEvent};
use super::console::{ConsoleRing, console_line, exception_line, log_line, str_at};
use super::guard;
use super::launch::{self, Browser};
use crate::llm::ImagePart;
use crate::tools::ToolError;

/// A boxed reply future (see [`Page::call`]).
type Reply<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ToolError>> + Send + 'a>>;

/// The script that reads and acts on the page (defines `O` in the isolated world).
const SNAPSHOT_JS: &str = include_str!("snapshot.js");
/// Most characters of a snapshot's text.
pub const SNAPSHOT_CHARS: usize = 12_000;
/// Most a click or a key waits for a navigation to start.
const SETTLE: Duration = Duration::from_millis(500);
/// How often `wait_for` looks.
const POLL: Duration = Duration::from_millis(100);
/// Most bytes of a screenshot: `prompt::MAX_IMAGE_BYTES` (tools sit below `prompt`).
const MAX_SCREENSHOT_BYTES: usize = 4 * 1024 * 1024;

/// The element an action names: a ref from the last snapshot, or a CSS selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    /// `ref`: the number shown as `[n]` in the last snapshot.
    Ref(String),
    /// `selector`: a CSS selector.
    Selector(String),
}

impl Element {
    /// The element as the `(ref, selector)` arguments of a `snapshot.js` function.
    fn js_args(&self) -> String {
        let quoted = |s: &str| Value::from(s).to_string();
        match self {
            Element::Ref(r) => format!("{},null", quoted(r)),
            Element::Selector(s) => format!("null,{}", quoted(s)),
        }
    }

    /// How an answer names it.
    fn label(&self) -> String {
        match self {
            Element::Ref(r) => format!("[{}]", r.trim_matches(['[', ']'])),
            Element::Selector(s) => format!("{s:?}"),
        }
    }
}

/// A key `press` knows: its name, DOM key, virtual key code and the text it types.
struct Key {
    name: &'static str,
    key: &'static str,
    code: i64,
    text: &'static str,
}

const fn key(name: &'static str, code: i64, text: &'static str) -> Key {
    Key {
        name,
        key: name,
        code,
        text,
    }
}

const KEYS: [Key; 14] = [
    key("Enter", 13, "\r"),
    key("Tab", 9, ""),
    key("Escape", 27, ""),
    key("Backspace", 8, ""),
    key("Delete", 46, ""),
    key("ArrowUp", 38, ""),
    key("ArrowDown", 40, ""),
    key("ArrowLeft", 37, ""),
    key("ArrowRight", 39, ""),
    key("Home", 36, ""),
    key("End", 35, ""),
    key("PageUp", 33, ""),
    key("PageDown", 34, ""),
    Key {
        name: "Space",
        key: " ",
        code: 32,
        text: " ",
    },
];

/// The key named `name` (case aside), or the error listing the keys.
fn find_key(name: &str) -> Result<&'static Key, ToolError> {
    KEYS.iter()
        .find(|k| k.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| {
            let names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
            ToolError::new(format!(
                "browser: no key {name:?}; the keys: {}",
                names.join(", ")
            ))
        })
}

/// `text` cut to `max` characters, at a line's end when one is near, with a line saying
/// how many characters were left out.
fn cap_text(mut text: String, max: usize) -> String {
    let Some((cut, _)) = text.char_indices().nth(max) else {
        return text;
    };
    let cut = match text[..cut].rfind('\n') {
        Some(line_end) if line_end > cut / 4 * 3 => line_end,
        _ => cut,
    };
    let more = text[cut..].chars().count();
    text.truncate(cut);
    text.push_str(&format!("\n[cut: {more} more characters]"));
    text
}

/// What the event handler tells the actions: loads started and ended on the page.
struct Signals {
    session: String,
    frame: String,
    console: Arc<ConsoleRing>,
    started: watch::Sender<u32>,
    loaded: watch::Sender<u32>,
}

fn bump(counter: &watch::Sender<u32>) {
    counter.send_modify(|n| *n = n.wrapping_add(1));
}

/// Feeds the console ring and the load signals from the page's events; dismisses dialogs.
fn on_page_event(signals: &Signals, cdp: &Arc<Cdp>, event: CdpEvent) {
    if event.session.as_deref() != Some(signals.session.as_str()) {
        return;
    }
    let p = &event.params;
    let main_frame = || p.pointer("/frameId").and_then(Value::as_str) == Some(&signals.frame);
    match event.method.as_str() {
        "Runtime.consoleAPICalled" => signals.console.push(console_line(p)),
        "Runtime.exceptionThrown" => signals.console.push(exception_line(p)),
        "Log.entryAdded" => log_line(p)
            .into_iter()
            .for_each(|l| signals.console.push(l)),
        "Page.loadEventFired" => bump(&signals.loaded),
        "Page.frameStoppedLoading" if main_frame() => bump(&signals.loaded),
        "Page.frameStartedLoading" if main_frame() => bump(&signals.started),
        "Page.javascriptDialogOpening" => {
            let kind = str_at(p, "/type");
            signals.console.push(format!(
                "odek dismissed the page's {kind} dialog: {}",
                str_at(p, "/message")
            ));
            let (cdp, session) = (Arc::clone(cdp), signals.session.clone());
            let accept = kind == "beforeunload";
            tokio::spawn(async move {
                let params = json!({ "accept": accept });
                let _ = cdp
                    .call(Some(&session), "Page.handleJavaScriptDialog", params)
                    .await;
            });
        }
        _ => {}
    }
}

/// The value a `Runtime.evaluate` reply returned, or what the script threw as the error.
fn js_value(reply: Value) -> Result<Value, ToolError> {
    let Some(details) = reply.get("exceptionDetails") else {
        return Ok(reply
            .pointer("/result/value")
            .cloned()
            .unwrap_or(Value::Null));
    };
    let thrown = match details.pointer("/exception/value") {
        Some(Value::String(s)) => s.clone(),
        _ => match str_at(details, "/exception/description") {
            "" => str_at(details, "/text").to_string(),
            d => d.lines().next().unwrap_or("").to_string(),
        },
    };
    Err(ToolError::new(format!("browser: {thrown}")))
}

/// The session's one page.
pub struct Page {
    /// Its browser.
    pub browser: Browser,
    /// The page target's session id.
    pub session: String,
    /// Its console.
    pub console: Arc<ConsoleRing>,
    /// The limits.
    pub settings: Arc<BrowserSettings>,
    signals: Arc<Signals>,
    /// The isolated world's execution context (0: none yet, or gone with a navigation).
    world: AtomicI64,
}

impl Page {
    /// Starts a browser and opens its page (about:blank), protected by the guard.
    pub async fn start(settings: Arc<BrowserSettings>) -> Result<Page, ToolError> {
        let browser = launch::launch(&settings).await?;
        let cdp = Arc::clone(&browser.cdp);
        let console = Arc::new(ConsoleRing::default());
        guard::protect(&cdp, Arc::clone(&settings), Arc::clone(&console)).await?;
        let session = browser.new_page().await?;
        let tree = cdp
            .call(Some(&session), "Page.getFrameTree", json!({}))
            .await?;
        let signals = Arc::new(Signals {
            session: session.clone(),
            frame: str_at(&tree, "/frameTree/frame/id").to_string(),
            console: Arc::clone(&console),
            started: watch::Sender::new(0),
            loaded: watch::Sender::new(0),
        });
        let handler = Arc::clone(&signals);
        cdp.on_event(Arc::new(move |cdp, event| {
            on_page_event(&handler, cdp, event)
        }));
        let page = Page {
            browser,
            session,
            console,
            settings,
            signals,
            world: AtomicI64::new(0),
        };
        for method in ["Page.enable", "Runtime.enable", "Log.enable"] {
            page.call(method, json!({})).await?;
        }
        let intercept = json!({"enabled": true});
        page.call("Page.setInterceptFileChooserDialog", intercept)
            .await?;
        guard::protect_page(&cdp, &page.session).await?;
        Ok(page)
    }

    /// A call on the page's session. Boxed: every action awaits it, and one poll function
    /// beats its state machine inlined into each (the binary's size).
    fn call<'a>(&'a self, method: &'a str, params: Value) -> Reply<'a, Value> {
        Box::pin(self.browser.cdp.call(Some(&self.session), method, params))
    }

    /// The isolated world with `snapshot.js` in it, made when there is none.
    async fn world(&self) -> Result<i64, ToolError> {
        let id = self.world.load(Ordering::Relaxed);
        if id != 0 {
            return Ok(id);
        }
        let params = json!({"frameId": self.signals.frame, "worldName": "odek"});
        let made = self.call("Page.createIsolatedWorld", params).await?;
        let id = made
            .pointer("/executionContextId")
            .and_then(Value::as_i64)
            .ok_or_else(|| ToolError::new("browser: the page gave no context to read it in"))?;
        self.eval(id, SNAPSHOT_JS).await?;
        self.world.store(id, Ordering::Relaxed);
        Ok(id)
    }

    async fn eval(&self, context: i64, expression: &str) -> Result<Value, ToolError> {
        let params = json!({"expression": expression, "contextId": context, "returnByValue": true});
        js_value(self.call("Runtime.evaluate", params).await?)
    }

    /// Runs `expression` (a call of `snapshot.js`'s `O`) in the isolated world; once more
    /// in a new world when a navigation took the old one. Boxed as [`Page::call`].
    fn js<'a>(&'a self, expression: &'a str) -> Reply<'a, Value> {
        Box::pin(self.js_inline(expression))
    }

    async fn js_inline(&self, expression: &str) -> Result<Value, ToolError> {
        let context = self.world().await?;
        match self.eval(context, expression).await {
            Err(e) if e.0.contains("context") => {
                self.world.store(0, Ordering::Relaxed);
                let context = self.world().await?;
                self.eval(context, expression).await
            }
            other => other,
        }
    }

    async fn js_text(&self, expression: &str) -> Result<String, ToolError> {
        Ok(match self.js(expression).await? {
            Value::String(s) => s,
            other => other.to_string(),
        })
    }

    /// Waits for the load `loaded` counts (at most the time cap); false = still loading.
    async fn wait_load(&self, mut loaded: watch::Receiver<u32>) -> bool {
        tokio::time::timeout(self.settings.timeout, loaded.changed())
            .await
            .is_ok()
    }

    /// After an input: when a navigation starts within [`SETTLE`], waits for its load and
    /// says where the page went ("" when none started).
    async fn settle(
        &self,
        mut started: watch::Receiver<u32>,
        loaded: watch::Receiver<u32>,
    ) -> String {
        if tokio::time::timeout(SETTLE, started.changed())
            .await
            .is_err()
        {
            return String::new();
        }
        self.world.store(0, Ordering::Relaxed);
        let done = self.wait_load(loaded).await;
        let url = self.js_text("O.u()").await.unwrap_or_default();
        match done {
            true => format!("; the page is now {url}"),
            false => format!("; {url} is still loading"),
        }
    }

    fn watch(&self) -> (watch::Receiver<u32>, watch::Receiver<u32>) {
        (
            self.signals.started.subscribe(),
            self.signals.loaded.subscribe(),
        )
    }

    /// Goes to `url` (already checked by the guard) and answers its URL, title and snapshot.
    pub async fn open(&self, url: &str) -> Result<String, ToolError> {
        let (_, loaded) = self.watch();
        let reply = self.call("Page.navigate", json!({"url": url})).await?;
        self.world.store(0, Ordering::Relaxed);
        match str_at(&reply, "/errorText") {
            "" => {}
            e if e.contains("BLOCKED_BY_CLIENT") => {
                return Err(ToolError::new(format!(
                    "browser: {url} was refused by odek's address guard ({e}); console says why"
                )));
            }
            e => return Err(ToolError::new(format!("browser: {url} did not load: {e}"))),
        }
        let done = reply.get("loaderId").is_none() || self.wait_load(loaded).await;
        let snapshot = self.snapshot().await?;
        Ok(match done {
            true => snapshot,
            false => format!(
                "(still loading after {} s)\n{snapshot}",
                self.settings.timeout.as_secs()
            ),
        })
    }

    /// The page as text, each actionable element marked `[ref]`.
    pub async fn snapshot(&self) -> Result<String, ToolError> {
        Ok(cap_text(self.js_text("O.snap()").await?, SNAPSHOT_CHARS))
    }

    /// Clicks the element: a real mouse click at its center when nothing covers it, else
    /// the DOM's `click()`.
    pub async fn click(&self, element: &Element) -> Result<String, ToolError> {
        let (started, loaded) = self.watch();
        let at = self.js(&format!("O.pt({})", element.js_args())).await?;
        if at.get("h") == Some(&Value::Bool(true)) {
            let (x, y) = (&at["x"], &at["y"]);
            for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
                let params =
                    json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
                self.call("Input.dispatchMouseEvent", params).await?;
            }
        } else {
            self.js("O.ck()").await?;
        }
        let went = self.settle(started, loaded).await;
        Ok(format!(
            "clicked {} {}{went}",
            element.label(),
            str_at(&at, "/d")
        ))
    }

    /// Types `text` into the element (replacing its value), then Enter when `submit`.
    pub async fn type_text(
        &self,
        element: &Element,
        text: &str,
        submit: bool,
    ) -> Result<String, ToolError> {
        let (started, loaded) = self.watch();
        let what = self
            .js_text(&format!("O.fo({})", element.js_args()))
            .await?;
        match text {
            "" => self.key(find_key("Delete")?).await?,
            _ => {
                self.call("Input.insertText", json!({"text": text})).await?;
            }
        }
        let typed = format!(
            "typed {} characters into {} {what}",
            text.chars().count(),
            element.label()
        );
        if !submit {
            return Ok(typed);
        }
        self.key(find_key("Enter")?).await?;
        Ok(typed + " and pressed Enter" + &self.settle(started, loaded).await)
    }

    /// Sends a key down and up to the focused element.
    async fn key(&self, key: &Key) -> Result<(), ToolError> {
        let down = if key.text.is_empty() {
            "rawKeyDown"
        } else {
            "keyDown"
        };
        for kind in [down, "keyUp"] {
            let params = json!({"type": kind, "key": key.key, "code": key.name,
                "windowsVirtualKeyCode": key.code, "nativeVirtualKeyCode": key.code,
                "text": if kind == "keyUp" { "" } else { key.text }});
            self.call("Input.dispatchKeyEvent", params).await?;
        }
        Ok(())
    }

    /// Presses a key (Enter, Tab, Escape, …).
    pub async fn press(&self, key: &str) -> Result<String, ToolError> {
        let key = find_key(key)?;
        let (started, loaded) = self.watch();
        self.key(key).await?;
        Ok(format!(
            "pressed {}{}",
            key.name,
            self.settle(started, loaded).await
        ))
    }

    /// Chooses the option of a select by value or label.
    pub async fn select(&self, element: &Element, value: &str) -> Result<String, ToolError> {
        let value = Value::from(value);
        self.js_text(&format!("O.se({},{value})", element.js_args()))
            .await
    }

    /// Goes back one entry in the history.
    pub async fn back(&self) -> Result<String, ToolError> {
        let history = self.call("Page.getNavigationHistory", json!({})).await?;
        let current = history.pointer("/currentIndex").and_then(Value::as_u64);
        let entries = history.get("entries").and_then(Value::as_array);
        let earlier = current
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| entries?.get(usize::try_from(i).ok()?));
        let Some(entry) = earlier else {
            return Err(ToolError::new("browser: no earlier page to go back to"));
        };
        let (_, loaded) = self.watch();
        let go = json!({"entryId": entry.get("id").cloned().unwrap_or(Value::Null)});
        self.call("Page.navigateToHistoryEntry", go).await?;
        self.world.store(0, Ordering::Relaxed);
        let url = str_at(entry, "/url");
        Ok(match self.wait_load(loaded).await {
            true => format!("back at {url}"),
            false => format!("back at {url} (still loading)"),
        })
    }

    /// Waits until the text is on the page, or the element is (at most the time cap).
    pub async fn wait_for(
        &self,
        text: Option<&str>,
        element: Option<&Element>,
    ) -> Result<String, ToolError> {
        let (seek, what) = match (text, element) {
            (Some(text), _) => (
                format!("{},null,null", Value::from(text)),
                format!("{text:?}"),
            ),
            (None, Some(element)) => (format!("null,{}", element.js_args()), element.label()),
            (None, None) => {
                return Err(ToolError::new(
                    "browser: wait_for needs text, ref or selector",
                ));
            }
        };
        let expression = format!("O.has({seek})");
        let deadline = tokio::time::Instant::now() + self.settings.timeout;
        loop {
            if self.js(&expression).await? == Value::Bool(true) {
                return Ok(format!("saw {what}"));
            }
            if tokio::time::Instant::now() + POLL > deadline {
                return Err(ToolError::new(format!(
                    "browser: {what} did not appear within {} s; take a snapshot to see the page",
                    self.settings.timeout.as_secs()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A screenshot of the viewport (JPEG as a data URL).
    pub async fn screenshot(&self) -> Result<ImagePart, ToolError> {
        let params = json!({"format": "jpeg", "quality": 70});
        let shot = self.call("Page.captureScreenshot", params).await?;
        let data = str_at(&shot, "/data");
        let bytes = data.len() / 4 * 3;
        if bytes > MAX_SCREENSHOT_BYTES {
            return Err(ToolError::new(format!(
                "browser: the screenshot is {bytes} bytes, over the {MAX_SCREENSHOT_BYTES}-byte limit; take a snapshot instead"
            )));
        }
        Ok(ImagePart {
            url: format!("data:image/jpeg;base64,{data}"),
        })
    }

    /// The console messages and errors since the last read.
    pub fn console(&self) -> String {
        match self.console.take() {
            text if text.is_empty() => "no console messages".to_string(),
            text => text,
        }
    }
}

#[cfg(test)]
mod tests;
