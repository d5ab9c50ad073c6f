//! The lexer's unit tests: operators, quoting, substitutions, redirections, here-documents,
//! functions, `case` patterns, brace expansion, comments and unterminated input.

use super::*;

fn words(command: &SimpleCommand) -> Vec<&str> {
    command.words.iter().map(|w| w.text.as_str()).collect()
}

fn all_words(text: &str) -> Vec<Vec<String>> {
    parse_script(text)
        .commands
        .iter()
        .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
        .collect()
}

#[test]
fn splits_on_every_operator() {
    assert_eq!(
        all_words("a 1; b 2 && c || d | e & f\ng |& h"),
        vec![
            vec!["a", "1"],
            vec!["b", "2"],
            vec!["c"],
            vec!["d"],
            vec!["e"],
            vec!["f"],
            vec!["g"],
            vec!["h"],
        ]
    );
}

#[test]
fn removes_quotes_and_escapes() {
    assert_eq!(
        all_words(r#"'r''m' "rm" r\m $'\x72\x6d' $'\162m'"#),
        vec![vec!["rm", "rm", "rm", "rm", "rm"]]
    );
}

#[test]
fn collects_substitutions() {
    let parsed = parse_script("echo $(rm -rf /) `id` \"$(a \"b\")\" <(c) >(d)");
    assert_eq!(
        parsed.substitutions,
        vec!["rm -rf /", "id", "a \"b\"", "c", "d"]
    );
    assert!(parsed.commands[0].words[1].dynamic);
}

#[test]
fn nested_substitution_is_returned_whole() {
    let parsed = parse_script("echo $(echo $(rm -rf /))");
    assert_eq!(parsed.substitutions, vec!["echo $(rm -rf /)"]);
}

#[test]
fn redirections() {
    let parsed = parse_script("cmd >out 2>&1 >>log <in &>all 3>&- >&file");
    let command = &parsed.commands[0];
    assert_eq!(words(command), vec!["cmd"]);
    let kinds: Vec<(RedirectKind, &str)> = command
        .redirects
        .iter()
        .map(|r| (r.kind, r.target.text.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (RedirectKind::Write, "out"),
            (RedirectKind::Duplicate, "1"),
            (RedirectKind::Write, "log"),
            (RedirectKind::Read, "in"),
            (RedirectKind::Write, "all"),
            (RedirectKind::Duplicate, "-"),
            (RedirectKind::Write, "file"),
        ]
    );
}

#[test]
fn here_documents_become_stdin() {
    let parsed = parse_script("cat <<EOF > f\nrm -rf /\n$(id)\nEOF\necho done");
    assert_eq!(parsed.commands.len(), 2);
    assert_eq!(
        parsed.commands[0].stdin_text.as_deref(),
        Some("rm -rf /\n$(id)\n")
    );
    assert_eq!(words(&parsed.commands[1]), vec!["echo", "done"]);
    assert_eq!(parsed.expansions, vec!["rm -rf /\n$(id)\n"]);
    let quoted = parse_script("cat <<'EOF'\n$(id)\nEOF\n");
    assert!(quoted.expansions.is_empty());
}

#[test]
fn here_string_becomes_stdin() {
    let parsed = parse_script("bash <<< 'rm -rf /'");
    assert_eq!(parsed.commands[0].stdin_text.as_deref(), Some("rm -rf /"));
}

#[test]
fn function_definitions_are_recorded() {
    let parsed = parse_script("greet() { echo hi; }; greet; function other { ls; }");
    assert_eq!(parsed.functions, vec!["greet", "other"]);
    assert_eq!(
        all_words("greet() { echo hi; }"),
        vec![vec!["{", "echo", "hi"], vec!["}"]]
    );
}

#[test]
fn case_patterns_are_skipped() {
    let text = "case $x in\n start) run_a;;\n stop|halt) run_b;;\n *) run_c;;\nesac";
    assert_eq!(
        all_words(text),
        vec![
            vec!["case", "$x", "in"],
            vec!["run_a"],
            vec!["run_b"],
            vec!["run_c"],
            vec!["esac"],
        ]
    );
}

#[test]
fn brace_expansion() {
    assert_eq!(all_words("{rm,-rf,/}"), vec![vec!["rm", "-rf", "/"]]);
    assert_eq!(all_words("r{m,} x"), vec![vec!["rm", "r", "x"]]);
    assert_eq!(all_words("echo '{a,b}'"), vec![vec!["echo", "{a,b}"]]);
    // Quoted braces and commas are text, not syntax, beside a real group (the bash
    // agreement property found `"{,}"{a,a}`).
    assert_eq!(all_words("\"{,}\"{a,a}"), vec![vec!["{,}a", "{,}a"]]);
    assert_eq!(all_words("x\\,{a,b}"), vec![vec!["x,a", "x,b"]]);
    assert_eq!(all_words("{a,'b,c'}"), vec![vec!["a", "b,c"]]);
}

#[test]
fn comments_and_continuations() {
    assert_eq!(
        all_words("ls # rm -rf /\nr\\\nm x"),
        vec![vec!["ls"], vec!["rm", "x"]]
    );
    assert_eq!(all_words("echo a#b"), vec![vec!["echo", "a#b"]]);
}

#[test]
fn array_and_arithmetic() {
    let parsed = parse_script("arr=(a $(id) c); ((i++)); echo $((1+2))");
    assert_eq!(all_words("arr=(a b)"), vec![vec!["arr=(…)"]]);
    assert_eq!(parsed.expansions, vec!["a $(id) c", "(i++)", "(1+2)"]);
}

#[test]
fn parameter_expansion_bodies_are_scanned() {
    let parsed = parse_script("echo ${x:-$(rm -rf /)}");
    assert_eq!(parsed.expansions, vec!["x:-$(rm -rf /)"]);
    let inner = parse_expansion(&parsed.expansions[0]);
    assert_eq!(inner.substitutions, vec!["rm -rf /"]);
}

#[test]
fn unterminated_input_ends_with_what_was_read() {
    // Each returns (the lexer never loops on a missing closer) with the words it could
    // read, the open construct running to the end of the text.
    let first = |text: &str| -> Vec<String> {
        parse_script(text)
            .commands
            .first()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .unwrap_or_default()
    };
    assert_eq!(first("echo 'abc"), ["echo", "abc"]);
    assert_eq!(first("echo \"abc"), ["echo", "abc"]);
    assert_eq!(first("`abc"), ["$(abc)"]);
    assert!(
        parse_script("`abc")
            .substitutions
            .contains(&"abc".to_string())
    );
    assert_eq!(
        first("x \\"),
        ["x", "\\"],
        "as bash: a trailing backslash stays"
    );
    for text in ["$(", "${", "a <<", "x=("] {
        let parsed = parse_script(text);
        assert!(parsed.commands.len() <= 1, "{text}: {:?}", parsed.commands);
    }
}
