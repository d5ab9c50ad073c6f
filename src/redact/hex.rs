//! A known secret's hex written with separators or line breaks: `xxd -p` (60 digits a line),
//! `hexdump -C`/`od`-style bytes between spaces, `aa:bb:cc`, `0x61, 0x62`, `\x61\x62`.
//! The plain forms (hex without separators) are found by the known-value matcher; this pass
//! reads each run of hex digits and separators as its digits alone and looks for the
//! secrets' hex there, then maps a match back to the text it came from (separators included).

use std::collections::BTreeSet;
use std::ops::Range;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

/// The most separator bytes allowed between two digits of one run (`, 0x` is four).
const MAX_GAP: usize = 4;

/// Finds the registered values' hex across separators.
#[derive(Clone)]
pub(super) struct SeparatedHex {
    /// Lower-case hex of every registered value.
    needles: AhoCorasick,
    /// The shortest needle: a run with fewer digits cannot hold a secret.
    shortest: usize,
}

impl SeparatedHex {
    /// A matcher for the hex of `values`; `None` when there are none.
    pub(super) fn build<'a>(values: impl IntoIterator<Item = &'a String>) -> Option<Self> {
        let needles: BTreeSet<Vec<u8>> = values
            .into_iter()
            .map(|v| crate::util::hex::encode(v.as_bytes()).into_bytes())
            .collect();
        let shortest = needles.iter().map(Vec::len).min()?;
        let needles = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&needles)
            .ok()?;
        Some(SeparatedHex { needles, shortest })
    }

    /// Appends the byte ranges of `text` that spell a registered value's hex with separators.
    pub(super) fn spans(&self, text: &str, out: &mut Vec<Range<usize>>) {
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut run = Run::default();
        while at < bytes.len() {
            if !bytes[at].is_ascii_hexdigit() {
                at += 1;
                continue;
            }
            at = run.read(bytes, at);
            if run.separated && run.digits.len() >= self.shortest {
                for found in self.needles.find_iter(&run.digits) {
                    let start = run.positions[found.start()];
                    let end = run.positions[found.end() - 1] + 1;
                    out.push(start..end);
                }
            }
        }
    }
}

/// One run of hex digits and separators, as its digits and where each came from.
#[derive(Default)]
struct Run {
    digits: Vec<u8>,
    positions: Vec<usize>,
    /// True when the run had a separator between digits (else the plain matcher covers it).
    separated: bool,
}

impl Run {
    /// Reads the run starting at the hex digit at `start`; returns where it ended.
    fn read(&mut self, bytes: &[u8], start: usize) -> usize {
        self.digits.clear();
        self.positions.clear();
        self.separated = false;
        let mut at = start;
        while at < bytes.len() {
            if let Some(prefix) = hex_prefix_len(bytes, at) {
                self.separated = true;
                at += prefix;
                continue;
            }
            let byte = bytes[at];
            if byte.is_ascii_hexdigit() {
                self.digits.push(byte.to_ascii_lowercase());
                self.positions.push(at);
                at += 1;
                continue;
            }
            let gap = bytes[at..]
                .iter()
                .take(MAX_GAP + 1)
                .take_while(|b| is_separator(**b))
                .count();
            let resumes = bytes.get(at + gap).is_some_and(|b| {
                b.is_ascii_hexdigit() || hex_prefix_len(bytes, at + gap).is_some()
            });
            if gap == 0 || gap > MAX_GAP || !resumes {
                return at.max(start + 1);
            }
            self.separated = true;
            at += gap;
        }
        at
    }
}

/// The length of a `0x` or `\x` written before a digit at `at`, if there is one there.
fn hex_prefix_len(bytes: &[u8], at: usize) -> Option<usize> {
    let first = *bytes.get(at)?;
    let second = *bytes.get(at + 1)?;
    let next = *bytes.get(at + 2)?;
    ((first == b'0' || first == b'\\')
        && (second == b'x' || second == b'X')
        && next.is_ascii_hexdigit())
    .then_some(2)
}

fn is_separator(byte: u8) -> bool {
    matches!(
        byte,
        b' ' | b'\t' | b'\r' | b'\n' | b':' | b'-' | b',' | b'.' | b'|'
    )
}

/// True when `text` ends in what may be a registered value's hex being written out: its
/// last words are all hex digits, separators, `0x` / `\x` prefixes and the brackets and
/// quotes around them (`{0x6f, 0x64,`, `6f 64 65`, `6f:64`), with [`RUN_DIGITS`] digits or
/// more between them. Prose breaks the run at its first other word.
pub(super) fn ends_in_hex_run(text: &str) -> bool {
    let mut digits = 0;
    for word in text.split_whitespace().rev() {
        if !word.bytes().all(may_be_in_hex_run) {
            return false;
        }
        digits += word.bytes().filter(u8::is_ascii_hexdigit).count();
        if digits >= RUN_DIGITS {
            return true;
        }
    }
    false
}

/// Hex digits that make a trailing run worth holding back ([`ends_in_hex_run`]): one byte.
const RUN_DIGITS: usize = 2;

fn may_be_in_hex_run(byte: u8) -> bool {
    byte.is_ascii_hexdigit()
        || is_separator(byte)
        || matches!(
            byte,
            b'x' | b'X'
                | b'\\'
                | b'{'
                | b'}'
                | b'['
                | b']'
                | b'('
                | b')'
                | b'"'
                | b'\''
                | b'`'
                | b';'
        )
}
