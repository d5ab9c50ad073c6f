//! The browser's safety through the real binary and a real headless Chromium: every request
//! a page makes is paused and checked by the address guard (a script's fetch and an iframe
//! to an unlisted loopback server are refused, the server never hears of them), only http
//! and https are opened, the metadata address is refused with its rule, a redirect's hop,
//! a WebSocket and a preconnect do not get through, popups are closed, and a registered
//! secret is never typed into a page.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, ResponseTemplate, matchers};

use crate::support::*;

/// The API key the run holds: a registered secret.
const API_KEY: &str = "sk-odek-browser-test-5f2c9e1a7b3d";

/// Runs `odek run` with the browser on, the model calling `browser` with each of `calls` in
/// turn; returns the results it got, unwrapped, in order.
async fn browse(sb: &Sandbox, calls: &[Value]) -> Vec<String> {
    let mut replies: Vec<Reply> = calls
        .iter()
        .map(|c| tools(&[("browser", c.clone())]))
        .collect();
    replies.push(text("done"));
    let server = ScriptedServer::start(replies).await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .env("ODEK_API_KEY", API_KEY)
        .args(["run", "check the page"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    let last = requests.last().expect("a request");
    tool_results(last)
        .iter()
        .map(|r| unwrap_untrusted(r))
        .collect()
}

/// A TCP listener that counts the connections it is offered (a `preconnect`, a WebSocket
/// handshake) and answers none.
fn door() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, count)
}

/// A server on loopback that answers anything with "the inside" (readable across origins).
async fn inside_server() -> MockServer {
    let inside = MockServer::start().await;
    Mock::given(matchers::any())
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Access-Control-Allow-Origin", "*")
                .set_body_string("the inside"),
        )
        .mount(&inside)
        .await;
    inside
}

/// Serves `page` at `/` of a new server, and `/hop` as a redirect to `hop`.
async fn site_with(page: String, hop: &str) -> MockServer {
    let site = MockServer::start().await;
    Mock::given(matchers::path("/"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"))
        .mount(&site)
        .await;
    Mock::given(matchers::path("/hop"))
        .respond_with(ResponseTemplate::new(302).insert_header("Location", hop))
        .mount(&site)
        .await;
    site
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_cannot_reach_an_unlisted_loopback_server_and_no_secret_is_typed() {
    let inside = inside_server().await;
    let (door_port, knocks) = door();
    // Another site (localhost is not 127.0.0.1's site): its frame runs in a process and a
    // target of its own, whose requests are paused on its own session.
    let framed = MockServer::start().await;
    let frame_page = format!(
        r#"<!DOCTYPE html><p>framed</p><script>fetch("{}/oopif")</script>"#,
        inside.uri()
    );
    Mock::given(matchers::path("/"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(frame_page, "text/html"))
        .mount(&framed)
        .await;
    let framed_port = framed.address().port();
    let page = format!(
        r#"<!DOCTYPE html><html><head><link rel=preconnect href="http://127.0.0.1:{door_port}">
        </head><body><h1>Probe</h1><p id=o>waiting</p><p id=h>hop</p><p id=w>ws</p><input name=q>
        <iframe src="{inside}/frame"></iframe><iframe src="http://localhost:{framed_port}/"></iframe>
        <script>fetch("{inside}/secret").then(r => r.text()).then(
          t => o.textContent = "got " + t,
          e => o.textContent = "blocked: " + e.message);
        fetch("/hop").then(r => r.text()).then(
          t => h.textContent = "hop got " + t,
          e => h.textContent = "hop blocked");
        try {{ new WebSocket("ws://127.0.0.1:{door_port}/ws"); w.textContent = "ws opened" }}
        catch (e) {{ w.textContent = "ws: " + e.message }}</script></body></html>"#,
        inside = inside.uri()
    );
    let site = site_with(page, &format!("{}/hop", inside.uri())).await;
    let listed = site.uri().trim_start_matches("http://").to_string();
    let sb = Sandbox::new();
    sb.global_config(
        &json!({
            "browser": {"allow_local": "none"},
            "web": {
                "allow_hosts": ["127.0.0.1", "169.254.169.254"],
                "allow_private_hosts": [listed, format!("localhost:{framed_port}")]
            }
        })
        .to_string(),
    );
    let results = browse(
        &sb,
        &[
            json!({"action": "open", "url": "file:///etc/passwd"}),
            json!({"action": "open", "url": "http://169.254.169.254/latest/meta-data/"}),
            json!({"action": "open", "url": format!("{}/", site.uri())}),
            json!({"action": "wait_for", "text": "hop blocked"}),
            json!({"action": "snapshot"}),
            json!({"action": "console"}),
            json!({"action": "type", "selector": "input[name=q]", "text": format!("key {API_KEY}")}),
        ],
    )
    .await;
    assert_eq!(results.len(), 7, "{results:#?}");
    assert!(
        results[0].contains("browser: file: URLs are not opened; only http and https"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("browser: refused: 169.254.169.254 is a link-local address"),
        "{}",
        results[1]
    );
    assert!(results[2].contains("Probe"), "{}", results[2]);
    let snapshot = &results[4];
    assert!(snapshot.contains("blocked: Failed to fetch"), "{snapshot}");
    assert!(snapshot.contains("hop blocked"), "{snapshot}");
    assert!(
        snapshot.contains(&format!(
            "ws: odek refused a WebSocket to 127.0.0.1:{door_port}"
        )),
        "{snapshot}"
    );
    for path in ["/secret", "/frame", "/hop", "/oopif"] {
        let line = format!(
            "odek refused {}{path}: 127.0.0.1 is a loopback address",
            inside.uri()
        );
        assert!(results[5].contains(&line), "{line}: {}", results[5]);
    }
    assert!(
        results[6].contains("holds a secret odek knows") && results[6].contains("not typed"),
        "{}",
        results[6]
    );
    let heard = inside.received_requests().await.unwrap_or_default();
    assert!(heard.is_empty(), "the inside server heard {heard:?}");
    let framed_heard = framed.received_requests().await.unwrap_or_default();
    assert_eq!(framed_heard.len(), 1, "the framed site: {framed_heard:?}");
    assert_eq!(knocks.load(Ordering::SeqCst), 0, "connections to the door");
    let typed = site.received_requests().await.unwrap_or_default();
    assert!(
        typed.iter().all(|r| !r.url.as_str().contains(API_KEY)),
        "{typed:?}"
    );
}

/// The names of every file under `dir`, at any depth.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_is_reached_by_default_a_popup_is_closed_and_nothing_is_downloaded() {
    let inside = inside_server().await;
    let page = format!(
        r#"<!DOCTYPE html><html><body><p id=o>waiting</p>
        <button onclick='window.open("{inside}/popup")'>Pop</button>
        <script>fetch("/hop").then(r => r.text()).then(
          t => o.textContent = "got " + t,
          e => o.textContent = "blocked: " + e.message)</script></body></html>"#,
        inside = inside.uri()
    );
    let site = site_with(page, &format!("{}/hop", inside.uri())).await;
    Mock::given(matchers::path("/report.bin"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("Content-Disposition", "attachment; filename=report.bin")
                .set_body_raw(vec![7u8; 4096], "application/octet-stream"),
        )
        .mount(&site)
        .await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"web": {"allow_hosts": ["127.0.0.1"]}}"#);
    let results = browse(
        &sb,
        &[
            json!({"action": "open", "url": format!("{}/", site.uri())}),
            json!({"action": "wait_for", "text": "got the inside"}),
            json!({"action": "click", "selector": "button"}),
            json!({"action": "console"}),
            json!({"action": "open", "url": format!("{}/report.bin", site.uri())}),
        ],
    )
    .await;
    assert_eq!(results.len(), 5, "{results:#?}");
    assert!(!results[1].starts_with("error"), "{}", results[1]);
    assert!(
        results[3].contains("odek closed a popup the page opened"),
        "{}",
        results[3]
    );
    let heard: Vec<String> = inside
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| r.url.path().to_string())
        .collect();
    assert_eq!(heard, ["/hop"], "the inside server heard {heard:?}");
    let asked = site.received_requests().await.unwrap_or_default();
    assert!(
        asked.iter().any(|r| r.url.path() == "/report.bin"),
        "{asked:?}"
    );
    let saved = files_under(sb.dir.path());
    assert!(
        !saved.iter().any(|name| name.contains("report")),
        "downloaded: {saved:?}"
    );
}
