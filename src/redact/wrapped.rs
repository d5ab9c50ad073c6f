//! Encoded text wrapped into lines: `base64` and `base32` print 76 characters a line,
//! `openssl base64` 64, PEM-style tools 64 or 76. A registered value's encoded form then
//! often spans a line break, where the known-value matcher (which looks for each form as one
//! word) cannot see it. This pass finds blocks of wrapped lines, joins each block's lines,
//! runs the matcher over the joined text and maps every match back to the text it came
//! from, line breaks included. (Hex written with line breaks, `xxd -p`, is `hex.rs`'s.)
//!
//! A block is two or more whole lines made only of base64/base32 characters, all but the
//! last exactly as long as the first (the wrap width, at least [`MIN_WIDTH`]) and the last
//! no longer: how every encoder wraps, and what prose and code almost never look like.

use std::ops::Range;

/// The narrowest wrap width looked at: encoders wrap at 60 or more.
const MIN_WIDTH: usize = 16;

/// A line of the text: where its characters are (without `\n` or a `\r` before it).
#[derive(Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
}

impl Line {
    fn len(&self) -> usize {
        self.end - self.start
    }
}

/// Calls `find` with each block of wrapped encoded lines, joined, and appends to `out` the
/// ranges of `text` (line breaks included) of what `find` reports there that spans a line
/// break (the rest the plain matcher has found already).
pub(super) fn spans(
    text: &str,
    mut find: impl FnMut(&str, &mut dyn FnMut(Range<usize>)),
    out: &mut Vec<Range<usize>>,
) {
    if memchr::memchr(b'\n', text.as_bytes()).is_none() {
        return;
    }
    let mut block: Vec<Line> = Vec::new();
    for line in lines(text) {
        if !is_encoded(&text[line.start..line.end]) {
            search_block(text, &block, &mut find, out);
            block.clear();
            continue;
        }
        let extends = match (block.first(), block.last()) {
            (Some(first), Some(last)) => last.len() == first.len() && line.len() <= first.len(),
            _ => false,
        };
        if !extends {
            search_block(text, &block, &mut find, out);
            block.clear();
        }
        block.push(line);
    }
    search_block(text, &block, &mut find, out);
}

/// True when `text` ends in a line that may be part of a wrapped block still arriving: its
/// last line (or the one before a final line break) is [`MIN_WIDTH`] or more encoded
/// characters. See [`super::Redactor::may_begin_secret`].
pub(super) fn ends_in_encoded_line(text: &str) -> bool {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    let last = text.rsplit('\n').next().unwrap_or(text);
    last.len() >= MIN_WIDTH && is_encoded(last)
}

fn search_block(
    text: &str,
    block: &[Line],
    find: &mut impl FnMut(&str, &mut dyn FnMut(Range<usize>)),
    out: &mut Vec<Range<usize>>,
) {
    let Some(first) = block.first() else {
        return;
    };
    if block.len() < 2 || first.len() < MIN_WIDTH {
        return;
    }
    let joined: String = block.iter().map(|l| &text[l.start..l.end]).collect();
    let width = first.len();
    // Joined offset → text offset: line i starts at block[i].start.
    let place = |offset: usize| {
        let line = &block[(offset / width).min(block.len() - 1)];
        line.start + (offset - (offset / width).min(block.len() - 1) * width)
    };
    find(&joined, &mut |found: Range<usize>| {
        if found.is_empty() || found.start / width == (found.end - 1) / width {
            return;
        }
        out.push(place(found.start)..place(found.end - 1) + 1);
    });
}

/// The text's lines, without their line breaks (`\n`, `\r\n`).
fn lines(text: &str) -> impl Iterator<Item = Line> + '_ {
    let mut start = 0;
    text.split('\n').map(move |line| {
        let begin = start;
        start += line.len() + 1;
        let trimmed = line.strip_suffix('\r').unwrap_or(line);
        Line {
            start: begin,
            end: begin + trimmed.len(),
        }
    })
}

/// Characters of base64 (standard and URL-safe, with padding) and base32 (both alphabets).
fn is_encoded(line: &str) -> bool {
    !line.is_empty()
        && line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str, needle: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        spans(
            text,
            |joined, report| {
                if let Some(at) = joined.find(needle) {
                    report(at..at + needle.len());
                }
            },
            &mut out,
        );
        out
    }

    #[test]
    fn a_form_across_a_line_break_is_found_and_mapped_back() {
        let line = "A".repeat(20);
        let text = format!("out:\n{line}BCDE\nFGHIJ\nrest\n");
        let spans = found(&text, "BCDEFG");
        assert_eq!(spans.len(), 1);
        assert_eq!(&text[spans[0].clone()], "BCDE\nFG");
    }

    #[test]
    fn lines_of_other_widths_and_prose_are_not_blocks() {
        assert!(found("short\nlines\n", "shortlines").is_empty());
        let text = format!("{}\n{}\n", "A".repeat(20), "B".repeat(30));
        assert!(found(&text, "AB").is_empty(), "a longer last line");
        let text = format!("{} x\n{}\n", "A".repeat(20), "B".repeat(10));
        assert!(found(&text, "AB").is_empty(), "a line with a space");
    }

    #[test]
    fn crlf_line_breaks_are_left_out() {
        let text = format!("{}BC\r\nDE\r\n", "A".repeat(18));
        let spans = found(&text, "BCDE");
        assert_eq!(&text[spans[0].clone()], "BC\r\nDE");
    }

    #[test]
    fn a_trailing_encoded_line_may_continue() {
        assert!(ends_in_encoded_line(&format!("x\n{}\n", "Q".repeat(76))));
        assert!(!ends_in_encoded_line("a sentence of prose\n"));
        assert!(!ends_in_encoded_line("short"));
    }
}
