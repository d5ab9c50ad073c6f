//! A command's prompt: its body with `$ARGUMENTS` (everything after the name) and `$1` … `$9`
//! (the arguments' words; a word in double or single quotes is one word, quotes taken off)
//! replaced. A missing word is empty. A body that names neither gets the arguments after a
//! blank line as `ARGUMENTS: …`, as Claude Code does, so nothing typed is lost.

/// What replaces `$ARGUMENTS`.
pub const ARGUMENTS: &str = "$ARGUMENTS";
/// Past this many bytes of prompt, the rest of the body is kept as written: a file of many
/// `$ARGUMENTS` and a long argument cannot make a prompt of gigabytes.
pub const MAX_EXPANDED_BYTES: usize = 2 * 1024 * 1024;

/// A typed line split into a command name (without its slash) and its arguments (trimmed);
/// `None` when the line does not start with `/` followed by a name (a line that starts with
/// a space is never a command).
pub fn split_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (name, args) = rest.split_at(end);
    (!name.is_empty()).then(|| (name, args.trim()))
}

/// The arguments' words: split at whitespace, a quoted stretch (`"a b"`, `'a b'`) one word.
pub fn words(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in args.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(current);
    }
    out
}

/// `body` with `$ARGUMENTS` and `$1` … `$9` replaced by `args` and its words.
pub fn expand(body: &str, args: &str) -> String {
    let words = words(args);
    let mut out = String::with_capacity(body.len() + args.len());
    let mut named = false;
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        if out.len() > MAX_EXPANDED_BYTES {
            break;
        }
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix(ARGUMENTS) {
            out.push_str(args);
            named = true;
            rest = tail;
            continue;
        }
        let digit = after[1..].chars().next().and_then(|c| c.to_digit(10));
        match digit {
            Some(n @ 1..=9) => {
                let index = usize::try_from(n - 1).unwrap_or(usize::MAX);
                out.push_str(words.get(index).map_or("", String::as_str));
                named = true;
                rest = &after[2..];
            }
            _ => {
                out.push('$');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    if !named && !args.is_empty() {
        out = format!("{}\n\nARGUMENTS: {args}", out.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_splits_into_name_and_arguments() {
        assert_eq!(split_invocation("/review  a b "), Some(("review", "a b")));
        assert_eq!(split_invocation("/fe:build"), Some(("fe:build", "")));
        assert_eq!(split_invocation(" /fe:build"), None);
        assert_eq!(split_invocation("/ x"), None);
        assert_eq!(split_invocation("review"), None);
    }

    #[test]
    fn arguments_and_positions_are_replaced_and_missing_ones_are_empty() {
        let body = "Fix issue $1 in $2 ($3). All: $ARGUMENTS. Cost $$5 and $0 and $x.";
        assert_eq!(
            expand(body, "42 \"src/a b.rs\""),
            "Fix issue 42 in src/a b.rs (). All: 42 \"src/a b.rs\". Cost $ and $0 and $x."
        );
        assert_eq!(expand("$1-$9-$ARGUMENTS", ""), "--");
        assert_eq!(words("a 'b c' \"d\"e  f"), vec!["a", "b c", "de", "f"]);
        let many = "$ARGUMENTS".repeat(1000);
        let long = "x".repeat(10_000);
        let bounded = expand(&many, &long);
        assert!(
            bounded.len() < MAX_EXPANDED_BYTES + 20_000,
            "{}",
            bounded.len()
        );
        assert!(bounded.ends_with("$ARGUMENTS"));
    }

    #[test]
    fn a_body_without_placeholders_gets_the_arguments_appended() {
        assert_eq!(
            expand("Review it.\n", "the diff"),
            "Review it.\n\nARGUMENTS: the diff"
        );
        assert_eq!(expand("Review it.\n", ""), "Review it.\n");
    }
}
