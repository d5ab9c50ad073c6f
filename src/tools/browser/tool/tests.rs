//! The `browser` tool's arguments and what it answers without a browser.

use serde_json::json;

use super::*;
use crate::tools::browser::AllowLocal;

fn decoded(args: Value) -> Result<Request, ToolError> {
    Request::decode(&args)
}

fn error_of(args: Value) -> String {
    match decoded(args) {
        Err(e) => e.0,
        Ok(r) => panic!("decoded as {r:?}"),
    }
}

#[test]
fn each_action_decodes_with_its_arguments() {
    assert_eq!(
        decoded(json!({"action": "open", "url": " http://127.0.0.1:3000/ "})),
        Ok(Request::Open("http://127.0.0.1:3000/".into()))
    );
    assert_eq!(
        decoded(json!({"action": "click", "ref": "[3]"})),
        Ok(Request::Click(Element::Ref("3".into())))
    );
    assert_eq!(
        decoded(json!({"action": "click", "ref": 4})),
        Ok(Request::Click(Element::Ref("4".into())))
    );
    assert_eq!(
        decoded(
            json!({"action": "type", "selector": "input[name=n]", "text": "Ada", "submit": true})
        ),
        Ok(Request::Type {
            element: Element::Selector("input[name=n]".into()),
            text: "Ada".into(),
            submit: true
        })
    );
    assert_eq!(
        decoded(json!({"action": "select", "ref": "2", "selector": "ignored", "value": "b"})),
        Ok(Request::Select {
            element: Element::Ref("2".into()),
            value: "b".into()
        })
    );
    assert_eq!(
        decoded(json!({"action": "press", "key": "Enter"})),
        Ok(Request::Press("Enter".into()))
    );
    assert_eq!(
        decoded(json!({"action": "wait_for", "text": "Hello"})),
        Ok(Request::WaitFor {
            text: Some("Hello".into()),
            element: None
        })
    );
    for (action, request) in [
        ("snapshot", Request::Snapshot),
        ("back", Request::Back),
        ("screenshot", Request::Screenshot),
        ("console", Request::Console),
        ("close", Request::Close),
    ] {
        assert_eq!(decoded(json!({ "action": action })), Ok(request));
    }
}

#[test]
fn an_unknown_action_lists_the_actions_and_a_missing_argument_is_named() {
    let unknown = error_of(json!({"action": "scroll"}));
    assert_eq!(
        unknown,
        "browser: unknown action \"scroll\"; the actions: open, snapshot, click, type, press, select, back, wait_for, screenshot, console, close"
    );
    assert!(error_of(json!({})).contains("unknown action \"\""));
    assert_eq!(
        error_of(json!({"action": "open"})),
        "browser: `open` needs `url`"
    );
    assert!(
        error_of(json!({"action": "click", "ref": ""}))
            .contains("`ref` (a number from the last snapshot) or `selector`")
    );
    assert_eq!(
        error_of(json!({"action": "type", "ref": "1"})),
        "browser: `type` needs `text`"
    );
    assert_eq!(
        error_of(json!({"action": "press", "key": " "})),
        "browser: `press` needs `key`"
    );
    assert_eq!(
        error_of(json!({"action": "select", "ref": "1"})),
        "browser: `select` needs `value`"
    );
    assert!(error_of(json!({"action": "wait_for"})).contains("`text`, `ref` or `selector`"));
}

fn tool(images: bool) -> BrowserTool {
    BrowserTool::new(
        Arc::default(),
        Arc::new(BrowserSettings {
            executable: PathBuf::from("/nonexistent/chromium"),
            allow_local: AllowLocal::Loopback,
            web: Arc::default(),
            timeout: Duration::from_secs(5),
            images,
        }),
    )
}

fn context() -> ToolContext {
    ToolContext {
        cwd: PathBuf::from("."),
        cancel: tokio_util::sync::CancellationToken::new(),
        redactor: Arc::new(crate::redact::Redactor::default()),
        spent: Arc::default(),
        report: None,
        checkpoints: None,
        files: None,
        cost_left: None,
        attachments: None,
    }
}

#[tokio::test]
async fn screenshot_without_images_close_without_a_browser_and_bad_json_need_no_browser() {
    let t = tool(false);
    let ctx = context();
    let refused = t.call(r#"{"action":"screenshot"}"#, &ctx).await;
    assert_eq!(refused, Err(ToolError::new(NO_IMAGES)));
    assert_eq!(
        t.call(r#"{"action":"close"}"#, &ctx).await,
        Ok("no browser was open".into())
    );
    let bad = t.call("{not json", &ctx).await.expect_err("refused");
    assert!(bad.0.starts_with("browser: invalid arguments"), "{bad}");
    let not_url = t.call(r#"{"action":"open","url":"no url"}"#, &ctx).await;
    assert!(
        not_url
            .expect_err("refused")
            .0
            .starts_with("browser: not a URL")
    );
}

#[test]
fn the_source_is_the_page_host_and_the_schema_stays_small() {
    let t = tool(false);
    let open = json!({"action": "open", "url": "http://127.0.0.1:3000/x"});
    assert_eq!(
        t.untrusted_source(&open).as_deref(),
        Some("browser:127.0.0.1")
    );
    assert_eq!(
        t.untrusted_source(&json!({"action": "snapshot"}))
            .as_deref(),
        Some("browser")
    );
    t.slot.set_host("example.com");
    assert_eq!(
        t.untrusted_source(&json!({"action": "click", "ref": "1"}))
            .as_deref(),
        Some("browser:example.com")
    );
    assert_eq!(
        t.summary(&json!({"action": "click", "ref": 2})),
        "click [2]"
    );
    assert_eq!(t.summary(&open), "open http://127.0.0.1:3000/x");
    assert_eq!(
        t.summary(&json!({"action": "type", "ref": "1", "text": "pw"})),
        "type [1]"
    );
    assert_eq!(
        t.event_summary(&json!({"action": "type", "ref": "1", "text": "pw"})),
        Some(json!({"action": "type"}))
    );
    assert_eq!(
        t.event_summary(&open),
        Some(json!({"action": "open", "host": "127.0.0.1"}))
    );
    assert!(t.runs_in_call_order());
    let entry =
        json!({"name": t.name(), "description": t.description(), "parameters": t.parameters()});
    let size = entry.to_string().len();
    assert!(size < 800, "the browser's tool entry is {size} bytes");
}
