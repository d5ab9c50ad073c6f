//! The web UI in real headless Chromium (Debian's `chromium` over `chromedriver`) against
//! `odek serve` and the scripted model server: sign in with the token URL, chat, the
//! streamed answer, tool rows with their emoji, an approval, the drawer's plan panel — by
//! keyboard alone — and at 360 px, with no console error, no CSP violation and no request
//! leaving 127.0.0.1.

use crate::support::browser::Browser;
use crate::support::serve::Served;
use crate::support::*;
use fantoccini::key::Key;
use serde_json::{Value, json};

const HOSTILE_TITLE: &str = "Report <img src=x onerror=alert(1)>";
/// Long enough to stream in several pieces: the server holds back the last 192 bytes of
/// a streamed answer until it ends.
const FINAL_ANSWER: &str = "The file is made. Everything went fine, and the report is in made.txt for you to read. The command ran once, after you approved it; nothing else on the machine was touched. The plan's first step is done and the second one, the report, is this message. Ask again if you want the file changed or removed.";

/// Records every text the answer bubbles show, and whether they were still streaming.
const RECORD_ANSWERS: &str = r#"
window.__answers = [];
new MutationObserver(() => {
  for (const a of document.querySelectorAll('.turn .msg-assistant')) {
    window.__answers.push([a.textContent, a.classList.contains('streaming')]);
  }
}).observe(document.getElementById('log'), {subtree: true, childList: true, characterData: true, attributes: true});
return true;
"#;

async fn text_of(browser: &Browser, css: &str) -> String {
    browser
        .js(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            vec![json!(css)],
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// With `ODEK_SCREENSHOTS=<dir>` (how docs/img/ is made), the page as a PNG in that folder.
async fn save_screenshot(browser: &Browser, name: &str) {
    let png = browser.client.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    if let Some(dir) = std::env::var_os("ODEK_SCREENSHOTS") {
        std::fs::write(std::path::Path::new(&dir).join(name), &png).expect("write the screenshot");
    }
}

/// Chooses `file` in the real file picker, waits for its chip (`chip` is its text), and puts
/// the focus back in the prompt box.
async fn attach_through_the_picker(browser: &Browser, file: &std::path::Path, chip: &str) {
    browser
        .js(
            "document.getElementById('attach-input').hidden = false; return true;",
            vec![],
        )
        .await;
    let picker = browser.wait_for("#attach-input").await;
    picker
        .send_keys(file.to_str().expect("path"))
        .await
        .expect("choose the file");
    browser
        .wait_until(
            "the chip",
            &format!("const c = document.querySelector('#attachments .chip span'); return !!c && c.textContent === {};", json!(chip)),
        )
        .await;
    browser
        .wait_for("#prompt")
        .await
        .click()
        .await
        .expect("focus");
}

/// True when the page scrolls sideways.
async fn scrolls_sideways(browser: &Browser) -> Value {
    browser
        .js(
            "const d = document.documentElement; return {inner: window.innerWidth, scroll: d.scrollWidth, client: d.clientWidth, sideways: d.scrollWidth > d.clientWidth};",
            vec![],
        )
        .await
}

/// A served sandbox and a signed-in browser, the answers recorded.
async fn signed_in(replies: Vec<Reply>) -> (ScriptedServer, Sandbox, Served, Browser) {
    let server = ScriptedServer::start(replies).await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    // Sign in with the token URL: the cookie is set and the token leaves the address bar.
    browser.sign_in(&served).await;
    assert_eq!(
        browser.client.current_url().await.expect("url").as_str(),
        format!("{}/", served.base)
    );
    assert_eq!(browser.js(RECORD_ANSWERS, vec![]).await, Value::Bool(true));
    (server, sb, served, browser)
}

const RUN_ENDED: &str = "const a = document.querySelector('.turn .msg-assistant'); return !!a && !a.classList.contains('streaming') && !document.getElementById('send').disabled;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_chats_and_approves_by_keyboard_and_the_answer_streams_in() {
    let command = "python3 -c \"open('made.txt','w').write('ok')\"";
    let (_server, sb, _served, browser) = signed_in(vec![
        plan_create(&[("s1", "Make the file"), ("s2", HOSTILE_TITLE)]),
        tools(&[("shell", json!({"command": command}))]),
        plan_complete("s1"),
        text(FINAL_ANSWER),
    ])
    .await;
    assert_eq!(
        browser.focused().await,
        "prompt",
        "the prompt box has the focus"
    );
    // Send a prompt by keyboard.
    browser.type_text("make the file").await;
    browser.press(Key::Enter).await;
    let plan_row = browser.wait_for(".tool-row[data-tool='plan']").await;
    assert!(plan_row.text().await.expect("text").starts_with("📋"));

    // The approval card takes the focus; Enter approves.
    browser.wait_for(".approval .approve").await;
    assert_eq!(text_of(&browser, ".approval .tool-name").await, "shell");
    assert!(
        text_of(&browser, ".approval-resource")
            .await
            .contains("made.txt")
    );
    browser
        .wait_until("the focus on Approve", "return document.activeElement && document.activeElement.classList.contains('approve');")
        .await;
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the approval resolved",
            "const r = document.querySelector('.approval-result'); return !!r && r.textContent === 'Approved';",
        )
        .await;
    browser
        .wait_until(
            "the shell row done",
            "const r = document.querySelector(\".tool-row[data-tool='shell']\"); return !!r && r.dataset.status === 'ok' && r.querySelector('.tool-emoji').textContent === '💻';",
        )
        .await;

    // The answer streamed in, in more than one piece, before the run ended.
    browser.wait_until("the run ended", RUN_ENDED).await;
    assert_eq!(
        text_of(&browser, ".turn .msg-assistant").await,
        FINAL_ANSWER
    );
    let seen = browser.js("return window.__answers;", vec![]).await;
    let mut partial: Vec<String> = seen
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| r[1] == json!(true))
        .filter_map(|r| r[0].as_str())
        .filter(|t| !t.is_empty() && *t != FINAL_ANSWER)
        .map(str::to_string)
        .collect();
    partial.dedup();
    assert!(
        partial.len() >= 2,
        "the answer was not shown while streaming: {seen}"
    );
    assert!(
        sb.work.join("made.txt").exists(),
        "the approved command ran"
    );
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drawer_shows_the_plan_by_keyboard_and_follows_the_run() {
    let hold = Hold::new();
    let (_server, _sb, _served, browser) = signed_in(vec![
        plan_create(&[("s1", "Make the file"), ("s2", HOSTILE_TITLE)]),
        Reply::Held(hold.clone(), Box::new(plan_complete("s1"))),
        text(FINAL_ANSWER),
    ])
    .await;
    browser.type_text("make the file").await;
    browser.press(Key::Enter).await;
    browser.wait_for(".tool-row[data-tool='plan']").await;
    hold.wait_reached().await;

    // Alt+M opens the drawer on the plan tab, which shows the plan at once.
    browser.alt('m').await;
    browser
        .wait_until(
            "the drawer open",
            "return !document.getElementById('drawer').hidden;",
        )
        .await;
    assert_eq!(browser.focused().await, "tab-plan");
    browser
        .wait_until(
            "plan v1",
            "const h = document.querySelector('#plan .plan-header'); return !!h && h.textContent === '📋 Plan — v1 · 0/2 done';",
        )
        .await;
    let glyphs = browser
        .js(
            "return [...document.querySelectorAll('#plan .plan-step')].map(r => [r.querySelector('.plan-glyph').textContent, r.querySelector('.plan-id').textContent, r.querySelector('.plan-title').textContent]);",
            vec![],
        )
        .await;
    assert_eq!(
        glyphs,
        json!([["⬜", "s1", "Make the file"], ["⬜", "s2", HOSTILE_TITLE]])
    );
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('#plan img, #log img').length;",
                vec![]
            )
            .await,
        json!(0),
        "model text stays text"
    );

    // The tabs work by keyboard.
    browser.press(Key::Right).await;
    assert_eq!(browser.focused().await, "tab-session");
    assert_eq!(
        browser
            .js("return [document.getElementById('panel-plan').hidden, document.getElementById('panel-session').hidden];", vec![])
            .await,
        json!([true, false])
    );
    browser.press(Key::Left).await;
    assert_eq!(browser.focused().await, "tab-plan");

    // The run goes on and changes the plan: the open panel follows.
    hold.release();
    browser
        .wait_until(
            "plan v2",
            "const h = document.querySelector('#plan .plan-header'); return !!h && h.textContent === '📋 Plan — v2 · 1/2 done';",
        )
        .await;
    assert_eq!(
        text_of(&browser, "#plan .plan-step .plan-glyph").await,
        "✅"
    );

    // Escape closes the drawer.
    browser.press(Key::Escape).await;
    assert_eq!(
        browser
            .js("return document.getElementById('drawer').hidden;", vec![])
            .await,
        json!(true)
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_fits_360_px_and_asks_nothing_of_other_hosts() {
    let (_server, _sb, served, browser) = signed_in(vec![
        plan_create(&[("s1", "Make the file"), ("s2", HOSTILE_TITLE)]),
        plan_complete("s1"),
        text(FINAL_ANSWER),
    ])
    .await;
    let c = &browser.client;
    browser.type_text("make the file").await;
    browser.press(Key::Enter).await;
    browser.wait_until("the run ended", RUN_ENDED).await;

    // The screenshot for the docs: the chat with the plan panel open.
    browser.alt('m').await;
    browser
        .wait_until(
            "plan v2",
            "const h = document.querySelector('#plan .plan-header'); return !!h && h.textContent === '📋 Plan — v2 · 1/2 done';",
        )
        .await;
    save_screenshot(&browser, "webui-plan.png").await;

    // 360 px wide: nothing scrolls sideways, with the drawer open or closed.
    c.set_window_size(360, 780).await.expect("resize");
    browser
        .wait_until("a 360 px viewport", "return window.innerWidth <= 360;")
        .await;
    let open = scrolls_sideways(&browser).await;
    assert_eq!(open["sideways"], json!(false), "{open}");
    save_screenshot(&browser, "webui-360-plan.png").await;
    browser.press(Key::Escape).await;
    let closed = scrolls_sideways(&browser).await;
    assert_eq!(closed["sideways"], json!(false), "{closed}");
    save_screenshot(&browser, "webui-360-chat.png").await;
    // No console error, no CSP violation, no request beyond this server.
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    // Only requests over the network count: the browser's own pages (chrome://…) and
    // data: URLs stay inside it.
    let urls: Vec<String> = browser
        .requested_urls()
        .await
        .into_iter()
        .filter(|u| {
            ["http:", "https:", "ws:", "wss:", "ftp:"]
                .iter()
                .any(|s| u.starts_with(s))
        })
        .collect();
    for page in [
        "/",
        "/style.css",
        "/js/main.js",
        "/api/events/stream",
        "/api/prompt",
    ] {
        assert!(
            urls.contains(&format!("{}{page}", served.base)),
            "{page} not requested: {urls:?}"
        );
    }
    let elsewhere: Vec<_> = urls
        .iter()
        .filter(|u| !u.starts_with(&format!("{}/", served.base)))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "requests beyond the server: {elsewhere:?}"
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_session_is_listed_opened_shows_its_plan_and_is_renamed_in_the_browser() {
    let server = ScriptedServer::start(vec![
        plan_create(&[("s1", "Read the notes"), ("s2", "Summarise")]),
        plan_complete("s1"),
        text("Summary: nothing surprising."),
    ])
    .await;
    let sb = Sandbox::new();
    let id = first_session(&sb, &server, "summarise the notes").await;
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    let c = &browser.client;

    // Without the token the page only says how to sign in.
    c.goto(&format!("{}/", served.base)).await.expect("page");
    assert!(
        text_of(&browser, "body")
            .await
            .contains("Open the token URL odek serve printed")
    );

    browser.sign_in(&served).await;
    let item = browser
        .wait_for(&format!(".session-item[data-session-id='{id}']"))
        .await;
    let label = item.text().await.expect("text");
    assert!(
        label.contains("summarise the notes") && label.contains("cli"),
        "{label}"
    );
    item.click().await.expect("open the session");
    browser
        .wait_until(
            "the saved conversation",
            "return [...document.querySelectorAll('#log .msg-assistant')].some(m => m.textContent === 'Summary: nothing surprising.');",
        )
        .await;
    assert_eq!(
        text_of(&browser, "#log .msg-user").await,
        "summarise the notes"
    );
    let rows = browser
        .js(
            "return [...document.querySelectorAll('#log .tool-row')].map(r => r.textContent);",
            vec![],
        )
        .await;
    assert_eq!(rows, json!(["📋plandone", "📋plandone"]), "{rows}");
    assert_eq!(
        text_of(&browser, "#session-title").await,
        "summarise the notes"
    );

    // The drawer shows this session's plan as soon as it opens.
    browser.alt('m').await;
    browser
        .wait_until(
            "the CLI session's plan",
            "const h = document.querySelector('#plan .plan-header'); return !!h && h.textContent === '📋 Plan — v2 · 1/2 done';",
        )
        .await;
    let glyphs = browser
        .js(
            "return [...document.querySelectorAll('#plan .plan-glyph')].map(g => g.textContent);",
            vec![],
        )
        .await;
    assert_eq!(glyphs, json!(["✅", "⬜"]));

    // The session tab renames it.
    browser.press(Key::Right).await;
    assert_eq!(browser.focused().await, "tab-session");
    let name = browser.wait_for("#rename").await;
    name.clear().await.expect("clear");
    name.send_keys("Notes digest\u{e007}").await.expect("type");
    browser
        .wait_until(
            "the renamed session in the list",
            &format!("const b = document.querySelector(\".session-item[data-session-id='{id}'] .session-name\"); return !!b && b.textContent === 'Notes digest';"),
        )
        .await;
    let detail = served.get(&format!("/api/sessions/{id}")).await;
    assert_eq!(detail.json["title"], "Notes digest", "{}", detail.text);

    // A new session empties the conversation and the plan panel says there is no plan.
    browser.press(Key::Escape).await;
    browser
        .js(
            "document.getElementById('new-session').click(); return true;",
            vec![],
        )
        .await;
    // The drawer opens on the tab it had: back to the plan tab.
    browser.alt('m').await;
    assert_eq!(browser.focused().await, "tab-session");
    browser.press(Key::Left).await;
    browser
        .wait_until(
            "no plan for a new session",
            "const p = document.querySelector('#plan .plan-empty'); return !!p && p.textContent === 'No active plan in this session.';",
        )
        .await;
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('#log > *').length;",
                vec![]
            )
            .await,
        json!(0)
    );

    let problems = browser.console_problems().await;
    // The first visit without the token is a 401 page: Chromium logs the status itself.
    let unexpected: Vec<_> = problems
        .iter()
        .filter(|(_, m)| !m.contains("status of 401"))
        .collect();
    assert!(unexpected.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_and_a_cancelled_run_in_the_browser_and_the_dark_scheme() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "python3 -c \"open('never.txt','w')\""}),
        )]),
        Reply::Held(hold.clone(), Box::new(text("too late"))),
    ])
    .await;
    let sb = Sandbox::new();
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;

    let background = "return getComputedStyle(document.body).backgroundColor;";
    let light = browser.js(background, vec![]).await;
    browser.color_scheme("dark").await;
    let dark = browser.js(background, vec![]).await;
    assert_eq!(light, json!("rgb(251, 251, 250)"));
    assert_eq!(dark, json!("rgb(23, 24, 26)"), "prefers-color-scheme: dark");

    browser.type_text("make a file you should not").await;
    browser.press(Key::Enter).await;
    browser
        .wait_until("the focus on Approve", "return document.activeElement && document.activeElement.classList.contains('approve');")
        .await;
    // Tab to Deny, Enter.
    browser.press(Key::Tab).await;
    assert_eq!(browser.focused().await, "Deny");
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the approval denied",
            "const r = document.querySelector('.approval-result'); return !!r && r.textContent === 'Denied';",
        )
        .await;
    hold.wait_reached().await;
    assert!(
        !sb.work.join("never.txt").exists(),
        "the denied command ran"
    );

    // Cancel the run while the model is answering.
    let cancel = browser.wait_for("#cancel:not([hidden])").await;
    cancel.click().await.expect("cancel");
    browser
        .wait_until(
            "the run cancelled",
            "const n = document.querySelector('.turn .msg-notice'); return !!n && n.textContent === 'Cancelled.' && !document.getElementById('send').disabled && document.getElementById('cancel').hidden;",
        )
        .await;
    let run_id = browser
        .js(
            "return document.querySelector('.turn').dataset.runId;",
            vec![],
        )
        .await;
    let run = served.wait_run(run_id.as_str().expect("run id")).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    hold.release();
    assert_eq!(
        text_of(&browser, "#status").await,
        "",
        "no stale 'Cancelling…'"
    );

    save_screenshot(&browser, "webui-dark.png").await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_split_across_deltas_is_never_shown_in_the_browser() {
    const API_KEY: &str = "sk-odek-test-9f8e7d6c5b4a39281706f5e4";
    const AWS_ID: &str = "AKIA2OGYBAH6RK3LQXPZ";
    const GITHUB: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    // Each secret in three deltas, the answer long enough to stream in several frames.
    let tail = " Nothing else needs doing.".repeat(12);
    let server = ScriptedServer::start(vec![pieces(&[
        "The key is sk-odek-te",
        "st-9f8e7d6c5b",
        "4a39281706f5e4, the id AKIA2OG",
        "YBAH6RK",
        "3LQXPZ and the token ghp_0123456789",
        "abcdefghijklmn",
        "opqrstuvwxyz.",
        &tail,
    ])])
    .await;
    let sb = Sandbox::new();
    let served = Served::start_with_env(&sb, &server.base_url(), &[], &[("ODEK_API_KEY", API_KEY)]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;
    assert_eq!(browser.js(RECORD_ANSWERS, vec![]).await, Value::Bool(true));
    browser.type_text("tell me the secrets").await;
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the run ended",
            "const a = document.querySelector('.turn .msg-assistant'); return !!a && !a.classList.contains('streaming') && !document.getElementById('send').disabled;",
        )
        .await;
    let shown = text_of(&browser, ".turn .msg-assistant").await;
    assert_eq!(
        shown,
        format!("The key is [REDACTED], the id [REDACTED] and the token [REDACTED].{tail}")
    );
    // Nothing the page showed while the answer streamed held a secret, whole or reassembled.
    let seen = browser.js("return window.__answers;", vec![]).await;
    let texts: Vec<&str> = seen
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r[0].as_str())
        .collect();
    // The frames arrive together from the scripted server, so the page may render them in
    // one update (serve_security's finding_2 checks the frames one by one).
    assert!(!texts.is_empty(), "{seen}");
    for text in texts {
        for secret in [API_KEY, AWS_ID, GITHUB] {
            assert!(!text.contains(secret), "{secret} shown: {text}");
        }
    }
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_in_the_browser_by_an_option_and_in_words() {
    let (server, _sb, _served, browser) = signed_in(vec![
        tools(&[(
            "clarify",
            json!({"question": "Which <b>colour</b>?", "options": ["red", "blue"]}),
        )]),
        tools(&[("clarify", json!({"question": "And the name?"}))]),
        text("Blue, named Sky."),
    ])
    .await;
    browser.type_text("paint it").await;
    browser.press(Key::Enter).await;
    browser.wait_for(".clarify .clarify-option").await;
    // The question is text, never markup.
    assert_eq!(
        text_of(&browser, ".clarify-text").await,
        "Which <b>colour</b>?"
    );
    let options = browser
        .js(
            "return [...document.querySelectorAll('.clarify-option')].map(b => b.textContent);",
            vec![],
        )
        .await;
    assert_eq!(options, json!(["red", "blue"]));
    let blue = browser
        .client
        .find(fantoccini::Locator::XPath(
            "//button[contains(@class,'clarify-option') and text()='blue']",
        ))
        .await
        .expect("the blue button");
    blue.click().await.expect("click");
    browser
        .wait_until(
            "the first question answered",
            "const c = document.querySelector('.clarify'); return !!c && c.classList.contains('resolved');",
        )
        .await;
    // The second question has no options: typed and sent with Enter.
    browser
        .wait_until(
            "the second question",
            "return document.querySelectorAll('.clarify').length === 2 && document.activeElement && document.activeElement.classList.contains('clarify-input');",
        )
        .await;
    browser.type_text("Sky").await;
    browser.press(Key::Enter).await;
    browser.wait_until("the run ended", RUN_ENDED).await;
    assert_eq!(
        text_of(&browser, ".turn .msg-assistant").await,
        "Blue, named Sky."
    );
    let requests = server.requests();
    assert_eq!(tool_results(&requests[1]), ["the user answered: blue"]);
    assert_eq!(
        tool_results(&requests[2]).last().map(String::as_str),
        Some("the user answered: Sky")
    );
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

/// Markdown with a table, code, links — and hostile HTML and a `javascript:` link.
const MARKDOWN_ANSWER: &str = "# Report\n\n**Done**: see the table.\n\n| file | lines |\n|---|--:|\n| a.rs | 12 |\n\n```sh\ncargo test\n```\n\n[docs](https://example.com/d) and [bad](javascript:window.__pwned=1)\n\n<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=1</script>\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_answers_render_hostile_html_runs_nothing_and_the_theme_and_model_pickers_work() {
    let server =
        ScriptedServer::start(vec![text(MARKDOWN_ANSWER), text("from the other model")]).await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"models": ["other-model"]}"#);
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;

    // First paint of the signed-in page (reported, never asserted: docs/PERFORMANCE.md).
    let paint = browser
        .js("const p = performance.getEntriesByName('first-contentful-paint')[0]; return p ? p.startTime : null;", vec![])
        .await;
    eprintln!("web UI first contentful paint: {paint} ms");
    // The model picker: the configured model first, then the `models` list.
    browser
        .wait_until(
            "the model picker",
            "const m = document.getElementById('model'); return !m.hidden && m.options.length === 2;",
        )
        .await;
    let options = browser
        .js(
            "return [...document.getElementById('model').options].map(o => o.value);",
            vec![],
        )
        .await;
    assert_eq!(options, json!(["test-model", "other-model"]));

    // The theme: dark on request, kept across a reload, light again.
    let background = "return getComputedStyle(document.body).backgroundColor;";
    let pick = "const s = document.getElementById('theme'); s.value = arguments[0]; s.dispatchEvent(new Event('change')); return document.documentElement.dataset.theme ?? 'system';";
    assert_eq!(browser.js(pick, vec![json!("dark")]).await, json!("dark"));
    assert_eq!(
        browser.js(background, vec![]).await,
        json!("rgb(23, 24, 26)")
    );
    browser.client.refresh().await.expect("reload");
    browser.wait_for("#prompt").await;
    assert_eq!(
        browser.js(background, vec![]).await,
        json!("rgb(23, 24, 26)")
    );
    assert_eq!(
        browser
            .js("return document.getElementById('theme').value;", vec![])
            .await,
        json!("dark")
    );
    assert_eq!(browser.js(pick, vec![json!("light")]).await, json!("light"));
    assert_eq!(
        browser.js(background, vec![]).await,
        json!("rgb(251, 251, 250)")
    );

    // The answer, rendered.
    browser.type_text("report").await;
    browser.press(Key::Enter).await;
    browser.wait_until("the run ended", RUN_ENDED).await;
    let view = browser
        .js(
            r#"const a = document.querySelector('.turn .msg-assistant');
            return {
              h1: a.querySelector('h1')?.textContent,
              strong: a.querySelector('strong')?.textContent,
              cells: [...a.querySelectorAll('td')].map(td => td.textContent),
              right: a.querySelector('td[align="right"]')?.textContent,
              code: a.querySelector('.code-block pre code')?.textContent,
              copy: a.querySelector('.code-block button.copy')?.textContent,
              links: [...a.querySelectorAll('a')].map(l => [l.textContent, l.getAttribute('href')]),
              imgs: a.querySelectorAll('img, script, iframe').length,
              handlers: [...a.querySelectorAll('*')].flatMap(e => e.getAttributeNames()).filter(n => n.startsWith('on')),
              text: a.textContent,
              pwned: window.__pwned ?? null,
              stats: document.querySelector('.turn .answer-stats')?.textContent,
            };"#,
            vec![],
        )
        .await;
    assert_eq!(view["h1"], "Report", "{view}");
    assert_eq!(view["strong"], "Done");
    assert_eq!(view["cells"], json!(["a.rs", "12"]));
    assert_eq!(view["right"], "12");
    assert_eq!(view["code"], "cargo test\n");
    assert_eq!(view["copy"], "Copy");
    assert_eq!(
        view["links"],
        json!([["docs", "https://example.com/d"], ["bad", null]])
    );
    assert_eq!(view["imgs"], 0, "{view}");
    assert_eq!(view["handlers"], json!([]), "{view}");
    assert!(
        view["text"]
            .as_str()
            .unwrap_or_default()
            .contains("<script>window.__pwned=1</script>"),
        "HTML shows as text: {view}"
    );
    assert_eq!(view["pwned"], Value::Null);
    let stats = view["stats"].as_str().unwrap_or_default();
    assert!(stats.ends_with(" s · 100 in · 20 out"), "{stats}");
    // Clicking the bad link goes nowhere.
    browser
        .js("[...document.querySelectorAll('.turn a')].find(a => a.textContent === 'bad').click(); return true;", vec![])
        .await;
    assert_eq!(
        browser.js("return window.__pwned ?? null;", vec![]).await,
        Value::Null
    );
    // The picker stays enabled on the open session: a pick switches its model, saved at once.
    let pick_model = "const m = document.getElementById('model'); m.value = arguments[0]; m.dispatchEvent(new Event('change')); return m.disabled;";
    assert_eq!(
        browser.js(pick_model, vec![json!("other-model")]).await,
        json!(false),
        "the picker stays enabled on an open session"
    );
    browser
        .wait_until(
            "the switch",
            "return document.getElementById('status').textContent.startsWith('Model: other-model');",
        )
        .await;
    assert_eq!(only_session(&sb)["model"], "other-model");

    // A new session with the other model.
    browser
        .js("document.getElementById('new-session').click(); const m = document.getElementById('model'); m.value = 'other-model'; return m.disabled;", vec![])
        .await;
    // Attach a text file through the real file picker, then send.
    let notes = sb.tmp().join("notes.txt");
    std::fs::write(&notes, "alpha\nbeta\n").expect("notes");
    attach_through_the_picker(&browser, &notes, "📄 notes.txt").await;
    browser.type_text("again").await;
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the chips cleared",
            "return document.querySelectorAll('#attachments .chip').length === 0;",
        )
        .await;
    browser
        .wait_until(
            "the second answer",
            "return [...document.querySelectorAll('.turn .msg-assistant')].some(a => a.textContent === 'from the other model');",
        )
        .await;
    let requests = server.requests();
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(requests[1]["model"], "other-model");
    let user = last_user_text(&requests[1]);
    assert!(user.starts_with("again\n\n--- notes.txt ---\n"), "{user}");
    assert!(
        user.contains("source=\"attachment:notes.txt\">\nalpha\nbeta\n"),
        "{user}"
    );

    save_screenshot(&browser, "webui-markdown.png").await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drawer_edits_memory_trusts_a_skill_and_runs_and_disables_a_schedule() {
    let server = ScriptedServer::start(vec![text("Digest done")]).await;
    let sb = Sandbox::new();
    sb.global_config(r#"{"schedules": {"runner": "off"}}"#);
    let skill = sb.work.join(".odek/skills/lint");
    std::fs::create_dir_all(&skill).expect("skill folder");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: lint\ndescription: Runs the linters <b>loudly</b>.\n---\nRun them.\n",
    )
    .expect("skill");
    for args in [
        vec!["memory", "add", "Prefers", "tabs"],
        vec![
            "schedule",
            "add",
            "--cron",
            "0 9 * * *",
            "--tz",
            "UTC",
            "--name",
            "digest",
            "summarise",
            "the",
            "day",
        ],
    ] {
        let mut cmd = sb.odek(&server.base_url());
        cmd.args(&args);
        let out = output(cmd).await;
        assert!(out.status.success(), "{args:?}: {}", show(&out));
    }
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;
    browser.alt('m').await;

    // Memory: edit the fact.
    browser
        .wait_for("#tab-memory")
        .await
        .click()
        .await
        .expect("memory tab");
    let edit = browser.wait_for(".fact button.edit").await;
    assert_eq!(text_of(&browser, ".fact .row-text").await, "Prefers tabs");
    edit.click().await.expect("edit");
    browser
        .js("const i = document.querySelector('.fact input'); i.value = 'Prefers spaces'; i.form.requestSubmit(); return true;", vec![])
        .await;
    browser
        .wait_until("the fact saved", "const t = document.querySelector('.fact .row-text'); return !!t && t.textContent === 'Prefers spaces';")
        .await;
    let facts = served.get("/api/memory").await.json;
    assert_eq!(facts["facts"][0]["content"], "Prefers spaces", "{facts}");

    // Skills: the project's skill is not offered until trusted — twice asked.
    browser
        .wait_for("#tab-skills")
        .await
        .click()
        .await
        .expect("skills tab");
    let trust = browser
        .wait_for(".skill[data-name='lint'] button.trust")
        .await;
    assert!(
        text_of(&browser, ".skill[data-name='lint'] .status-text")
            .await
            .starts_with("not trusted")
    );
    assert_eq!(
        text_of(&browser, ".skill[data-name='lint'] .row-text").await,
        "Runs the linters <b>loudly</b>."
    );
    trust.click().await.expect("trust once");
    assert!(
        !sb.home.join("skills-trust.json").exists(),
        "one click only asks"
    );
    trust.click().await.expect("trust");
    browser
        .wait_until("the skill trusted", "const t = document.querySelector(\".skill[data-name='lint'] .status-text\"); return !!t && t.textContent === 'offered';")
        .await;
    assert!(read(sb.home.join("skills-trust.json")).contains("lint"));

    // Schedules: disable, then run now (delivered to its log).
    browser
        .wait_for("#tab-schedules")
        .await
        .click()
        .await
        .expect("schedules tab");
    browser
        .wait_for(".job[data-name='digest'] button.toggle")
        .await
        .click()
        .await
        .expect("disable");
    browser
        .wait_until(
            "disabled",
            "return !!document.querySelector(\".job.disabled[data-name='digest']\");",
        )
        .await;
    let jobs = served.get("/api/schedules").await.json;
    assert_eq!(jobs["schedules"][0]["enabled"], false, "{jobs}");
    browser
        .wait_for(".job[data-name='digest'] button.run")
        .await
        .click()
        .await
        .expect("run now");
    let log = sb.home.join("schedules/digest.log");
    for _ in 0..400 {
        if log.exists() && read(&log).contains("Digest done") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(read(&log).contains("Digest done"), "{}", served.stderr());
    let mut jobs = served.get("/api/schedules").await.json;
    for _ in 0..100 {
        if jobs["schedules"][0]["last_outcome"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        jobs = served.get("/api/schedules").await.json;
    }
    assert_eq!(jobs["schedules"][0]["last_outcome"], "ok", "{jobs}");

    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

/// The drawer's Runs tab shows every run of the server — here a scheduled job's, started
/// by the server's runner — with who started it and its background job's last lines, and
/// its *Stop* cancels it, the job with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_tab_lists_a_scheduled_run_with_its_job_and_stops_it() {
    let hold = Hold::new();
    let server = ScriptedServer::start(vec![
        tools(&[(
            "shell",
            json!({"command": "echo 'serving <b>docs</b>'; sleep 71.3", "background": true}),
        )]),
        tools(&[("shell", json!({"command": "sleep 0.3"}))]),
        Reply::Held(hold.clone(), Box::new(text("Never delivered."))),
    ])
    .await;
    let sb = Sandbox::new();
    // Missed while no runner ran: the server's runner catches up at start.
    sb.add_missed_hourly_job(&server.base_url(), "hourly", "catch up", 2);
    let served = Served::start(&sb, &server.base_url(), &[]);
    hold.wait_reached().await;

    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;
    browser.alt('m').await;
    browser
        .wait_for("#tab-runs")
        .await
        .click()
        .await
        .expect("runs tab");
    let stop = browser
        .wait_for(".run-running[data-origin='schedule'] button.stop")
        .await;
    assert_eq!(
        text_of(&browser, ".run-running[data-origin='schedule'] .origin").await,
        "schedule"
    );
    let head = text_of(&browser, ".run-running .job .job-head").await;
    assert!(
        head.starts_with("⏳ job 1 · running · ") && head.ends_with("sleep 71.3"),
        "{head}"
    );
    assert_eq!(
        text_of(&browser, ".run-running .job .job-tail").await,
        "serving <b>docs</b>"
    );
    stop.click().await.expect("stop");
    browser
        .wait_until(
            "the run cancelled",
            "return !!document.querySelector(\".run-cancelled[data-origin='schedule']\");",
        )
        .await;
    hold.release();
    let runs = served.get("/api/runs").await.json;
    assert_eq!(runs["runs"][0]["status"], "cancelled", "{runs}");
    processes_gone("sleep 71.3").await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

/// The parent of the sub-agent test: delegates two goals, then answers.
const DELEGATED: [&str; 2] = ["alpha: count the files", "beta: list the TODOs"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_show_live_under_their_delegate_call() {
    use crate::support::keyed::{Answer, KeyedServer};
    use std::sync::Arc;
    use tokio::sync::Semaphore;

    // The children wait until the browser has shown both of them running.
    let gate = Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let answer: Answer = Arc::new(move |first: String, request: Value| {
        let held = held.clone();
        Box::pin(async move {
            if first == "split the work" {
                let results = request["messages"]
                    .as_array()
                    .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
                return if results == 0 {
                    json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_d", "type": "function",
                        "function": {"name": "delegate_tasks", "arguments": json!({"tasks":
                            DELEGATED.iter().map(|g| json!({"goal": g})).collect::<Vec<_>>()}).to_string()}}]})
                } else {
                    json!({"role": "assistant", "content": "Both parts are done."})
                };
            }
            let _permit = held.acquire().await.expect("gate");
            json!({"role": "assistant", "content": format!("result of {first}")})
        })
    });
    let server = KeyedServer::start(answer).await;
    let sb = Sandbox::new();
    sb.global_config(&json!({"stream": false, "context_window": 100000}).to_string());
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;

    browser.type_text("split the work").await;
    browser.press(Key::Enter).await;
    // delegate_tasks asks (system_write): approved in the card.
    browser.wait_for(".approval .approve").await;
    browser
        .js(
            "document.querySelector('.approval .approve').click(); return true;",
            vec![],
        )
        .await;
    let rows = "return [...document.querySelectorAll('.tool-row[data-tool=\"delegate_tasks\"] > .subagents > .subagent-row')].map(r => r.querySelector('.subagent-name').textContent + ' ' + r.dataset.status);";
    browser
        .wait_until(
            "both sub-agents running under the call",
            &format!("const r = (() => {{ {rows} }})(); return r.length === 2 && r.every(x => x.endsWith('running'));"),
        )
        .await;
    let running = browser.js(rows, vec![]).await;
    assert_eq!(
        running,
        json!(["sub-agent 1/2 running", "sub-agent 2/2 running"])
    );
    gate.add_permits(2);
    browser.wait_until("the run ended", RUN_ENDED).await;
    assert_eq!(
        browser.js(rows, vec![]).await,
        json!(["sub-agent 1/2 ok", "sub-agent 2/2 ok"])
    );
    save_screenshot(&browser, "subagents.png").await;
    let figures = browser
        .js(
            "return [...document.querySelectorAll('.subagent-row .tool-status')].map(s => s.textContent);",
            vec![],
        )
        .await;
    for figure in figures.as_array().expect("figures") {
        let figure = figure.as_str().expect("text");
        assert!(
            figure.starts_with("ok · 1 model call · 0 tools · 110 tokens · "),
            "{figure}"
        );
    }
    assert_eq!(
        text_of(&browser, ".turn .msg-assistant").await,
        "Both parts are done."
    );
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_attached_in_the_browser_reaches_a_model_that_takes_images() {
    // A 1×1 PNG.
    const DOT_PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\x0f\x04\0\x09\xfb\x03\xfd\xe3U\xf2\x9c\0\0\0\0IEND\xaeB`\x82";
    let server = ScriptedServer::start(vec![text("One dot.")]).await;
    let sb = Sandbox::new();
    sb.global_config(&json!({"images": true}).to_string());
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;

    let dot = sb.tmp().join("dot.png");
    std::fs::write(&dot, DOT_PNG).expect("dot");
    // The picker takes images once `GET /api/models` said the model does.
    browser
        .wait_until(
            "the models loaded",
            "return document.getElementById('model').options.length > 0;",
        )
        .await;
    attach_through_the_picker(&browser, &dot, "🖼 dot.png").await;
    browser.type_text("what is this?").await;
    browser.press(Key::Enter).await;
    browser.wait_until("the run ended", RUN_ENDED).await;
    let user = last_user(&server.requests()[0]);
    assert_eq!(
        user["content"][0]["text"],
        "what is this?\n\n[Image attached: dot.png]"
    );
    assert_eq!(user["content"][1]["type"], "image_url");
    assert!(
        user["content"][1]["image_url"]["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("data:image/png;base64,iVBORw0KGgo")),
        "{user}"
    );
    // Opened again after a reload, the saved turn shows its text and that an image went
    // with it.
    browser.client.refresh().await.expect("reload");
    browser
        .wait_for(".session-item")
        .await
        .click()
        .await
        .expect("open the session");
    browser
        .wait_until(
            "the saved turn",
            "const u = document.querySelector('.msg-user'); return !!u && u.textContent.includes('🖼 1 image');",
        )
        .await;
    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_to_here_shows_the_files_and_a_conflict_before_it_writes() {
    let server = ScriptedServer::start(vec![
        tools(&[(
            "patch",
            json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
        )]),
        text("Patched."),
        tools(&[(
            "write_file",
            json!({"path": "new.txt", "content": "fresh\n"}),
        )]),
        text("Written."),
    ])
    .await;
    let sb = Sandbox::new();
    let a = sb.work.join("a.txt");
    std::fs::write(&a, "one\n").expect("a");
    let id = first_session(&sb, &server, "patch a").await;
    let mut cmd = sb.odek(&server.base_url());
    cmd.args(["continue", "--id", &id, "write new"]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let served = Served::start(&sb, &server.base_url(), &[]);
    let browser = Browser::start(&sb.tmp().join("chromium")).await;
    browser.sign_in(&served).await;
    browser
        .wait_for(&format!(".session-item[data-session-id='{id}']"))
        .await
        .click()
        .await
        .expect("open the session");
    browser
        .wait_until(
            "a rewind offer under each prompt",
            "return document.querySelectorAll('#log .rewind-here').length === 2;",
        )
        .await;

    // Turn 2: only new.txt would go; nothing is written by the preview.
    browser
        .wait_for("#log .rewind-here[data-turn='2']")
        .await
        .click()
        .await
        .expect("rewind to turn 2");
    browser.wait_for("#log .rewind-card .rewind-go").await;
    let files = browser
        .js(
            "return [...document.querySelectorAll('#log .rewind-card .rewind-files li')].map(li => li.textContent.replace(/\\/.*\\//, '/'));",
            vec![],
        )
        .await;
    assert_eq!(files, json!(["− remove/new.txt"]), "{files}");
    assert!(sb.work.join("new.txt").exists());
    browser
        .wait_for("#log .rewind-card .rewind-cancel")
        .await
        .click()
        .await
        .expect("cancel");

    // Turn 1 with a.txt changed by hand: the conflict is shown before anything is written.
    std::fs::write(&a, "mine\n").expect("edit");
    browser
        .wait_for("#log .rewind-here[data-turn='1']")
        .await
        .click()
        .await
        .expect("rewind to turn 1");
    let go = browser.wait_for("#log .rewind-card .rewind-go").await;
    assert_eq!(
        go.text().await.expect("text"),
        "Overwrite 1 changed file(s) and rewind"
    );
    assert_eq!(
        text_of(&browser, "#log .rewind-card li.conflict .rewind-conflict").await,
        "changed since outside odek"
    );
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "mine\n");
    go.click().await.expect("rewind");
    browser
        .wait_until(
            "the rewind's result",
            "const r = document.querySelector('#log .rewind-card .rewind-result'); return !!r && r.textContent.startsWith('Rewound 2 file(s). This rewind is checkpoint 3');",
        )
        .await;
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "one\n");
    assert!(!sb.work.join("new.txt").exists());

    // The conversation alone: a new session with the first turn opens; the old one stays.
    browser
        .wait_for("#log .rewind-here[data-turn='2']")
        .await
        .click()
        .await
        .expect("rewind to turn 2 again");
    browser
        .wait_for("#log .rewind-card .rewind-conversation")
        .await
        .click()
        .await
        .expect("conversation only");
    browser
        .wait_until(
            "the fork opened",
            "return document.querySelectorAll('#log .msg-user').length === 1 && !document.querySelector('#log .rewind-card');",
        )
        .await;
    assert_eq!(text_of(&browser, "#log .msg-user").await, "patch a");
    let listed = served.get("/api/sessions").await;
    assert_eq!(listed.json["count"], 2, "{}", listed.text);
    assert_eq!(browser.console_problems().await, vec![]);
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_command_is_offered_under_the_prompt_completed_by_tab_and_run_by_the_server() {
    let (server, sb, _served, browser) = signed_in(vec![text("Built it.")]).await;
    // Written after the page loaded: the first `/` typed reads the commands again.
    let file = sb.work.join(".odek/commands/frontend/build.md");
    std::fs::create_dir_all(file.parent().expect("folder")).expect("folder");
    std::fs::write(
        &file,
        "---\ndescription: Build the <b>frontend</b>\nargument-hint: TARGET\n---\nBuild the frontend for $1 please.\n",
    )
    .expect("command");
    browser.type_text("/fr").await;
    browser
        .wait_until(
            "the command offered",
            "const b = document.querySelector('#command-hints .command-pick'); return !!b && b.dataset.command === 'frontend:build' && !document.getElementById('command-hints').hidden;",
        )
        .await;
    assert_eq!(
        text_of(&browser, "#command-hints .command-args").await,
        "TARGET"
    );
    assert_eq!(
        text_of(&browser, "#command-hints .command-description").await,
        "Build the <b>frontend</b>",
        "the description is text"
    );
    browser.press(Key::Tab).await;
    let typed = browser
        .js("return document.getElementById('prompt').value;", vec![])
        .await;
    assert_eq!(typed, "/frontend:build ");
    assert_eq!(browser.focused().await, "prompt", "Tab completed in place");
    browser.type_text("web").await;
    browser.press(Key::Enter).await;
    browser.wait_until("the run ended", RUN_ENDED).await;
    assert_eq!(text_of(&browser, ".turn .msg-assistant").await, "Built it.");
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "Build the frontend for web please.",
        "the server ran the command"
    );
    assert!(
        browser
            .js(
                "return document.getElementById('command-hints').hidden;",
                vec![]
            )
            .await
            .as_bool()
            .unwrap_or(false)
    );

    let problems = browser.console_problems().await;
    assert!(problems.is_empty(), "console: {problems:?}");

    // An unknown command is refused as any prompt the API refuses: in the status line.
    browser.type_text("/nosuch x").await;
    browser.press(Key::Enter).await;
    browser
        .wait_until(
            "the refusal",
            "return document.getElementById('status').textContent.startsWith('no command /nosuch; hint: ');",
        )
        .await;
    assert_eq!(server.requests().len(), 1);
    // The browser logs the refused request itself, and nothing else.
    let problems = browser.console_problems().await;
    assert!(
        problems
            .iter()
            .all(|(_, m)| m.contains("/api/prompt") && m.contains("404")),
        "console: {problems:?}"
    );
    browser.quit().await;
}
