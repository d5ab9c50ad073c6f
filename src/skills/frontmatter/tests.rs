use super::*;

fn file(front: &str, body: &str) -> String {
    format!("---\n{front}\n---\n{body}")
}

fn rule(front: &str, folder: &str) -> String {
    parse(&file(front, "body"), folder)
        .expect_err("a broken rule")
        .to_string()
}

#[test]
fn a_minimal_skill() {
    let s = parse(
        &file(
            "name: pdf-tools\ndescription: Fill and merge PDF forms.",
            "# PDF\nSteps.\n",
        ),
        "pdf-tools",
    )
    .expect("valid");
    assert_eq!(s.front.name, "pdf-tools");
    assert_eq!(s.front.description, "Fill and merge PDF forms.");
    assert_eq!(s.body, "# PDF\nSteps.\n");
    assert!(!s.front.auto_load && s.front.other_keys.is_empty());
}

/// The shape of the public skill packs: a folded long description, a license, metadata with
/// a number, `allowed-tools` as a string, keys of other agents.
#[test]
fn the_shape_other_agents_write() {
    let front = "name: webapp-testing\n\
description: >-\n  Toolkit for interacting with and testing local web applications using\n  Playwright. Use when verifying frontend behaviour, capturing screenshots\n  or reading browser logs.\n\
license: Complete terms in LICENSE.txt\n\
compatibility: Needs Python 3.10+ and a Chromium install\n\
metadata:\n  author: example-org\n  version: 1.2\n\
allowed-tools: Bash(python:*) Read Write\n\
model: claude-sonnet\n\
user-invocable: true";
    let s = parse(
        &file(front, "Use `scripts/with_server.py`.\n"),
        "webapp-testing",
    )
    .expect("valid");
    assert!(s.front.description.starts_with("Toolkit for interacting"));
    assert!(!s.front.description.contains('\n'));
    assert_eq!(s.front.metadata["version"], "1.2");
    assert_eq!(s.front.allowed_tools, ["Bash(python:*)", "Read", "Write"]);
    assert_eq!(s.front.other_keys, ["model", "user-invocable"]);
    assert_eq!(
        s.front.license.as_deref(),
        Some("Complete terms in LICENSE.txt")
    );
}

#[test]
fn the_go_originals_odek_block() {
    let front = "name: deploy\ndescription: Ship it.\nodek:\n  auto_load: true\n  trigger:\n    topic: release\n    action: deploy\n  quality: 0.9";
    let s = parse(&file(front, "b"), "deploy").expect("valid");
    assert!(s.front.auto_load);
    assert_eq!(s.front.trigger["topic"], "release");
    let list = "name: a\ndescription: d\nallowed-tools: [read_file, \"shell\"]";
    assert_eq!(
        parse(&file(list, ""), "a").unwrap().front.allowed_tools,
        ["read_file", "shell"]
    );
}

#[test]
fn each_rule_is_named() {
    let cases = [
        ("description: d", "a", "`name` is required"),
        ("name: a", "a", "`description` is required"),
        (
            "name: a\ndescription: \"  \"",
            "a",
            "`description` must not be empty",
        ),
        (
            "name: Big\ndescription: d",
            "Big",
            "lowercase letters, digits and hyphens",
        ),
        (
            "name: a_b\ndescription: d",
            "a_b",
            "lowercase letters, digits and hyphens",
        ),
        (
            "name: -ab\ndescription: d",
            "-ab",
            "must not start or end with a hyphen",
        ),
        (
            "name: ab-\ndescription: d",
            "ab-",
            "must not start or end with a hyphen",
        ),
        ("name: a--b\ndescription: d", "a--b", "two hyphens in a row"),
        (
            "name: a\ndescription: d",
            "b",
            "must equal its folder's name (\"b\")",
        ),
        ("name: 12\ndescription: d", "12", "`name` must be a string"),
        (
            "name: a\ndescription: d\nlicense: [x]",
            "a",
            "`license` must be a string",
        ),
        (
            "name: a\ndescription: d\nmetadata: [1]",
            "a",
            "`metadata` must map names to strings",
        ),
        (
            "name: a\ndescription: d\nmetadata:\n  k: [1]",
            "a",
            "`metadata` must map",
        ),
        (
            "name: a\ndescription: d\nallowed-tools: 3",
            "a",
            "`allowed-tools` must be",
        ),
        (
            "name: a\ndescription: d\nodek: yes",
            "a",
            "`odek` must be a mapping",
        ),
        (
            "name: a\ndescription: d\nodek:\n  auto_load: maybe",
            "a",
            "`odek.auto_load`",
        ),
        ("- a\n- b", "a", "must be a mapping of keys"),
        ("name: [unclosed", "a", "not valid YAML"),
    ];
    for (front, folder, expected) in cases {
        let got = rule(front, folder);
        assert!(got.contains(expected), "{front:?}: {got}");
    }
    let long = format!("name: a\ndescription: {}", "x".repeat(1025));
    assert!(rule(&long, "a").contains("1025 characters, over the 1024-character limit"));
    let longest = format!("name: {}\ndescription: d", "a".repeat(65));
    assert!(rule(&longest, &"a".repeat(65)).contains("1–64"));
    assert!(
        parse(
            &file(&format!("name: {}\ndescription: d", "a".repeat(64)), ""),
            &"a".repeat(64)
        )
        .is_ok()
    );
}

#[test]
fn the_front_matter_block_itself() {
    assert!(
        parse("no front matter", "a")
            .unwrap_err()
            .to_string()
            .contains("must start with")
    );
    assert!(
        parse("# Title\n---\nname: a\n---\n", "a")
            .unwrap_err()
            .to_string()
            .contains("must start with")
    );
    assert!(
        parse("---\nname: a\ndescription: d\n", "a")
            .unwrap_err()
            .to_string()
            .contains("no closing")
    );
    let crlf = "\u{feff}---\r\nname: a\r\ndescription: d\r\n---\r\nbody\r\n";
    let s = parse(crlf, "a").expect("BOM and CRLF are fine");
    assert_eq!(s.body, "body\r\n");
    let dots = parse("---\nname: a\ndescription: d\n...\nrest", "a").expect("YAML's end marker");
    assert_eq!(dots.body, "rest");
}

/// A front matter made to stall the YAML parser (100,000 nested `[`) is refused before it
/// is parsed; an ordinary one with brackets in its text is not.
#[test]
fn a_front_matter_too_large_or_too_deep_is_refused_before_parsing() {
    let deep = format!(
        "---\nname: a\ndescription: {}\n---\nbody",
        "[".repeat(100_000)
    );
    let started = std::time::Instant::now();
    let err = parse(&deep, "a").expect_err("too deep");
    assert!(matches!(err, Rule::FrontMatterTooLarge { .. }), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    let nested = format!(
        "---\nname: a\ndescription: d\nx: {}1{}\n---\n",
        "[".repeat(17),
        "]".repeat(17)
    );
    assert!(matches!(
        parse(&nested, "a"),
        Err(Rule::FrontMatterTooLarge { .. })
    ));
    let large = format!(
        "---\nname: a\ndescription: d\nx: \"{}\"\n---\n",
        "y".repeat(20_000)
    );
    assert!(matches!(
        parse(&large, "a"),
        Err(Rule::FrontMatterTooLarge { .. })
    ));
    let fine = "---\nname: a\ndescription: \"Cleans CSV [beta] files {fast}\"\nmetadata:\n  tags: \"[x]\"\n---\nbody";
    parse(fine, "a").expect("ordinary brackets");
    assert_eq!(declared_name(&deep), None);
}
