//! A nesting cap for HTML before it is converted: elements deeper than [`MAX_DEPTH`] lose
//! their tags (their text stays, in the element at the cap), so a page of thousands of
//! nested elements cannot exhaust the converter's stack or its time. A light scan of tags,
//! not a parser: comments, doctypes, quoted attribute values and the text of `script`,
//! `style` and similar elements are passed over, and elements that never hold content
//! (`br`, `img`, …) or close themselves do not count.

use std::borrow::Cow;

/// The deepest element kept as an element.
pub const MAX_DEPTH: usize = 256;

/// Elements without content.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "keygen",
];

/// Elements whose content is text up to their end tag.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "plaintext",
];

/// One piece of the page.
enum Piece {
    /// Text, or markup passed over as it is (a comment, a doctype).
    Other,
    /// A start tag that opens an element.
    Open,
    /// An end tag.
    Close,
}

/// `html` with every element beyond [`MAX_DEPTH`] unwrapped; borrowed when none is.
pub fn flatten_deep(html: &str) -> Cow<'_, str> {
    flatten_beyond(html, MAX_DEPTH)
}

fn flatten_beyond(html: &str, max: usize) -> Cow<'_, str> {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    scan(html, |piece, _| {
        step(&mut depth, &piece);
        deepest = deepest.max(depth);
    });
    if deepest <= max {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut depth = 0usize;
    scan(html, |piece, text| {
        let kept = match piece {
            Piece::Other => true,
            Piece::Open => depth < max,
            Piece::Close => depth <= max,
        };
        step(&mut depth, &piece);
        if kept {
            out.push_str(text);
        }
    });
    Cow::Owned(out)
}

fn step(depth: &mut usize, piece: &Piece) {
    match piece {
        Piece::Open => *depth += 1,
        Piece::Close => *depth = depth.saturating_sub(1),
        Piece::Other => {}
    }
}

/// Calls `each` with every piece of `html` and its text, in order; the texts put together
/// are `html`.
fn scan(html: &str, mut each: impl FnMut(Piece, &str)) {
    let bytes = html.as_bytes();
    let mut at = 0;
    let mut text_from = 0;
    while let Some(offset) = memchr(b'<', &bytes[at..]) {
        let start = at + offset;
        let Some((piece, end, raw)) = markup_at(html, start) else {
            at = start + 1;
            continue;
        };
        if text_from < start {
            each(Piece::Other, &html[text_from..start]);
        }
        each(piece, &html[start..end]);
        at = end;
        text_from = end;
        if let Some(name) = raw {
            // The element's text runs to its end tag, whatever it holds.
            let close = find_ascii_ci(&bytes[at..], format!("</{name}").as_bytes())
                .map_or(bytes.len(), |i| at + i);
            if text_from < close {
                each(Piece::Other, &html[text_from..close]);
            }
            at = close;
            text_from = close;
        }
    }
    if text_from < html.len() {
        each(Piece::Other, &html[text_from..]);
    }
}

/// The markup starting at `start` (a `<`): its kind, where it ends, and for a raw-text
/// element's start tag its name. `None` when the `<` is text.
fn markup_at(html: &str, start: usize) -> Option<(Piece, usize, Option<&'static str>)> {
    let bytes = html.as_bytes();
    let rest = &bytes[start + 1..];
    if rest.starts_with(b"!--") {
        let end = find(rest, b"-->").map_or(bytes.len(), |i| start + 1 + i + 3);
        return Some((Piece::Other, end, None));
    }
    let (closing, name_from) = match rest.first()? {
        b'/' => (true, start + 2),
        b'!' | b'?' => return Some((Piece::Other, tag_end(bytes, start + 1), None)),
        c if c.is_ascii_alphabetic() => (false, start + 1),
        _ => return None,
    };
    let name_len = bytes[name_from..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'-')
        .count();
    if name_len == 0 {
        return None;
    }
    let name = html[name_from..name_from + name_len].to_ascii_lowercase();
    let end = tag_end(bytes, name_from + name_len);
    if closing {
        return Some((Piece::Close, end, None));
    }
    let self_closing = end >= 2 && bytes[end - 2] == b'/';
    if self_closing || VOID.contains(&name.as_str()) {
        return Some((Piece::Other, end, None));
    }
    let raw = RAW_TEXT.iter().find(|r| **r == name).copied();
    Some((Piece::Open, end, raw))
}

/// Just past the `>` that ends a tag begun before `from` (quoted values passed over).
fn tag_end(bytes: &[u8], from: usize) -> usize {
    let mut quote = None;
    for (i, &c) in bytes.iter().enumerate().skip(from) {
        match (quote, c) {
            (None, b'"' | b'\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, b'>') => return i + 1,
            _ => {}
        }
    }
    bytes.len()
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|c| *c == needle)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn find_ascii_ci(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_within_the_cap_is_left_as_it_is() {
        let html = r#"<div class="a>b"><p>x < y</p><br><img src=x /><!-- <div> --><script>if (a<b) {}</script></div>"#;
        assert!(matches!(flatten_beyond(html, 2), Cow::Borrowed(_)));
    }

    #[test]
    fn elements_beyond_the_cap_lose_their_tags_and_keep_their_text() {
        let html = "<div><div><div><b>deep</b> text</div></div></div><p>after</p>";
        assert_eq!(
            flatten_beyond(html, 2),
            "<div><div>deep text</div></div><p>after</p>"
        );
    }

    #[test]
    fn fifty_thousand_nested_elements_become_a_page_at_the_cap() {
        let depth = 50_000;
        let html = format!("{}deep{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let flat = flatten_deep(&html);
        assert_eq!(flat.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(flat.matches("</div>").count(), MAX_DEPTH);
        assert!(flat.contains("deep"));
    }
}
