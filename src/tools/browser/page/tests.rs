use serde_json::json;

use super::*;

#[test]
fn the_keys_are_found_case_aside_and_an_unknown_one_lists_them_all() {
    let enter = find_key("enter").expect("Enter");
    assert_eq!((enter.key, enter.code, enter.text), ("Enter", 13, "\r"));
    let space = find_key(" Space ").expect("Space");
    assert_eq!((space.key, space.code, space.text), (" ", 32, " "));
    assert_eq!(find_key("PageDown").expect("PageDown").code, 34);
    let err = find_key("F5").err().expect("no F5");
    assert!(
        err.0
            .starts_with("browser: no key \"F5\"; the keys: Enter, Tab, Escape"),
        "{err}"
    );
    for key in &KEYS {
        assert!(err.0.contains(key.name), "{} missing from {err}", key.name);
    }
}

#[test]
fn an_element_becomes_the_scripts_two_arguments_quoted_as_json() {
    let by_ref = Element::Ref("3".into());
    assert_eq!(by_ref.js_args(), r#""3",null"#);
    assert_eq!(by_ref.label(), "[3]");
    assert_eq!(Element::Ref("[7]".into()).label(), "[7]");
    let tricky = Element::Selector("a[href=\"x\"]\n');alert(1)//".into());
    assert_eq!(tricky.js_args(), r#"null,"a[href=\"x\"]\n');alert(1)//""#);
}

#[test]
fn a_long_snapshot_is_cut_at_a_line_end_and_says_how_much_is_left() {
    let short = "URL: x\n\nhello".to_string();
    assert_eq!(cap_text(short.clone(), 100), short);
    let text = format!("{}\n{}", "a".repeat(90), "é".repeat(30));
    let cut = cap_text(text, 100);
    assert_eq!(
        cut,
        format!("{}\n[cut: 31 more characters]", "a".repeat(90))
    );
    let one_line = "ü".repeat(50);
    assert_eq!(
        cap_text(one_line, 20),
        format!("{}\n[cut: 30 more characters]", "ü".repeat(20))
    );
}

#[test]
fn the_console_keeps_the_newest_lines_within_its_caps_and_is_read_once() {
    let ring = ConsoleRing::default();
    assert_eq!(ring.take(), "");
    ring.push("log: one");
    ring.push(String::from("error: two"));
    assert_eq!(ring.take(), "log: one\nerror: two");
    assert_eq!(ring.take(), "");
    for n in 0..150 {
        ring.push(format!("log: {n}"));
    }
    let read = ring.take();
    assert!(
        read.starts_with("[50 earlier lines dropped]\nlog: 50\n"),
        "{read}"
    );
    assert!(read.ends_with("log: 149"));
    ring.push("x".repeat(5000));
    let long = ring.take();
    assert_eq!(long.len(), LINE_BYTES + '…'.len_utf8());
    for n in 0..20 {
        ring.push(format!("{n:0>300}"));
    }
    let read = ring.take();
    assert!(read.len() <= RING_BYTES + 40, "{}", read.len());
    assert!(read.starts_with("[7 earlier lines dropped]"), "{read}");
}

#[test]
fn console_events_read_as_one_line_each() {
    let called = json!({"type": "error", "args": [{"type": "string", "value": "boom"},
        {"type": "number", "value": 2}, {"type": "object", "description": "Object"}]});
    assert_eq!(console_line(&called), "error: boom 2 Object");
    let thrown = json!({"exceptionDetails": {"text": "Uncaught", "lineNumber": 4,
        "url": "http://127.0.0.1:9/", "exception": {"description": "Error: bad\n    at x"}}});
    assert_eq!(
        exception_line(&thrown),
        "exception: Error: bad (http://127.0.0.1:9/:5)"
    );
    let bare = json!({"exceptionDetails": {"text": "Uncaught SyntaxError"}});
    assert_eq!(exception_line(&bare), "exception: Uncaught SyntaxError");
    let log = json!({"entry": {"source": "network", "level": "error",
        "text": "Failed to load resource", "url": "http://127.0.0.1:9/x"}});
    assert_eq!(
        log_line(&log).as_deref(),
        Some("error: Failed to load resource (http://127.0.0.1:9/x)")
    );
    let favicon = json!({"entry": {"level": "error", "text": "Failed to load resource",
        "url": "http://127.0.0.1:9/favicon.ico"}});
    assert_eq!(log_line(&favicon), None);
}

#[test]
fn what_the_script_throws_is_the_error_and_its_value_the_answer() {
    let ok = json!({"result": {"type": "string", "value": "hi"}});
    assert_eq!(js_value(ok), Ok(json!("hi")));
    assert_eq!(
        js_value(json!({"result": {"type": "undefined"}})),
        Ok(Value::Null)
    );
    let thrown = json!({"result": {}, "exceptionDetails": {"text": "Uncaught",
        "exception": {"type": "string", "value": "no element [9] here: take a snapshot first"}}});
    assert_eq!(
        js_value(thrown),
        Err(ToolError::new(
            "browser: no element [9] here: take a snapshot first"
        ))
    );
    let error = json!({"exceptionDetails": {"text": "Uncaught",
        "exception": {"description": "SyntaxError: bad selector\n    at O.el"}}});
    assert_eq!(
        js_value(error),
        Err(ToolError::new("browser: SyntaxError: bad selector"))
    );
}

#[test]
fn a_screenshot_has_the_size_limit_of_every_other_image() {
    assert_eq!(MAX_SCREENSHOT_BYTES, crate::prompt::MAX_IMAGE_BYTES);
}
