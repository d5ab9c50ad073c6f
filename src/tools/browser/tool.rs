//! The `browser` tool itself: its arguments, the session's page (started on the first
//! action) and the dispatch of each action to it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use super::launch::find_executable;
use super::page::{Element, Page};
use super::{BrowserSettings, cdp, guard};
use crate::tools::{Classification, Tool, ToolContext, ToolError, decode_args};

/// The browser this process uses: `configured` (`browser.executable`) when set, else the
/// first found on PATH; looked for once per process. None: the tool is not offered.
pub fn program(configured: &str) -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let configured = configured.trim();
            find_executable((!configured.is_empty()).then(|| Path::new(configured)))
        })
        .as_deref()
}

/// A session's browser: started on the first action, ended when the slot is dropped or on
/// `close`.
#[derive(Default)]
pub struct BrowserSlot {
    /// The page, once an action started it.
    page: tokio::sync::Mutex<Option<Page>>,
    /// The host of the page last opened (the source of its content).
    host: std::sync::Mutex<String>,
}

impl BrowserSlot {
    fn host(&self) -> String {
        self.host
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_host(&self, host: &str) {
        *self.host.lock().unwrap_or_else(PoisonError::into_inner) = host.to_string();
    }
}

/// The actions, as the model names them.
const ACTIONS: &str =
    "open, snapshot, click, type, press, select, back, wait_for, screenshot, console, close";

/// Why `screenshot` is refused for a model without images.
const NO_IMAGES: &str = "browser: this model does not take images (images: true in config.json, ODEK_IMAGES=true); use snapshot";

/// Time on top of the action's cap for starting the browser.
const START_TIME: Duration = Duration::from_secs(30);

/// One call's arguments, decoded.
#[derive(Debug, Clone, PartialEq)]
enum Request {
    Open(String),
    Snapshot,
    Click(Element),
    Type {
        element: Element,
        text: String,
        submit: bool,
    },
    Press(String),
    Select {
        element: Element,
        value: String,
    },
    Back,
    WaitFor {
        text: Option<String>,
        element: Option<Element>,
    },
    Screenshot,
    Console,
    Close,
}

fn missing(action: &str, what: &str) -> ToolError {
    ToolError(format!("browser: `{action}` needs {what}"))
}

/// The element a call names: `ref` (a string or a number, `[3]` read as `3`), else
/// `selector`.
fn element_of(args: &Value) -> Option<Element> {
    let reference = match args.get("ref") {
        Some(Value::String(s)) => s.trim().trim_matches(['[', ']']).to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    if !reference.is_empty() {
        return Some(Element::Ref(reference));
    }
    let selector = args.get("selector").and_then(Value::as_str)?.trim();
    (!selector.is_empty()).then(|| Element::Selector(selector.to_string()))
}

impl Request {
    fn decode(args: &Value) -> Result<Request, ToolError> {
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        let word = |key: &str, action: &str| {
            text(key)
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| missing(action, &format!("`{key}`")))
        };
        let element = |action: &str| {
            element_of(args).ok_or_else(|| {
                missing(
                    action,
                    "`ref` (a number from the last snapshot) or `selector` (CSS)",
                )
            })
        };
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        Ok(match action {
            "open" => Request::Open(word("url", action)?.trim().to_string()),
            "snapshot" => Request::Snapshot,
            "click" => Request::Click(element(action)?),
            "type" => Request::Type {
                element: element(action)?,
                text: text("text").ok_or_else(|| missing(action, "`text`"))?,
                submit: args.get("submit").and_then(Value::as_bool).unwrap_or(false),
            },
            "press" => Request::Press(word("key", action)?),
            "select" => Request::Select {
                element: element(action)?,
                value: text("value").ok_or_else(|| missing(action, "`value`"))?,
            },
            "back" => Request::Back,
            "wait_for" => {
                let (text, element) = (text("text").filter(|t| !t.is_empty()), element_of(args));
                if text.is_none() && element.is_none() {
                    return Err(missing(action, "`text`, `ref` or `selector`"));
                }
                Request::WaitFor { text, element }
            }
            "screenshot" => Request::Screenshot,
            "console" => Request::Console,
            "close" => Request::Close,
            other => {
                return Err(ToolError(format!(
                    "browser: unknown action {other:?}; the actions: {ACTIONS}"
                )));
            }
        })
    }
}

/// The host of `url`, when it is one.
fn host_of(url: &str) -> Option<String> {
    reqwest::Url::parse(url.trim())
        .ok()?
        .host_str()
        .map(str::to_string)
}

/// The `browser` tool.
pub struct BrowserTool {
    slot: Arc<BrowserSlot>,
    settings: Arc<BrowserSettings>,
}

impl BrowserTool {
    /// The tool over a session's slot.
    pub fn new(slot: Arc<BrowserSlot>, settings: Arc<BrowserSettings>) -> Self {
        BrowserTool { slot, settings }
    }

    /// Checks what needs no browser, then runs the action on the slot's page (started
    /// now if there is none). A browser that ended or did not answer in time is dropped:
    /// the next action starts a new one.
    async fn run(&self, request: Request, ctx: &ToolContext) -> Result<String, ToolError> {
        match &request {
            Request::Screenshot if !self.settings.images => return Err(ToolError::new(NO_IMAGES)),
            Request::Type { text, .. } => guard::refuse_secret(text, &ctx.redactor)?,
            Request::Open(url) => {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| ToolError(format!("browser: not a URL: {url}: {e}")))?;
                guard::verdict(&parsed, &self.settings).await?;
            }
            _ => {}
        }
        let mut page = self.slot.page.lock().await;
        if request == Request::Close {
            self.slot.set_host("");
            return Ok(match page.take() {
                Some(_) => "closed the browser".into(),
                None => "no browser was open".into(),
            });
        }
        let cap = self.settings.timeout.saturating_mul(2) + START_TIME;
        let acted = tokio::select! {
            acted = tokio::time::timeout(cap, self.act(&mut page, &request, ctx)) => acted,
            () = ctx.cancel.cancelled() => return Err(ToolError::new("browser: cancelled")),
        };
        let Ok(result) = acted else {
            *page = None;
            return Err(ToolError(format!(
                "browser: no answer within {} s; the browser was ended, the next action starts a new one",
                cap.as_secs()
            )));
        };
        match &result {
            Err(e) if e.0.contains(cdp::ENDED) => *page = None,
            Ok(_) => {
                if let Request::Open(url) = &request {
                    self.slot.set_host(&host_of(url).unwrap_or_default());
                }
            }
            Err(_) => {}
        }
        result
    }

    /// The action on the page, started first when there is none.
    async fn act(
        &self,
        slot: &mut Option<Page>,
        request: &Request,
        ctx: &ToolContext,
    ) -> Result<String, ToolError> {
        if slot.is_none() {
            *slot = Some(Page::start(self.settings.clone()).await?);
        }
        let Some(page) = slot.as_ref() else {
            return Err(ToolError::new("browser: no page"));
        };
        match request {
            Request::Open(url) => page.open(url).await,
            Request::Snapshot => page.snapshot().await,
            Request::Click(element) => page.click(element).await,
            Request::Type {
                element,
                text,
                submit,
            } => page.type_text(element, text, *submit).await,
            Request::Press(key) => page.press(key).await,
            Request::Select { element, value } => page.select(element, value).await,
            Request::Back => page.back().await,
            Request::WaitFor { text, element } => {
                page.wait_for(text.as_deref(), element.as_ref()).await
            }
            Request::Screenshot => {
                let image = page.screenshot().await?;
                if ctx.attach_image(image) {
                    Ok("screenshot of the page attached".into())
                } else {
                    Err(ToolError::new(
                        "browser: this call cannot carry an image; use snapshot",
                    ))
                }
            }
            Request::Console => Ok(page.console()),
            // Answered before the page is needed.
            Request::Close => Ok(String::new()),
        }
    }
}

#[async_trait]
impl Tool for BrowserTool {
    fn name(&self) -> &str {
        "browser"
    }

    fn description(&self) -> &str {
        "Drive a headless browser, one page per session. open url; snapshot: the page as text, each element you can act on marked [ref]; click, type (text, submit: Enter after), select (value) a ref from the last snapshot or a CSS selector; press key; back; wait_for text or ref; screenshot; console: its messages and errors; close."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "action":{"type":"string","enum":["open","snapshot","click","type","press","select","back","wait_for","screenshot","console","close"]},
                "url":{"type":"string"},
                "ref":{"type":"string"},
                "selector":{"type":"string"},
                "text":{"type":"string"},
                "submit":{"type":"boolean"},
                "key":{"type":"string"},
                "value":{"type":"string"}
              },
              "required":["action"]
            }"#,
        )
    }

    /// `open` of a host `web.allow_hosts` does not list is `network_egress` (a local address
    /// `browser.allow_local` allows is not asked about); the other actions act on the page
    /// already approved.
    fn classify(&self, args: &Value, _ctx: &ToolContext) -> Option<Classification> {
        match args.get("action").and_then(Value::as_str) {
            Some("open") => {
                guard::classify_open(args.get("url").and_then(Value::as_str)?, &self.settings)
            }
            _ => None,
        }
    }

    /// What a page says is outside content: `browser:<host>` of the page opened (or being
    /// opened).
    fn untrusted_source(&self, args: &Value) -> Option<String> {
        let url = args.get("url").and_then(Value::as_str);
        let host = match args.get("action").and_then(Value::as_str) {
            Some("open") => url.and_then(host_of).unwrap_or_default(),
            _ => self.slot.host(),
        };
        Some(if host.is_empty() {
            "browser".into()
        } else {
            format!("browser:{host}")
        })
    }

    fn summary(&self, args: &Value) -> String {
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        let what = ["url", "selector", "key"]
            .iter()
            .find_map(|key| args.get(*key).and_then(Value::as_str));
        match (element_of(args), what) {
            (Some(Element::Ref(r)), _) => format!("{action} [{r}]"),
            (_, Some(what)) => format!("{action} {}", crate::text::truncate(what, 60)),
            _ => action.to_string(),
        }
    }

    /// The action, and the host `open` goes to; never what is typed.
    fn event_summary(&self, args: &Value) -> Option<Value> {
        let mut summary = serde_json::Map::new();
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        summary.insert("action".into(), action.into());
        if let Some(host) = args.get("url").and_then(Value::as_str).and_then(host_of) {
            summary.insert("host".into(), host.into());
        }
        Some(Value::Object(summary))
    }

    /// One page: the actions of a batch act on it one after the other, as called.
    fn runs_in_call_order(&self) -> bool {
        true
    }

    /// A snapshot is cut by the page itself (12,000 characters).
    fn output_limit(&self, _args: &Value) -> usize {
        16 * 1024
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Value = decode_args(self.name(), args)?;
        let request = Request::decode(&args)?;
        Box::pin(self.run(request, ctx)).await
    }
}

#[cfg(test)]
mod tests;
