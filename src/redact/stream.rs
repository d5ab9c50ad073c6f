//! Redaction of text that arrives in pieces (the model's streamed answer).
//!
//! Redacting each piece on its own lets a secret split across pieces through whole: neither
//! half matches anything, and whoever concatenates the pieces gets the secret back. A
//! [`StreamRedactor`] keeps the text of the stream and lets out only what no later piece can
//! turn into (part of) a secret:
//!
//! - the last [`HOLD`] bytes are held back, so a secret shorter than that has arrived whole
//!   before any of it leaves — unless the text in view is *quiet*: no rule's keyword occurs
//!   in it, no secret was found in it, no registered value has whitespace inside and it does
//!   not end in a run of hex digits ([`Redactor::may_begin_secret`]). Every pattern's match
//!   holds one of its keywords at or after its start or is a single word, and the known
//!   values' forms are single words, so in quiet text a secret can only be starting in the
//!   last word: the answer streams a word behind the model instead of 192 bytes behind;
//! - so is the trailing word (the run of non-space characters at the end, up to
//!   [`MAX_WORD_HOLD`] bytes): tokens, keys and JWTs are single words however long;
//! - the cut never falls inside a secret found so far (a private key block still growing
//!   is held from its first line);
//! - [`CONTEXT`] bytes of what was already let out stay in view, so a value whose keyword
//!   (`password=`, `Authorization: Bearer`) went out earlier is still recognised.
//!
//! [`StreamRedactor::finish`] lets out the rest, redacted, when the stream ends. The pieces
//! let out, concatenated, are the whole text redacted.

use std::ops::Range;
use std::sync::Arc;

use super::{REDACTED, Redactor};

/// Bytes at the end of the stream that are never let out before it ends: the least for
/// which every credential format's sample, streamed a character at a time, comes out
/// exactly as the whole text redacted (a unit test holds this).
pub const HOLD: usize = 192;
/// Bytes already let out that stay in view as context for what follows.
pub const CONTEXT: usize = 256;
/// Longest trailing word held back whole; a longer run of non-space text is let out
/// [`HOLD`] bytes behind like any other text.
pub const MAX_WORD_HOLD: usize = 16 * 1024;

/// See the module docs.
#[derive(Debug)]
pub struct StreamRedactor {
    redactor: Arc<Redactor>,
    /// Bytes held back at the end ([`HOLD`]; smaller in tests that measure what is needed).
    hold: usize,
    /// Context (already let out) followed by the text not let out yet.
    text: String,
    /// Bytes of `text` already let out.
    emitted: usize,
}

impl StreamRedactor {
    /// An empty stream redacted with `redactor`.
    pub fn new(redactor: Arc<Redactor>) -> Self {
        Self::with_hold(redactor, HOLD)
    }

    /// An empty stream that holds back `hold` bytes instead of [`HOLD`].
    pub(super) fn with_hold(redactor: Arc<Redactor>, hold: usize) -> Self {
        StreamRedactor {
            redactor,
            hold,
            text: String::new(),
            emitted: 0,
        }
    }

    /// Takes the next piece; returns the redacted text that may go out now (often empty).
    pub fn push(&mut self, piece: &str) -> String {
        if piece.is_empty() {
            return String::new();
        }
        self.text.push_str(piece);
        let spans = self.redactor.secret_spans(&self.text);
        let cut = self.safe_cut(&spans);
        self.emit_to(cut, &spans)
    }

    /// The stream ended: everything not let out yet, redacted. The redactor is then empty,
    /// ready for the next stream.
    pub fn finish(&mut self) -> String {
        let spans = self.redactor.secret_spans(&self.text);
        let out = self.emit_to(self.text.len(), &spans);
        self.reset();
        out
    }

    /// Forgets the stream (its text is being discarded, e.g. a retried model call).
    pub fn reset(&mut self) {
        self.text.clear();
        self.emitted = 0;
    }

    /// Where the text that may go out ends.
    fn safe_cut(&self, spans: &[Range<usize>]) -> usize {
        let len = self.text.len();
        let word_start = self
            .text
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(at, c)| at + c.len_utf8());
        let word_held = len - word_start <= MAX_WORD_HOLD;
        // Quiet text (nothing in view a secret could start with) goes out but its last word.
        let quiet = word_held && spans.is_empty() && !self.redactor.may_begin_secret(&self.text);
        let mut cut = match quiet {
            true => len,
            false => crate::text::floor_char_boundary(&self.text, len.saturating_sub(self.hold)),
        };
        if word_held {
            cut = cut.min(word_start);
        }
        // Spans are merged, so at most one contains the cut, and none ends past its start.
        if let Some(span) = spans.iter().find(|s| s.start < cut && s.end > cut) {
            cut = span.start;
        }
        cut.max(self.emitted)
    }

    /// Lets out `text[emitted..cut]` with its secrets replaced, then drops the context that
    /// is no longer needed.
    fn emit_to(&mut self, cut: usize, spans: &[Range<usize>]) -> String {
        let mut out = String::new();
        let mut at = self.emitted;
        for span in spans {
            let (start, end) = (span.start.max(at), span.end.min(cut));
            if start >= end {
                continue;
            }
            // A secret whose start went out already (it became one only with what
            // followed) is cut short: the rest of it is still replaced.
            out.push_str(&self.text[at..start]);
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(&self.text[at..cut]);
        self.emitted = cut;
        if self.emitted > CONTEXT {
            let drop = crate::text::floor_char_boundary(&self.text, self.emitted - CONTEXT);
            self.text.drain(..drop);
            self.emitted -= drop;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const API_KEY: &str = "odek-test-key-0123456789abcdefXYZ";
    const GITHUB: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
    const AWS_ID: &str = "AKIA2OGYBAH6RK3LQXPZ";

    fn redactor() -> Arc<Redactor> {
        let mut r = Redactor::new();
        r.add_secret(API_KEY);
        Arc::new(r)
    }

    /// Streams `pieces` and returns what went out, piece by piece, then at the end.
    fn stream(pieces: &[&str]) -> (Vec<String>, String) {
        let mut s = StreamRedactor::new(redactor());
        let out: Vec<String> = pieces.iter().map(|p| s.push(p)).collect();
        (out, s.finish())
    }

    fn whole(pieces: &[&str]) -> String {
        let (out, rest) = stream(pieces);
        out.concat() + &rest
    }

    #[test]
    fn a_secret_split_across_pieces_never_goes_out() {
        for secret in [API_KEY, GITHUB, AWS_ID] {
            let text = format!("Here it is: {secret} — keep it safe.");
            for n in [2, 3, 5, 7] {
                let chars: Vec<char> = text.chars().collect();
                let owned: Vec<String> = chars.chunks(n).map(|c| c.iter().collect()).collect();
                let pieces: Vec<&str> = owned.iter().map(String::as_str).collect();
                let out = whole(&pieces);
                assert!(!out.contains(secret), "{secret} in {out:?}");
                assert_eq!(out, redactor().redact(&text), "pieces of {n}");
            }
        }
    }

    #[test]
    fn text_goes_out_held_back_at_most_by_the_hold_and_the_last_word() {
        let sentence = "the quick brown fox jumps over the lazy dog ";
        let text = sentence.repeat(20);
        let mut s = StreamRedactor::new(redactor());
        let mut out = String::new();
        for piece in text.as_bytes().chunks(5) {
            out.push_str(&s.push(std::str::from_utf8(piece).expect("ascii")));
        }
        assert!(
            out.len() + HOLD + 8 >= text.len(),
            "{} of {}",
            out.len(),
            text.len()
        );
        assert!(text.starts_with(&out));
        out.push_str(&s.finish());
        assert_eq!(out, text);
    }

    #[test]
    fn quiet_text_goes_out_a_word_behind() {
        let mut s = StreamRedactor::new(redactor());
        assert_eq!(s.push("Reading the "), "Reading the ");
        assert_eq!(s.push("file now"), "file ");
        assert_eq!(s.push(", then"), "now, ");
        assert_eq!(s.push(" the tests."), "then the ");
        // A keyword in view: the hold is back.
        assert_eq!(s.push(" Your token is on the way. "), "");
        assert_eq!(s.finish(), "tests. Your token is on the way. ");
    }

    #[test]
    fn secrets_that_span_words_are_held_from_their_first_word_in_quiet_text() {
        let mut r = Redactor::new();
        r.add_secret(API_KEY);
        r.add_secret("correct horse battery staple");
        // A value whose hex, written out, fits in the hold (a longer one's start goes out
        // before it can be told from other hex, as without quiet text).
        r.add_secret("s3cr3t-v4lue-123");
        let r = Arc::new(r);
        let hex: Vec<String> = "s3cr3t-v4lue-123"
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        // kubectl's order: the data before `kind: Secret`, which makes it secret.
        let yaml = "apiVersion: v1\ndata:\n  tls.crt: TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0\n  config: dmFsdWU6IHRoZSB3aG9sZSB0aGluZw==\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\n";
        let json = r#"{"apiVersion": "v1", "data": {"tls.crt": "TFMwdExTMUNSVWRKVGlCRFJWSlVTVVpKUTBGVVJTMHRMUzB0"}, "kind": "Secret"}"#;
        let patterns_only = Arc::new(Redactor::new());
        for (r, text) in [
            (
                &r,
                "The words are correct horse battery staple, all four.".to_string(),
            ),
            (&r, format!("Its bytes: {} — done.", hex.join(" "))),
            (&r, format!("In C: {{0x{}}} done.", hex.join(", 0x"))),
            (&patterns_only, yaml.to_string()),
            (&patterns_only, json.to_string()),
        ] {
            let whole = r.redact(&text).into_owned();
            assert_ne!(whole, text, "nothing to redact");
            for n in [1, 2, 5] {
                let mut s = StreamRedactor::new(r.clone());
                let chars: Vec<char> = text.chars().collect();
                let mut out = String::new();
                for piece in chars.chunks(n) {
                    out.push_str(&s.push(&piece.iter().collect::<String>()));
                }
                out.push_str(&s.finish());
                assert_eq!(out, whole, "pieces of {n}");
            }
        }
    }

    #[test]
    fn a_value_after_its_keyword_is_redacted_though_the_keyword_went_out() {
        let filler = "x ".repeat(HOLD);
        let out = whole(&[&filler, "password=", "hunter2hunter", " done"]);
        assert!(!out.contains("hunter2hunter"), "{out}");
        assert!(out.ends_with("password=[REDACTED] done"), "{out}");
    }

    #[test]
    fn a_growing_private_key_block_is_held_from_its_first_line() {
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n".repeat(40);
        let text =
            format!("key:\n-----BEGIN PRIVATE KEY-----\n{body}-----END PRIVATE KEY-----\nbye");
        let mut s = StreamRedactor::new(redactor());
        let mut out = String::new();
        for piece in text.as_bytes().chunks(11) {
            out.push_str(&s.push(std::str::from_utf8(piece).expect("ascii")));
            assert!(!out.contains("MIIEvQ"), "key material went out: {out}");
        }
        out.push_str(&s.finish());
        assert!(!out.contains("MIIEvQ"), "{out}");
        assert!(out.starts_with("key:\n") && out.ends_with("bye"), "{out}");
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries_and_reset_forgets() {
        let text = "é🙂ü ".repeat(200);
        let mut s = StreamRedactor::new(redactor());
        let mut out = String::new();
        for c in text.chars() {
            out.push_str(&s.push(&c.to_string()));
        }
        out.push_str(&s.finish());
        assert_eq!(out, text);
        assert_eq!(s.push("held"), "");
        s.reset();
        assert_eq!(s.finish(), "");
    }
}
