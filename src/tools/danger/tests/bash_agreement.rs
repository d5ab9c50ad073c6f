//! The lexer agrees with bash: for a corpus of tricky command lines and for words generated
//! at random, the words the lexer yields after quote removal are the words bash passes to a
//! command (`bash -c` running a function that prints its arguments NUL-separated). Where
//! bash refuses a line (an unterminated quote, a here-document without its end), the
//! classifier must not call it safe.
//!
//! bash runs with globbing off (`set -f`) and `HOME=/h`, so a word is the text the lexer
//! yields with a leading unquoted `~` standing for the home directory; lines and words hold
//! no parameter expansion or substitution (bash would expand them; the lexer keeps them and
//! marks the word dynamic, which the classifier handles on its own).

use proptest::prelude::*;

use super::super::lexer::parse_script;
use super::super::syntax::Word;

/// The home directory bash sees.
const HOME: &str = "/h";

/// The words bash gives a command for `line` (after `p `), or `None` when bash refuses it.
fn bash_words(line: &str) -> Option<Vec<String>> {
    let script = format!("set -f; p() {{ printf '%s\\0' \"$@\"; }}\np {line}\n");
    let out = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &script])
        .env_clear()
        .env("HOME", HOME)
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("bash runs");
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut words: Vec<String> = text.split('\0').map(str::to_string).collect();
    words.pop(); // after the last NUL
    Some(words)
}

/// The words of the lexer's first command for `p <line>`, without the `p`, as bash would
/// pass them: a leading unquoted `~` is the home directory.
fn lexer_words(line: &str) -> Vec<String> {
    let parsed = parse_script(&format!("p {line}\n"));
    let Some(first) = parsed.commands.first() else {
        return Vec::new();
    };
    first.words.iter().skip(1).map(as_bash_passes_it).collect()
}

fn as_bash_passes_it(word: &Word) -> String {
    match word.text.strip_prefix('~') {
        Some(rest) if word.tilde && (rest.is_empty() || rest.starts_with('/')) => {
            format!("{HOME}{rest}")
        }
        _ => word.text.clone(),
    }
}

/// The corpus: quotes, escapes, ANSI-C quoting, here-documents, brace and tilde forms,
/// comments and line continuations.
const CORPUS: &[&str] = &[
    "plain words here",
    "'single quoted' \"double quoted\"",
    "mixed'single'\"double\"plain",
    "'it'\\''s'",
    "\"a \\\"quote\\\" inside\"",
    "\"backslash \\\\ and \\$ and \\` kept\"",
    "\"\\a \\b stay\"",
    "back\\ slash\\ spaces",
    "\\'escaped\\' \\\"quotes\\\"",
    "$'tab\\there' $'nl\\nx' $'q\\'q'",
    "$'\\x41\\x42' $'\\101\\102' $'\\u00e9' $'\\e[0m'",
    "$'a\\\\b' $'\\\"dq\\\"'",
    "\"$'not ansi'\"",
    "'$'\"x\"",
    "{a,b,c}",
    "x{a,b}y pre{1,2}{x,y}",
    "{single} {a,} {,b} {}",
    "\"{a,b}\" '{a,b}' \\{a,b\\}",
    "{a,{b,c}}",
    "~ ~/docs ~nosuchuser '~' \"~\"/x a~b ~\\/x",
    "x # a comment 'with quotes",
    "a#not-a-comment b #comment",
    "line\\\ncontinued 'quoted\\\nkept'",
    "\"double\\\ncontinued\"",
    "a <<EOF\nbody 'ignored'\nEOF",
    "a <<'EOF' b\n$literal body\nEOF",
    "a <<-EOF c\n\tindented\n\tEOF",
    "a b <<<'here string'",
    "a 2> /dev/null c 3>&1 d",
    "\"\" '' x",
    "'' ''",
    "a\"\"b c''d",
    "tab\tseparated\twords",
    "\"multi\nline\"",
    "'*' \"?\" \\[",
    "*.rs ?x [ab]",
    "= == =x x= a=b",
    "-n -e -- --long=value",
    "'a\"b' \"a'b\"",
    "\\\\ \\a \\  x",
];

#[test]
fn the_corpus_splits_into_the_words_bash_passes() {
    let mut disagreements = Vec::new();
    for line in CORPUS {
        let bash = bash_words(line).unwrap_or_else(|| panic!("bash refused {line:?}"));
        let lexer = lexer_words(line);
        if bash != lexer {
            disagreements.push(format!("{line:?}\n  bash:  {bash:?}\n  lexer: {lexer:?}"));
        }
    }
    assert!(
        disagreements.is_empty(),
        "the lexer disagrees with bash:\n{}",
        disagreements.join("\n")
    );
}

#[test]
fn lines_bash_refuses_are_never_safe() {
    for line in [
        "echo 'unterminated",
        "echo \"unterminated",
        "echo $'unterminated",
        "echo $(",
        "echo `unterminated",
        "echo ${x",
    ] {
        let class = super::classify_command(line).class;
        assert_ne!(
            class,
            crate::danger_policy::DangerClass::Safe,
            "{line:?} is not a complete command"
        );
    }
}

/// One piece of a generated word, and the shell text that writes it.
fn piece() -> impl Strategy<Value = String> {
    let plain = "[a-zA-Z0-9._/:@%+=-]{1,6}";
    let inner = "[a-zA-Z0-9 ._/:@%+=,{}*?$`\\\\\"-]{0,6}";
    prop_oneof![
        plain.prop_map(|s| s),
        inner.prop_map(|s| format!("'{s}'")),
        "[a-zA-Z0-9 ._/:@%+=,{}*?'-]{0,6}".prop_map(|s| format!("\"{s}\"")),
        prop::sample::select(vec!["\\\"", "\\\\", "\\$", "\\`", "\\a", "\\x"])
            .prop_map(|s| format!("\"{s}\"")),
        prop::sample::select(vec![
            "\\ ", "\\'", "\\\"", "\\\\", "\\{", "\\}", "\\,", "\\#", "\\~", "\\a"
        ])
        .prop_map(str::to_string),
        prop::sample::select(vec![
            "\\n", "\\t", "\\x41", "\\101", "\\u00e9", "\\\\", "\\'", "\\\"", "\\e", "\\a",
            "\\x7e", "\\0101", "\\cA",
        ])
        .prop_map(|e| format!("$'{e}'")),
        ("[a-z]{1,3}", "[a-z]{1,3}").prop_map(|(a, b)| format!("{{{a},{b}}}")),
    ]
}

fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..4).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_words_split_as_bash_splits_them(words in prop::collection::vec(word(), 1..5)) {
        let line = words.join(" ");
        let bash = bash_words(&line);
        prop_assume!(bash.is_some());
        prop_assert_eq!(lexer_words(&line), bash.unwrap_or_default(), "{:?}", line);
    }
}
