//! The browser's actions (issue 65) through the real binary and a real headless Chromium,
//! on pages served on loopback: a form typed into and submitted, then read from the next
//! snapshot, then `back` and typed into again by ref; a click, a select, a key, a text
//! that appears later and a button inside a same-origin frame; the console's messages and
//! errors, a dialog dismissed; the errors that teach (a stale ref, an unknown key, a missing
//! option, a text that never came).

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, ResponseTemplate, matchers};

use crate::support::*;

const FORM: &str = r#"<title>Form</title><h1>Say hello</h1>
<form action="/hello"><label>Name <input name="n"></label><button>Send</button></form>"#;

const WIDGETS: &str = r#"<title>Widgets</title><p id="out">before</p>
<button onclick="out.textContent='clicked';setTimeout(()=>later.textContent='later on',200)">Go</button>
<select onchange="chose.textContent='chose '+this.value"><option value="s">Small</option><option value="l">Large</option></select>
<p id="chose"></p><p id="key"></p><p id="later"></p>
<script>document.addEventListener('keydown',e=>key.textContent='key '+e.key)</script>
<iframe srcdoc="<button onclick='this.textContent=&quot;pressed inside&quot;'>Inner</button>"></iframe>"#;

const NOISY: &str = r#"<title>Noisy</title><p id="said">Hi</p>
<button onclick="said.textContent='confirmed '+confirm('sure?')">Ask</button>
<script>console.error("boom", 42); console.log("fine"); throw new Error("bad")</script>"#;

fn html(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.to_string(), "text/html; charset=utf-8")
}

/// The pages: `/form` (its GET goes to `/hello?n=…`, answered "Hello, …"), `/widgets`,
/// `/noisy`.
async fn site() -> MockServer {
    let site = MockServer::start().await;
    for (path, body) in [("/form", FORM), ("/widgets", WIDGETS), ("/noisy", NOISY)] {
        Mock::given(matchers::path(path))
            .respond_with(html(body))
            .mount(&site)
            .await;
    }
    Mock::given(matchers::path("/hello"))
        .respond_with(|req: &Request| {
            let name = req.url.query_pairs().find(|(k, _)| k == "n");
            let name = name.map(|(_, v)| v.into_owned()).unwrap_or_default();
            html(&format!("<title>Hi</title><p>Hello, {name}</p>"))
        })
        .mount(&site)
        .await;
    site
}

/// Runs `odek run` with the browser on; the model calls the browser with each of `calls`
/// (one per step), then answers. The results, unwrapped, in order.
async fn browse(calls: Vec<Value>, config: Option<&str>) -> Vec<String> {
    let steps = calls.len();
    let mut replies: Vec<Reply> = calls
        .into_iter()
        .map(|c| tools(&[("browser", c)]))
        .collect();
    replies.push(text("done"));
    let server = ScriptedServer::start(replies).await;
    let sb = Sandbox::new();
    if let Some(config) = config {
        sb.global_config(config);
    }
    let mut cmd = sb.odek(&server.base_url());
    cmd.env("ODEK_BROWSER", "true")
        .args(["run", "try the page"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), steps + 1, "{}", show(&out));
    let results = tool_results(&requests[steps]);
    results.iter().map(|r| unwrap_untrusted(r)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_typed_into_and_submitted_is_read_from_the_next_snapshot_and_back_returns() {
    let site = site().await;
    let form = format!("{}/form", site.uri());
    let r = browse(
        vec![
            json!({"action": "open", "url": form}),
            json!({"action": "type", "selector": "input[name=n]", "text": "Ada", "submit": true}),
            json!({"action": "snapshot"}),
            json!({"action": "back"}),
            json!({"action": "snapshot"}),
            json!({"action": "type", "ref": "1", "text": "Bob"}),
            json!({"action": "snapshot"}),
        ],
        None,
    )
    .await;
    assert!(
        r[0].starts_with(&format!("URL: {form}\nTitle: Form\n\n")),
        "{}",
        r[0]
    );
    assert!(
        r[0].contains("# Say hello\n[1] textbox \"Name\" value=\"\"\n[2] button \"Send\""),
        "{}",
        r[0]
    );
    assert!(
        r[1].starts_with("typed 3 characters into \"input[name=n]\" textbox \"Name\" and pressed Enter; the page is now ")
            && r[1].ends_with("/hello?n=Ada"),
        "{}",
        r[1]
    );
    assert!(r[2].contains("Title: Hi\n\nHello, Ada"), "{}", r[2]);
    assert_eq!(r[3], format!("back at {form}"));
    assert!(r[4].contains("[1] textbox \"Name\""), "{}", r[4]);
    assert_eq!(r[5], "typed 3 characters into [1] textbox \"Name\"");
    assert!(
        r[6].contains("[1] textbox \"Name\" value=\"Bob\""),
        "{}",
        r[6]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_a_select_a_key_a_text_that_comes_later_and_a_frames_button_change_the_page() {
    let site = site().await;
    let r = browse(
        vec![
            json!({"action": "open", "url": format!("{}/widgets", site.uri())}),
            json!({"action": "click", "ref": "1"}),
            json!({"action": "wait_for", "text": "later on"}),
            json!({"action": "select", "ref": "2", "value": "Large"}),
            json!({"action": "press", "key": "arrowdown"}),
            json!({"action": "snapshot"}),
            json!({"action": "press", "key": "F5"}),
            json!({"action": "click", "ref": "7"}),
            json!({"action": "select", "ref": "2", "value": "Huge"}),
            json!({"action": "click", "ref": "3"}),
            json!({"action": "snapshot"}),
        ],
        None,
    )
    .await;
    assert!(r[0].contains("before\n[1] button \"Go\"\n[2] select \"\" value=\"Small\" options: \"Small\" \"Large\""), "{}", r[0]);
    assert_eq!(r[1], "clicked [1] button \"Go\"");
    assert_eq!(r[2], "saw \"later on\"");
    assert_eq!(r[3], "selected \"Large\" in select \"\"");
    assert_eq!(r[4], "pressed ArrowDown");
    for seen in [
        "clicked",
        "value=\"Large\"",
        "chose l",
        "key ArrowDown",
        "later on",
    ] {
        assert!(r[5].contains(seen), "{seen:?} in {}", r[5]);
    }
    assert!(
        r[6].contains("no key \"F5\"; the keys: Enter, Tab, Escape, Backspace, Delete, ArrowUp"),
        "{}",
        r[6]
    );
    assert!(
        r[7].contains("no element [7] here: take a snapshot first"),
        "{}",
        r[7]
    );
    assert!(
        r[8].contains("no option \"Huge\" in select \"\"; its options: \"Small\" \"Large\""),
        "{}",
        r[8]
    );
    assert_eq!(r[9], "clicked [3] button \"Inner\"");
    assert!(r[10].contains("[3] button \"pressed inside\""), "{}", r[10]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reports_the_pages_messages_and_errors_once_and_wait_for_names_what_it_missed()
{
    let site = site().await;
    let r = browse(
        vec![
            json!({"action": "open", "url": format!("{}/noisy", site.uri())}),
            json!({"action": "console"}),
            json!({"action": "console"}),
            json!({"action": "click", "ref": "1"}),
            json!({"action": "console"}),
            json!({"action": "snapshot"}),
            json!({"action": "wait_for", "text": "never there"}),
        ],
        Some(r#"{"web": {"timeout_seconds": 5}}"#),
    )
    .await;
    assert!(r[0].contains("Title: Noisy\n\nHi"), "{}", r[0]);
    let noisy = format!("{}/noisy", site.uri());
    assert_eq!(
        r[1],
        format!("error: boom 42\nlog: fine\nexception: Error: bad ({noisy}:3)")
    );
    assert_eq!(r[2], "no console messages");
    assert_eq!(r[3], "clicked [1] button \"Ask\"");
    assert_eq!(r[4], "odek dismissed the page's confirm dialog: sure?");
    assert!(r[5].contains("confirmed false"), "{}", r[5]);
    assert!(
        r[6].contains("\"never there\" did not appear within 5 s"),
        "{}",
        r[6]
    );
}
