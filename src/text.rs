//! Cutting text for display, with one rule for the ellipsis: a cut text ends in `…`, and
//! what was kept is always whole characters. Counts are in characters, not bytes (the plan
//! renderer's byte budget, fixed by the seed, has its own cut in `plan`).

use std::borrow::Cow;

/// The ellipsis that marks a cut.
pub const ELLIPSIS: char = '…';

/// `text` with at most `max` characters kept; when it was longer, `…` follows them.
pub fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((cut, _)) => Cow::Owned(format!("{}{ELLIPSIS}", &text[..cut])),
        None => Cow::Borrowed(text),
    }
}

/// `text` in at most `max` characters in all: when it is longer, its first `max - 1`
/// characters and `…` (for columns and titles with a fixed width).
pub fn fit(text: &str, max: usize) -> Cow<'_, str> {
    if text.chars().nth(max).is_none() {
        return Cow::Borrowed(text);
    }
    let keep = text
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(text.len(), |(at, _)| at);
    Cow::Owned(format!("{}{ELLIPSIS}", &text[..keep]))
}

/// `text` when it has at most `limit` bytes; else its first three quarters and last
/// quarter of `limit` bytes (cut on character boundaries) around a line saying how much was
/// left out — for 4096 bytes the seed's 3072 + 1024 (SPEC §4).
pub fn head_and_tail(text: &str, limit: usize) -> Cow<'_, str> {
    if text.len() <= limit {
        return Cow::Borrowed(text);
    }
    let head_end = floor_char_boundary(text, limit / 4 * 3);
    let tail_start = ceil_char_boundary(text, text.len() - limit / 4);
    let omitted = tail_start - head_end;
    Cow::Owned(format!(
        "{}\n\n... [{omitted} bytes omitted — output was {} bytes total] ...\n\n{}",
        &text[..head_end],
        text.len(),
        &text[tail_start..]
    ))
}

/// The largest char boundary at or below `i`.
pub fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary at or above `i`.
pub fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

/// `text` without control characters a terminal would act on (escape sequences, bells,
/// carriage returns); newlines and tabs stay. For model and outside text shown on a terminal.
pub fn strip_controls(text: &str) -> String {
    text.chars()
        .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
        .collect()
}

/// Foreign text (a model's, a repository's, a web page's) as a terminal should show it: every
/// control character a terminal would act on drawn as its picture — ESC as `␛`, a carriage
/// return as `␍`, a bell as `␇`, DEL as `␡`; the C1 controls and the bidirectional
/// overrides as `<U+009B>` — so what the user reads is what is stored. Tabs stay, and
/// newlines when `lines` is true (a body); otherwise a newline is `␊` (one row of a listing).
/// This is the crate's one escape for control bytes (no other `escape_control`): use it
/// wherever text from a model, a file name or a project file reaches a terminal.
pub fn visible(text: &str, lines: bool) -> Cow<'_, str> {
    let shown_as_is = |c: char| (c == '\n' && lines) || c == '\t' || !needs_picture(c);
    if text.chars().all(shown_as_is) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if shown_as_is(c) => out.push(c),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('\u{2421}'),
            c => out.push_str(&format!("<U+{:04X}>", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Runs of more blanks than this are shown as a count ([`visible_in_full`]).
const MAX_SHOWN_BLANKS: usize = 4;

/// All of `text` on one row as [`visible`] shows it (newlines as `␊`), with every run of
/// more than four blanks (spaces, tabs, other Unicode spaces) shown as `⟨N blanks⟩`: for
/// what a user approves (a whole shell command), where a second line or a part pushed far
/// to the right must not hide.
pub fn visible_in_full(text: &str) -> String {
    let shown = visible(text, false);
    let mut out = String::with_capacity(shown.len());
    let mut blanks = String::new();
    for c in shown.chars() {
        if c.is_whitespace() {
            blanks.push(c);
            continue;
        }
        push_blanks(&mut out, &mut blanks);
        out.push(c);
    }
    push_blanks(&mut out, &mut blanks);
    out
}

/// Moves a run of blanks to `out`: as is when short, else as its count.
fn push_blanks(out: &mut String, blanks: &mut String) {
    let count = blanks.chars().count();
    if count > MAX_SHOWN_BLANKS {
        out.push_str(&format!(" ⟨{count} blanks⟩ "));
    } else {
        out.push_str(blanks);
    }
    blanks.clear();
}

/// Control characters and the invisible ones that reorder text.
fn needs_picture(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The first line of `text` with at most `max` characters kept; `…` marks a cut or lines
/// left out.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out = truncate(line, max).into_owned();
    if text.lines().nth(1).is_some() && !out.ends_with(ELLIPSIS) {
        out.push(ELLIPSIS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_keeps_short_text_and_cuts_long_text_on_char_boundaries() {
        let limit = crate::tools::MAX_TOOL_OUTPUT_BYTES;
        assert_eq!(head_and_tail("abc", limit), "abc");
        let exact = "x".repeat(limit);
        assert_eq!(head_and_tail(&exact, limit).len(), limit);
        let text = format!(
            "{}{}{}",
            "h".repeat(3072),
            "m".repeat(5000),
            "t".repeat(1024)
        );
        let out = head_and_tail(&text, limit);
        assert!(out.starts_with(&"h".repeat(3072)));
        assert!(out.ends_with(&"t".repeat(1024)));
        assert!(out.contains("... [5000 bytes omitted — output was 9096 bytes total] ..."));
        let wide = "é".repeat(5000);
        let out = head_and_tail(&wide, limit);
        assert!(out.len() < wide.len());
        assert!(out.starts_with('é') && out.ends_with('é'));
    }

    #[test]
    fn one_rule_for_the_ellipsis() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc…");
        assert_eq!(truncate("ééé🙂", 2), "éé…");
        assert_eq!(fit("abcd", 4), "abcd");
        assert_eq!(fit("abcde", 4), "abc…");
        assert_eq!(fit("🙂🙂🙂", 2), "🙂…");
        assert_eq!(first_line("one\ntwo", 10), "one…");
        assert_eq!(first_line("abcdef", 3), "abc…");
        assert_eq!(first_line("abcdef\nmore", 3), "abc…");
        assert_eq!(first_line("", 3), "");
        assert!(matches!(truncate("short", 10), Cow::Borrowed(_)));
    }

    #[test]
    fn a_whole_command_shows_its_other_lines_and_far_parts() {
        assert_eq!(visible_in_full("cargo test --quiet"), "cargo test --quiet");
        assert_eq!(
            visible_in_full("cargo test\npython3 -c 'x'"),
            "cargo test\u{240a}python3 -c 'x'"
        );
        let spaced = format!("cargo test{}; python3 x", " ".repeat(120));
        assert_eq!(
            visible_in_full(&spaced),
            "cargo test ⟨120 blanks⟩ ; python3 x"
        );
        assert_eq!(visible_in_full("a\t\t\t\t\t\tb"), "a ⟨6 blanks⟩ b");
        assert_eq!(visible_in_full("a    b"), "a    b");
        assert_eq!(
            visible_in_full("echo \u{1b}[8mhidden\r"),
            "echo \u{241b}[8mhidden\u{240d}"
        );
    }

    #[test]
    fn foreign_controls_are_shown_not_acted_on() {
        assert_eq!(visible("plain text\tand tab", false), "plain text\tand tab");
        assert!(matches!(visible("plain", false), Cow::Borrowed(_)));
        assert_eq!(
            visible("ok\u{1b}]0;X\u{7}\r\u{1b}[2Kevil", false),
            "ok\u{241b}]0;X\u{2407}\u{240d}\u{241b}[2Kevil"
        );
        assert_eq!(visible("a\nb", false), "a\u{240a}b");
        assert_eq!(visible("a\nb", true), "a\nb");
        assert_eq!(
            visible("x\u{9b}31m\u{202e}y\u{7f}", true),
            "x<U+009B>31m<U+202E>y\u{2421}"
        );
    }
}
