//! Headless Debian Chromium driven over WebDriver (chromedriver + fantoccini), with the
//! browser's console and network logs readable, for the web UI's end-to-end tests.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use super::serve::Served;

/// Where Debian puts the browser and its driver (`apt-get install chromium chromium-driver`).
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long a wait for the page may take before the test fails.
pub const PAGE_WAIT: Duration = Duration::from_secs(20);

/// A chromedriver process and one browser session.
pub struct Browser {
    driver: Child,
    pub client: Client,
}

/// A chromedriver extension command: `POST /session/{id}/<path>` with a JSON body
/// (`se/log` reads a log, `goog/cdp/execute` runs a DevTools Protocol command).
#[derive(Debug)]
struct ChromeCommand {
    path: &'static str,
    body: Value,
}

impl WebDriverCompatibleCommand for ChromeCommand {
    fn endpoint(
        &self,
        base_url: &reqwest::Url,
        session_id: Option<&str>,
    ) -> Result<reqwest::Url, url_error::ParseError> {
        let session = session_id.unwrap_or_default();
        base_url.join(&format!("session/{session}/{}", self.path))
    }

    fn method_and_body(&self, _: &reqwest::Url) -> (reqwest::Method, Option<String>) {
        (reqwest::Method::POST, Some(self.body.to_string()))
    }
}

mod url_error {
    pub use reqwest::Url;
    pub type ParseError = <Url as std::str::FromStr>::Err;
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless Chromium with a fresh
    /// profile in `profile`, its console and network logged. The browser reaches nothing
    /// beyond loopback: background networking, sync and updates are off.
    pub async fn start(profile: &Path) -> Browser {
        for needed in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(needed).exists(),
                "{needed} is missing: install Debian's chromium and chromium-driver (.ci/run does)"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        // Its own process group: dropping the browser kills chromedriver and every Chromium
        // process it started, even when a test panics before `quit`.
        let driver = Command::new(CHROMEDRIVER)
            .process_group(0)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let caps = json!({
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--no-default-browser-check",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--disable-extensions", "--disable-features=Translate,OptimizationHints,MediaRouter",
                    "--window-size=1280,800",
                    format!("--user-data-dir={}", profile.display()),
                ],
                "perfLoggingPrefs": {"enableNetwork": true, "enablePage": false},
            }
        });
        let caps: serde_json::Map<String, Value> = match caps {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        };
        let url = format!("http://127.0.0.1:{port}");
        let mut last_error = String::new();
        for _ in 0..100 {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(client) => return Browser { driver, client },
                Err(e) => last_error = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no WebDriver session from chromedriver on {url}: {last_error}");
    }

    /// Opens the token URL of `served` and waits for the page to list the sessions.
    pub async fn sign_in(&self, served: &Served) {
        self.client
            .goto(&format!("{}/?token={}", served.base, served.token))
            .await
            .expect("the page loads");
        self.wait_for("#session-list li").await;
    }

    /// The console's errors and warnings since the last call (a CSP violation is one).
    pub async fn console_problems(&self) -> Vec<(String, String)> {
        self.console()
            .await
            .into_iter()
            .filter(|(level, message)| {
                level == "SEVERE"
                    || level == "WARNING"
                    || message.contains("Content Security Policy")
            })
            .collect()
    }

    /// The browser's console messages since the last call: `(level, message)`.
    pub async fn console(&self) -> Vec<(String, String)> {
        self.log("browser")
            .await
            .into_iter()
            .map(|e| {
                (
                    e["level"].as_str().unwrap_or_default().to_string(),
                    e["message"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// Every URL the page requested since the last call (from the network log).
    pub async fn requested_urls(&self) -> Vec<String> {
        self.log("performance")
            .await
            .into_iter()
            .filter_map(|e| {
                let message: Value = serde_json::from_str(e["message"].as_str()?).ok()?;
                let m = &message["message"];
                (m["method"] == "Network.requestWillBeSent")
                    .then(|| m["params"]["request"]["url"].as_str().map(str::to_string))
                    .flatten()
            })
            .collect()
    }

    /// Emulates `prefers-color-scheme: <scheme>` (`light` or `dark`).
    pub async fn color_scheme(&self, scheme: &str) {
        self.client
            .issue_cmd(ChromeCommand {
                path: "goog/cdp/execute",
                body: json!({
                    "cmd": "Emulation.setEmulatedMedia",
                    "params": {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
                }),
            })
            .await
            .expect("emulated colour scheme");
    }

    async fn log(&self, kind: &'static str) -> Vec<Value> {
        let entries = self
            .client
            .issue_cmd(ChromeCommand {
                path: "se/log",
                body: json!({ "type": kind }),
            })
            .await
            .unwrap_or_else(|e| panic!("reading the {kind} log: {e}"));
        entries.as_array().cloned().unwrap_or_default()
    }

    /// Waits for the first element matching `css`.
    pub async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(PAGE_WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub async fn js(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Polls `script` until it returns true (JSON `true`).
    pub async fn wait_until(&self, what: &str, script: &str) {
        let deadline = tokio::time::Instant::now() + PAGE_WAIT;
        loop {
            if self.js(script, vec![]).await == Value::Bool(true) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Presses and releases `key` with Alt held, as a person would.
    pub async fn alt(&self, key: char) {
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down {
                value: Key::Alt.into(),
            })
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key })
            .then(KeyAction::Up {
                value: Key::Alt.into(),
            });
        self.client
            .perform_actions(keys)
            .await
            .expect("key actions");
    }

    /// Presses one key (a `Key` or a character) on whatever has the focus.
    pub async fn press(&self, key: impl Into<char>) {
        let key = key.into();
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
        self.client
            .perform_actions(keys)
            .await
            .expect("key actions");
    }

    /// Types `text` into whatever has the focus.
    pub async fn type_text(&self, text: &str) {
        let mut keys = KeyActions::new("keyboard".into());
        for c in text.chars() {
            keys = keys
                .then(KeyAction::Down { value: c })
                .then(KeyAction::Up { value: c });
        }
        self.client
            .perform_actions(keys)
            .await
            .expect("key actions");
    }

    /// The focused element's `id` (or its text when it has none).
    pub async fn focused(&self) -> String {
        self.js(
            "const a = document.activeElement; return a ? (a.id || a.textContent.trim()) : '';",
            vec![],
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// Ends the session, the driver and the browser.
    pub async fn quit(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal to the process group chromedriver leads.
        if let Ok(pgid) = i32::try_from(self.driver.id()) {
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        let _ = self.driver.wait();
    }
}
