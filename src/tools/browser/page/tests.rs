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
