//! Small text helpers shared by validation, rendering and parsing.

/// The separator between a step's title and its note in a rendered line (space, em dash,
/// space). Normalisation removes em dashes from titles and notes so it stays unambiguous.
pub(crate) const NOTE_SEPARATOR: &str = " \u{2014} ";

/// Flattens model text to one render line: CRLF, LF and CR become a space, the em dash
/// becomes a hyphen, and surrounding whitespace is trimmed.
pub fn normalize_text(raw: &str) -> String {
    let flattened = raw
        .replace("\r\n", " ")
        .replace(['\r', '\n'], " ")
        .replace('\u{2014}', "-");
    flattened.trim().to_owned()
}

/// True when `id` is a usable step token: no whitespace and no square brackets.
/// (Length is checked separately so the error can say by how much it overflowed.)
pub(crate) fn is_token(id: &str) -> bool {
    !id.chars()
        .any(|c| c.is_whitespace() || c == '[' || c == ']')
}

/// Quotes `s` the way Go's `%q` does: double quotes, backslash escapes for `"` and `\`,
/// C-style escapes for control characters, `\u` escapes for invisible format characters.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_go_escaped(&mut out, c);
    }
    out.push('"');
    out
}

fn push_go_escaped(out: &mut String, c: char) {
    match c {
        '"' => out.push_str("\\\""),
        '\\' => out.push_str("\\\\"),
        '\u{07}' => out.push_str("\\a"),
        '\u{08}' => out.push_str("\\b"),
        '\u{0C}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{0B}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c == '\u{7F}' => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if is_go_printable(c) => out.push(c),
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Approximates Go's `strconv.IsPrint`: the ASCII space is printable, other whitespace,
/// control characters and the common invisible format characters are not.
fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(
        c,
        '\u{AD}'
            | '\u{600}'..='\u{605}'
            | '\u{61C}'
            | '\u{6DD}'
            | '\u{70F}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E000}'..='\u{F8FF}'
            | '\u{F0000}'..='\u{10FFFF}'
    )
}

/// Longest prefix of `s` that is at most `max_bytes` long and ends on a char boundary.
pub(crate) fn cut_at_char_boundary(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// Reads 1–9 ASCII digits (no sign, no spaces) as a number.
pub(crate) fn parse_small_number(token: &str) -> Option<u64> {
    if token.is_empty() || token.len() > 9 || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_flattens_lines_and_dashes() {
        assert_eq!(normalize_text("  a\r\nb\nc\rd  "), "a b c d");
        assert_eq!(normalize_text("x \u{2014} y"), "x - y");
        assert_eq!(normalize_text("\n\u{2014}\n"), "-");
        assert_eq!(normalize_text(" \r\n\t "), "");
        // Other dashes are left alone.
        assert_eq!(normalize_text("a \u{2013} b"), "a \u{2013} b");
    }

    #[test]
    fn token_rules() {
        assert!(is_token("s1"));
        assert!(is_token("step-1.a_b:c"));
        assert!(is_token("\u{1F600}"));
        for bad in [
            "a b",
            "a\tb",
            "[x",
            "x]",
            "a\u{00A0}b",
            "a\u{3000}b",
            "a\nb",
        ] {
            assert!(!is_token(bad), "{bad:?}");
        }
    }

    #[test]
    fn quote_matches_go() {
        assert_eq!(go_quote("s1"), "\"s1\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("a\nb\tc\u{1}"), "\"a\\nb\\tc\\x01\"");
        assert_eq!(go_quote("é\u{1F600}"), "\"é\u{1F600}\"");
        assert_eq!(go_quote("a\u{00A0}b\u{200B}"), "\"a\\u00a0b\\u200b\"");
        assert_eq!(go_quote(""), "\"\"");
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut_at_char_boundary("héllo", 2), "h");
        assert_eq!(cut_at_char_boundary("héllo", 3), "hé");
        assert_eq!(cut_at_char_boundary("abc", 10), "abc");
        assert_eq!(cut_at_char_boundary("\u{1F600}", 3), "");
    }

    #[test]
    fn small_numbers() {
        assert_eq!(parse_small_number("0"), Some(0));
        assert_eq!(parse_small_number("007"), Some(7));
        assert_eq!(parse_small_number("999999999"), Some(999_999_999));
        for bad in ["", "1000000000", "+1", "-1", " 1", "1 ", "1a", "\u{0661}"] {
            assert_eq!(parse_small_number(bad), None, "{bad:?}");
        }
    }
}
