//! Shortening attached texts (`--ctx` files, recalled episodes: the injections whose text is
//! wrapped untrusted) when a request does not fit the context window: each wrapped body keeps
//! its beginning, and a marker after its close tag tells the model how much is left out. The
//! user's own words are never shortened; they are not in these messages. (The project
//! instructions from `AGENTS.md` are not wrapped and are dropped whole, as before.)

use std::ops::Range;

use crate::untrusted::{CLOSE_TAG_PREFIX, OPEN_TAG_PREFIX};

/// Start of the marker that follows a shortened attachment.
pub const SHORTENED_PREFIX: &str =
    "[odek shortened the attachment above to fit the model's context window:";

/// One wrapped body in a text.
struct Block {
    /// Where the body starts and ends (up to the close tag).
    body: Range<usize>,
    /// The close tag.
    close: String,
    /// Where the block ends, after its close tag and any earlier marker.
    end: usize,
    /// The body's length before any shortening.
    original: usize,
}

/// Bytes a shortened block gains (the marker, at most).
pub const MARKER_BYTES: usize = SHORTENED_PREFIX.len() + 100;

/// How many wrapped bodies `text` has, and their bytes.
pub fn measure(text: &str) -> (usize, usize) {
    let blocks = blocks(text);
    (blocks.len(), blocks.iter().map(|b| b.body.len()).sum())
}

/// True when `text` has a wrapped body (stops at the first).
pub fn has_body(text: &str) -> bool {
    next_block(text, 0).is_some()
}

/// `text` with every wrapped body cut to `fraction` of its length (at a line end when one is
/// near), each followed by the marker; `None` when no body got shorter. Also returns how many
/// bodies were shortened.
pub fn shorten(text: &str, fraction: f64) -> Option<(String, usize)> {
    let fraction = fraction.clamp(0.0, 1.0);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut shortened = 0;
    for block in blocks(text) {
        let body = &text[block.body.clone()];
        let kept = cut(body, (body.len() as f64 * fraction) as usize);
        // The newline before the close tag is added back: it must still be shorter.
        let newline = !kept.is_empty() && !kept.ends_with('\n');
        if kept.len() + usize::from(newline) >= body.len() {
            continue;
        }
        shortened += 1;
        out.push_str(&text[at..block.body.start]);
        out.push_str(kept);
        if newline {
            out.push('\n');
        }
        out.push_str(&block.close);
        out.push('\n');
        out.push_str(&marker(kept.len(), block.original));
        at = block.end;
    }
    if shortened == 0 {
        return None;
    }
    out.push_str(&text[at..]);
    Some((out, shortened))
}

fn marker(kept: usize, original: usize) -> String {
    format!(
        "{SHORTENED_PREFIX} the first {kept} of its {original} bytes are kept; ask the user for the rest if it matters]"
    )
}

/// The first at most `max` bytes of `body`, ended at a line break in its last fifth when there
/// is one, never inside a character.
fn cut(body: &str, max: usize) -> &str {
    if max >= body.len() {
        return body;
    }
    let head = &body[..crate::text::floor_char_boundary(body, max)];
    match head.rfind('\n') {
        Some(i) if i + 1 >= head.len() * 4 / 5 => &head[..=i],
        _ => head,
    }
}

fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(block) = next_block(text, from) {
        from = block.end;
        found.push(block);
    }
    found
}

/// The first well-formed wrapper at or after `from`: an open tag with a hex nonce and a
/// source, then the close tag with the same nonce. An open tag without its close is
/// skipped, not the end of the scan.
fn next_block(text: &str, mut from: usize) -> Option<Block> {
    loop {
        let open = from + text[from..].find(OPEN_TAG_PREFIX)?;
        from = open + OPEN_TAG_PREFIX.len();
        if let Some(block) = block_at(text, open) {
            return Some(block);
        }
    }
}

fn block_at(text: &str, open: usize) -> Option<Block> {
    let after_prefix = open + OPEN_TAG_PREFIX.len();
    let line_end = after_prefix + text[after_prefix..].find('\n')?;
    let (nonce, attrs) = text[after_prefix..line_end].split_once(' ')?;
    let well_formed = !nonce.is_empty()
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
        && attrs.starts_with("source=\"")
        && attrs.ends_with("\">");
    if !well_formed {
        return None;
    }
    let body_start = line_end + 1;
    let close = format!("{CLOSE_TAG_PREFIX}{nonce}>");
    let body_end = body_start + text[body_start..].find(&close)?;
    let mut end = body_end + close.len();
    let mut original = body_end - body_start;
    if let Some((length, marker_len)) = earlier_marker(&text[end..]) {
        original = length;
        end += marker_len;
    }
    Some(Block {
        body: body_start..body_end,
        close,
        end,
        original,
    })
}

/// The original length a marker right after a close tag names, and the marker's length
/// (with its leading newline).
fn earlier_marker(rest: &str) -> Option<(usize, usize)> {
    let marker = rest.strip_prefix('\n')?.strip_prefix(SHORTENED_PREFIX)?;
    let close = marker.find(']')?;
    let original = marker[..close]
        .split_once(" of its ")?
        .1
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    Some((original, 1 + SHORTENED_PREFIX.len() + close + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::untrusted::{unwrap, wrap};

    fn attached(body: &str) -> String {
        format!(
            "[Injected context: files]\n\n--- a.txt ---\n{}\n--- end a.txt ---\n",
            wrap("ctx:a.txt", body)
        )
    }

    #[test]
    fn a_body_keeps_its_beginning_and_says_how_much() {
        let body: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        let text = attached(&body);
        let (short, n) = shorten(&text, 0.25).expect("shortened");
        assert_eq!(n, 1);
        assert!(short.starts_with("[Injected context: files]\n\n--- a.txt ---\n"));
        assert!(
            short.ends_with("\n--- end a.txt ---\n"),
            "what follows the block stays"
        );
        let wrapped = &short[short.find(OPEN_TAG_PREFIX).unwrap()..short.find("\n[odek").unwrap()];
        let inner = unwrap(wrapped).expect("still one well-formed wrapper");
        assert!(inner.body.starts_with("line 000\n") && inner.body.ends_with("line 024"));
        assert!(
            short.contains("the first 225 of its 900 bytes are kept"),
            "{short}"
        );
        assert_eq!(measure(&short), (1, 225));
    }

    #[test]
    fn shortening_again_keeps_the_original_size_and_one_marker() {
        let text = attached(&"x".repeat(1000));
        // The wrapper's own newline before the close tag counts as the body's.
        let (once, _) = shorten(&text, 0.5).unwrap();
        let (twice, _) = shorten(&once, 0.5).unwrap();
        assert_eq!(twice.matches(SHORTENED_PREFIX).count(), 1);
        assert!(twice.contains("the first 250 of its 1001 bytes"), "{twice}");
        let (empty, _) = shorten(&twice, 0.0).unwrap();
        assert!(empty.contains("the first 0 of its 1001 bytes"));
        assert_eq!(shorten(&empty, 0.0), None, "nothing left to shorten");
    }

    #[test]
    fn every_block_and_never_inside_a_character() {
        let text = format!(
            "{}\n{}",
            wrap("ctx:a", &"é".repeat(300)),
            wrap("ctx:b", &"z".repeat(10))
        );
        let (short, n) = shorten(&text, 0.5).unwrap();
        assert_eq!(n, 2);
        assert!(short.contains("the first 300 of its 601 bytes"));
        assert!(short.contains("the first 5 of its 11 bytes"));
        assert_eq!(shorten("no wrapper here", 0.1), None);
        assert_eq!(shorten(&text, 1.0), None);
    }

    #[test]
    fn a_cut_that_only_drops_the_last_newline_is_no_change() {
        assert_eq!(shorten(&wrap("ctx:a", "x\n"), 0.5), None);
        assert!(shorten(&wrap("ctx:a", "xy\n"), 0.5).is_some());
    }

    #[test]
    fn forged_or_unclosed_tags_are_not_blocks_and_do_not_stop_the_scan() {
        let text = format!(
            "{OPEN_TAG_PREFIX}zz source=\"x\">\nnot hex\n{OPEN_TAG_PREFIX}00ff source=\"y\">\nunclosed\n{}",
            wrap("ctx:b", &"b".repeat(100))
        );
        assert_eq!(measure(&text), (1, 101));
        assert!(has_body(&text));
        assert!(!has_body(
            "[Injected context: project instructions]\n\nplain text"
        ));
    }
}
